"""The terminal's `@picture.png`: image files named in a prompt go with it to the model."""

from __future__ import annotations

import re
from pathlib import Path

from ollie import beneath
from ollie.backend import images
from ollie.backend.types import Image

# `@` at a word's start, then a path ending in an image suffix (quotes for one with spaces: @"my shot.png"),
# perhaps followed by punctuation (`look at @a.png, then`).
_MENTION = re.compile(r'(?<!\S)@(?:"([^"]+\.(?:png|jpe?g|gif|webp))"|(\S+?\.(?:png|jpe?g|gif|webp)))'
                      r'(?=[,.;:!?)]*(?:\s|$))', re.IGNORECASE)


async def attached_images(prompt: str, cwd: Path) -> list[Image]:
    """The images a prompt names with `@path` (beneath `cwd`, the session's real one, through the chokepoint; or
    outside it by an absolute or `~` path); ImageError if one is bad."""
    if prompt.startswith(("/", "!")):
        return []  # commands and shell lines take no images
    return images.checked([await _read(cwd, quoted or bare) for quoted, bare in _MENTION.findall(prompt)])


async def _read(cwd: Path, name: str) -> Image:
    full = Path(name).expanduser()
    if not full.is_absolute() or beneath.inside(cwd, full):
        return await images.read(cwd, name)
    # A screenshot in ~/Pictures: the user named it on their own command line, so it is read as the user, from its
    # own directory, under the same rules (the caps, its content an image, no symlink, FIFO or device).
    return await images.read(full.parent, full.name, name=name)
