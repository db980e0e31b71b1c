"""What CELT-only mixes cost in speech quality, and what they save in encode time.

Speech from espeak-ng (formant synthesis: real words and prosody, not a recording; several
voices) is coded at 48 kHz mono, 20 ms frames, 32 kbit/s with the settings of the server's mix
encoders (signal voice, in-band FEC on, loss 0), once per mode and complexity:

- voip: OPUS_APPLICATION_VOIP, the server's default (`--opus-mode voip`);
- celt: OPUS_APPLICATION_RESTRICTED_LOWDELAY, CELT only (`--opus-mode celt`).

Quality is wide-band PESQ (ITU-T P.862.2, the `pesq` package) of the decoded speech against the
original, both at 16 kHz after the codec's delay is removed; MOS-LQO 1 (bad) to 4.64. Encode
time is the median wall time of one `opus_encode` through ctypes on this machine (noisy: compare
the modes, not the absolute figures). libopus is Debian's, the one the server links.

    make bench-opus-quality        # or: .venv/bin/python Benchmarks/Quality/opus_modes.py [OUT]
"""
import ctypes
import ctypes.util
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
from pesq import pesq

RATE = 48_000
FRAME = 960
BITRATE = 32_000
SENTENCES = [
    "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well. These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls. The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck. The hogs were fed chopped corn and garbage.",
]
VOICES = ["en", "en+f3", "en-us", "en+m3"]

# opus_defines.h
OPUS_APPLICATION_VOIP = 2048
OPUS_APPLICATION_RESTRICTED_LOWDELAY = 2051
OPUS_SET_BITRATE = 4002
OPUS_SET_COMPLEXITY = 4010
OPUS_SET_INBAND_FEC = 4012
OPUS_SET_PACKET_LOSS_PERC = 4014
OPUS_SET_SIGNAL = 4024
OPUS_GET_LOOKAHEAD = 4027
OPUS_SIGNAL_VOICE = 3001

opus = ctypes.CDLL(ctypes.util.find_library("opus") or "libopus.so.0")
opus.opus_encoder_create.restype = ctypes.c_void_p
opus.opus_encoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
opus.opus_encode.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int16), ctypes.c_int,
                             ctypes.POINTER(ctypes.c_ubyte), ctypes.c_int32]
opus.opus_decoder_create.restype = ctypes.c_void_p
opus.opus_decoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
opus.opus_decode.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_ubyte), ctypes.c_int32,
                             ctypes.POINTER(ctypes.c_int16), ctypes.c_int, ctypes.c_int]
opus.opus_encoder_destroy.argtypes = [ctypes.c_void_p]
opus.opus_decoder_destroy.argtypes = [ctypes.c_void_p]


def ctl(encoder, request, value):
    # opus_encoder_ctl is variadic: the value goes as a C int.
    assert opus.opus_encoder_ctl(ctypes.c_void_p(encoder), ctypes.c_int(request), ctypes.c_int(value)) == 0


def lookahead(encoder):
    value = ctypes.c_int32(0)
    assert opus.opus_encoder_ctl(ctypes.c_void_p(encoder), ctypes.c_int(OPUS_GET_LOOKAHEAD), ctypes.byref(value)) == 0
    return value.value


