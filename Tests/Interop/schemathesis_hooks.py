"""Schemathesis hooks for the contract test (`test_openapi.py` loads them via SCHEMATHESIS_HOOKS).

Joining a room also takes the offer as a raw `application/sdp` body (the WHIP form), a media type
schemathesis has no serializer for: without one it would never send that form. SDP is text, so it
goes on the wire the way `text/plain` does (the string, UTF-8 encoded). So does the
`application/trickle-ice-sdpfrag` body of a WHIP ICE restart.
"""

import schemathesis

schemathesis.serializer.alias("application/sdp", "text/plain")
# The WHIP ICE-restart PATCH (RFC 9725 §4.3) carries an SDP fragment, text as well.
schemathesis.serializer.alias("application/trickle-ice-sdpfrag", "text/plain")

# CPython before 3.11.8 / 3.12.1 (gh-106905): the AST constructor's recursion-depth bookkeeping is
# interpreter-wide, so `ast.parse` in two threads at once can fail with "SystemError: AST
# constructor recursion depth mismatch". Hypothesis parses a filter lambda's source to name it, and
# schemathesis's two workers can do that at the same moment: runs on Python 3.11.7 lost the whole
# contract test to it about one time in four (2026-11-26; a lock around Hypothesis's lambda
# description alone was not enough). One lock around every `ast.parse` of this process.
import ast  # noqa: E402
import threading  # noqa: E402

_parse_lock = threading.RLock()
_parse = ast.parse


def _parse_one_at_a_time(*args, **kwargs):
    with _parse_lock:
        return _parse(*args, **kwargs)


ast.parse = _parse_one_at_a_time
