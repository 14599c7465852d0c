"""A minimal PNG reader for the screenshot test (8-bit RGB / RGBA, not interlaced: what
Chromium writes). Pure Python, no imaging library needed."""

from __future__ import annotations

import struct
import zlib


def read_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, rows of raw pixel bytes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6), (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 0xFF
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def count_near(rows: list[bytes], channels: int, rgb: tuple[int, int, int], tolerance: int = 40) -> int:
    """Pixels whose colour is within `tolerance` (per channel) of `rgb`."""
    r0, g0, b0 = rgb
    count = 0
    for row in rows:
        for i in range(0, len(row), channels):
            if abs(row[i] - r0) <= tolerance and abs(row[i + 1] - g0) <= tolerance and abs(row[i + 2] - b0) <= tolerance:
                count += 1
    return count
