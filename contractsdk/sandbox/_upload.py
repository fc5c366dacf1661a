"""Signature uploads: a multipart/form-data body holding one image (endpoints.md #31).

The spec declares ``multipart/form-data`` for ``PATCH /v1/collaborators/{id}/signature``
but no form parameter, so the field name is unknown. The emulator takes the first part
that has a ``filename`` (else the first part that is not ``text/plain``), whatever its
name; the SDK sends it as ``file`` (assumed).

The body was already read whole, bounded by the application's ``client_max_size``, and
is parsed with the standard library's email parser, which is lenient and raises nothing
for malformed input: what it cannot make sense of simply yields no file part.
"""

from __future__ import annotations

import email.parser
import email.policy
from email.message import Message

from ._wire import ApiError

# The largest signature image accepted (assumed; the service documents none).
MAX_SIGNATURE_BYTES = 512 * 1024
MAX_PARTS = 20
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"


def image_kind(data: bytes) -> str | None:
    """Name the image type from its magic bytes.

    Args:
        data: The file's bytes.

    Returns:
        ``"image/png"``, ``"image/jpeg"`` or None for anything else.
    """
    if data.startswith(_PNG):
        return "image/png"
    if data.startswith(_JPEG):
        return "image/jpeg"
    return None


def parse_signature(content_type: str | None, body: bytes) -> bytes:
    """Find the signature image in a multipart/form-data body and check it.

    Args:
        content_type: The request's ``Content-Type`` header.
        body: The whole request body.

    Returns:
        The image bytes (PNG or JPEG).

    Raises:
        ApiError: 415 when the body is not multipart/form-data or the file is not a PNG
            or JPEG image; 400 when it holds no file part or the file is empty; 413 when
            the image is over :data:`MAX_SIGNATURE_BYTES`.
    """
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if mime != "multipart/form-data":
        raise ApiError(
            415,
            f"Content type '{mime[:60]}' not supported; send multipart/form-data with the "
            "signature image as a file part",
        )
    header = (content_type or "").encode("utf-8", "replace")
    message = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(
        b"MIME-Version: 1.0\r\nContent-Type: " + header + b"\r\n\r\n" + body
    )
    if message.get_boundary() is None:
        raise ApiError(400, "multipart/form-data needs a boundary parameter")
    payload = message.get_payload()
    parts = (
        [p for p in payload[:MAX_PARTS] if isinstance(p, Message)]
        if isinstance(payload, list)
        else []
    )
    chosen = next((p for p in parts if p.get_filename() is not None), None)
    if chosen is None:
        chosen = next((p for p in parts if p.get_content_type() != "text/plain"), None)
    if chosen is None:
        raise ApiError(400, "No file part in the multipart body; send the image as a file")
    data = chosen.get_payload(decode=True)
    if not isinstance(data, bytes) or not data:
        raise ApiError(400, "The signature file is empty")
    if len(data) > MAX_SIGNATURE_BYTES:
        raise ApiError(
            413,
            f"The signature image is {len(data)} bytes; at most {MAX_SIGNATURE_BYTES} bytes",
        )
    if image_kind(data) is None:
        raise ApiError(415, "The signature must be a PNG or JPEG image")
    return data
