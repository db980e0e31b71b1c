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