def speech(folder: Path) -> np.ndarray:
    """All sentences in all voices, resampled to 48 kHz mono 16-bit, with 300 ms gaps."""
    parts = []
    for index, (voice, text) in enumerate((v, s) for v in VOICES for s in SENTENCES):
        raw, resampled = folder / f"s{index}.wav", folder / f"s{index}-48k.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(raw), text], check=True)
        subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(resampled), "norm", "-3"],
                       check=True)
        with wave.open(str(resampled)) as w:
            parts.append(np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16))
        parts.append(np.zeros(RATE * 3 // 10, dtype=np.int16))
    pcm = np.concatenate(parts)
    return pcm[: len(pcm) // FRAME * FRAME]


def code(pcm: np.ndarray, application: int, complexity: int):
    """Encodes and decodes `pcm`; returns the decoded signal aligned to it, the median encode
    time in microseconds and the mean packet size in bytes."""
    error = ctypes.c_int(0)
    encoder = opus.opus_encoder_create(RATE, 1, application, ctypes.byref(error))
    decoder = opus.opus_decoder_create(RATE, 1, ctypes.byref(error))
    for request, value in [(OPUS_SET_BITRATE, BITRATE), (OPUS_SET_COMPLEXITY, complexity), (OPUS_SET_INBAND_FEC, 1),
                           (OPUS_SET_PACKET_LOSS_PERC, 0), (OPUS_SET_SIGNAL, OPUS_SIGNAL_VOICE)]:
        ctl(encoder, request, value)
    delay = lookahead(encoder)
    padded = np.concatenate([pcm, np.zeros(FRAME * 2, dtype=np.int16)])
    packet = (ctypes.c_ubyte * 1500)()
    out = (ctypes.c_int16 * FRAME)()
    decoded, times, sizes = [], [], []
    for start in range(0, len(padded) - FRAME + 1, FRAME):
        frame = np.ascontiguousarray(padded[start:start + FRAME])
        pointer = frame.ctypes.data_as(ctypes.POINTER(ctypes.c_int16))
        began = time.perf_counter_ns()
        length = opus.opus_encode(encoder, pointer, FRAME, packet, 1500)
        times.append((time.perf_counter_ns() - began) / 1000)
        assert length > 0
        sizes.append(length)
        samples = opus.opus_decode(decoder, packet, length, out, FRAME, 0)
        decoded.append(np.frombuffer(out, dtype=np.int16, count=samples).copy())
    opus.opus_encoder_destroy(encoder)
    opus.opus_decoder_destroy(decoder)
    aligned = np.concatenate(decoded)[delay:delay + len(pcm)]
    return aligned, statistics.median(times), statistics.mean(sizes)


def to16k(pcm: np.ndarray, folder: Path, name: str) -> np.ndarray:
    source, target = folder / f"{name}-48k.raw", folder / f"{name}-16k.raw"
    pcm.astype(np.int16).tofile(source)
    subprocess.run(["sox", "-t", "raw", "-r", str(RATE), "-e", "signed", "-b", "16", "-c", "1", str(source),
                    "-t", "raw", "-r", "16000", str(target)], check=True)
    return np.fromfile(target, dtype=np.int16).astype(np.float32)


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench-output/opus-quality")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        original = speech(folder)
        reference = to16k(original, folder, "reference")
        for mode, application in [("voip", OPUS_APPLICATION_VOIP), ("celt", OPUS_APPLICATION_RESTRICTED_LOWDELAY)]:
            for complexity in [0, 5]:
                decoded, micros, size = code(original, application, complexity)
                degraded = to16k(decoded, folder, f"{mode}{complexity}")
                length = min(len(reference), len(degraded))
                score = pesq(16000, reference[:length], degraded[:length], "wb")
                rows.append((mode, complexity, score, micros, size * 8 * 50 / 1000))
    seconds = len(original) / RATE
    lines = [f"Speech: espeak-ng, {len(VOICES)} voices x {len(SENTENCES)} sentence pairs, {seconds:.0f} s; "
             f"48 kHz mono, 20 ms frames, {BITRATE // 1000} kbit/s, FEC on.",
             "", "| mode | complexity | PESQ-WB MOS-LQO | encode median (µs) | bitrate (kbit/s) |", "|---|---|---|---|---|"]
    lines += [f"| {m} | {c} | {s:.2f} | {t:.0f} | {b:.1f} |" for m, c, s, t, b in rows]
    report = "\n".join(lines)
    (out / "opus-modes.md").write_text(report + "\n")
    print(report)


if __name__ == "__main__":
    main()
