"""A signature image for tests and demos: a small PNG of a scribble, made without Pillow."""

from __future__ import annotations

import math
import struct
import zlib

__all__ = ["signature_png"]


def signature_png(width: int = 180, height: int = 48, *, padding: int = 0) -> bytes:
    """Return a valid grey-scale PNG of a scribble, to sign with in tests and demos.

    Args:
        width: Pixels across.
        height: Pixels down.
        padding: Bytes of an ancillary ``tEXt`` chunk, to make the file larger (a size
            limit's edge) without changing the picture.
    """
    rows = []
    for y in range(height):
        row = bytearray(b"\xff" * width)
        for x in range(min(8, width), max(0, width - 8)):
            wave = height / 2 + math.sin(x / 7) * height / 4 + math.sin(x / 23) * height / 8
            if abs(y - wave) < 1.5:
                row[x] = 0
        rows.append(b"\x00" + bytes(row))  # filter type 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grey
    extra = chunk(b"tEXt", b"Comment\x00" + b"x" * padding) if padding else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )
