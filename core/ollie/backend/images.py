"""Images in prompts: what counts as one (its magic bytes, not its name), the caps, and where one is read from.

Every front end makes its `Image`s here, so one set of rules holds everywhere; the caps (5 MiB by default:
Anthropic's own limit) also keep a session file from growing by more than a few megabytes a prompt.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ollie import beneath
from ollie.backend.types import IMAGE_TYPES, Image
from ollie.errors import OllieError

CAP_ENV = "OLLIE_MAX_IMAGE_BYTES"
DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGES = 8
# What a data: URL or base64 text may be at most before decoding (4 characters for 3 bytes, and some slack).
_BASE64_SLACK = 16
# The most image data (base64 characters, about 1 MiB of bytes) a client is sent to draw in one tool event, one page
# of the history or one ACP step; the images past it are named with their sizes only: 8 of 1 MiB made a 10.7 MB
# notification, 68 ms of JSON on the event loop.
SHOWN_IMAGE_CHARS = 1_400_000
T = TypeVar("T")


class ImageError(OllieError):
    """Not an image ollie sends (unknown format, too large, too many, unreadable): the message says which."""


def max_image_bytes() -> int:
    """The cap on one image's size in bytes: OLLIE_MAX_IMAGE_BYTES, else 5 MiB."""
    raw = os.environ.get(CAP_ENV, "").strip()
    try:
        value = int(raw) if raw else DEFAULT_MAX_IMAGE_BYTES
    except ValueError:
        raise ImageError(f"{CAP_ENV}={raw!r} is not a number of bytes") from None
    return value if value > 0 else DEFAULT_MAX_IMAGE_BYTES


def sniff(raw: bytes) -> str:
    """The media type of `raw` from its first bytes; '' when it is none of the four formats models take."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return ""


def from_bytes(raw: bytes, *, name: str = "the image") -> Image:
    """An Image of `raw`; ImageError naming `name` when it is too large or not PNG/JPEG/GIF/WebP."""
    limit = max_image_bytes()
    if len(raw) > limit:
        raise ImageError(f"{name} is {len(raw):,} bytes; images are limited to {limit:,} ({CAP_ENV})")
    mime = sniff(raw)
    if not mime:
        raise ImageError(f"{name} is not a PNG, JPEG, GIF or WebP image (its content says so, whatever its name)")
    return Image(mime, base64.b64encode(raw).decode("ascii"))


def from_base64(data: str, *, mime: str = "", name: str = "the image") -> Image:
    """An Image of base64 `data` (a `data:` URL too); the declared `mime` must match what the bytes are."""
    if data.startswith("data:"):
        header, _, data = data.partition(",")
        mime = mime or header[5:].split(";")[0]
    limit = max_image_bytes()
    if len(data) > (limit + 2) // 3 * 4 + _BASE64_SLACK:  # refused before decoding megabytes for nothing
        raise ImageError(f"{name} is larger than {limit:,} bytes, the limit on images ({CAP_ENV})")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"{name} is not valid base64") from None
    image = from_bytes(raw, name=name)
    if mime and mime.lower() != image.mime:
        raise ImageError(f"{name} says it is {mime} but its bytes are {image.mime}")
    return image


def checked(images: list[T]) -> list[T]:
    """`images` (or what they are made from, counted before decoding) when at most MAX_IMAGES; else ImageError."""
    if len(images) > MAX_IMAGES:
        raise ImageError(f"{len(images)} images in one prompt; the limit is {MAX_IMAGES}")
    return images


async def read(root: Path | str, path: Path | str, *, name: str = "") -> Image:
    """The image at `path` beneath `root`, read through the chokepoint (no symlinks, FIFOs or devices; capped); `name`:
    what the user called it, when `root` is its own directory rather than the workspace."""
    shown = name or str(path)
    try:
        raw = await beneath.read_bytes(root, path, max_image_bytes())
    except beneath.TooLarge:
        raise ImageError(f"{shown} is larger than {max_image_bytes():,} bytes, the limit on images ({CAP_ENV})") from None
    except beneath.OutsideRoot:
        if name:
            raise ImageError(f"{shown} is a symlink: not read (name the file it leads to)") from None
        raise ImageError(f"{shown} is not beneath the workspace (or goes through a symlink): not read") from None
    except beneath.NotRegular:
        raise ImageError(f"{shown} is not a regular file (a FIFO, device or socket): not read") from None
    except FileNotFoundError:
        raise ImageError(f"{shown}: no such file") from None
    except OSError as exc:
        raise ImageError(f"{shown}: {exc.strerror or exc}") from None
    return await asyncio.to_thread(from_bytes, raw, name=shown)  # megabytes of base64: not on the event loop


def placeholder(images: Sequence[Image]) -> str:
    """What stands in the text for images a model was not sent: each named, so a resumed session shows what they were."""
    named = ", ".join(f"{image.mime}, {image.size:,} bytes" for image in images)
    return f"[{len(images)} image{'s' if len(images) != 1 else ''} left out: the model does not take images ({named})]"


_PLACEHOLDER_END = re.compile(r"\n\n\[\d+ images? left out: the model does not take images \(([^\n]*)\)\]\Z")


def left_out(text: str) -> list[dict[str, Any]]:
    """The images a `placeholder` ending `text` names, `{mime, bytes}`: a saved prompt's, as its kept ones are listed."""
    found = _PLACEHOLDER_END.search(text)
    named = re.findall(r"(image/\w+), ([\d,]{1,20}) bytes", found[1]) if found else []
    return [{"mime": mime, "bytes": int(size.replace(",", ""))} for mime, size in named if mime in IMAGE_TYPES]


def shown(images: Iterable[Image], room: int = SHOWN_IMAGE_CHARS) -> tuple[list[dict[str, Any]], int]:
    """Each image as a client is sent it, `{mime, bytes, data?, step?}` (its data while they fit in `room` base64
    characters; the batch's step that returned it), and the room left."""
    out = []
    for image in images:
        fits = len(image.data) <= room
        room -= len(image.data) if fits else 0
        out.append({"mime": image.mime, "bytes": image.size, **({"data": image.data} if fits else {}),
                    **({"step": image.step} if image.step is not None else {})})
    return out, room
