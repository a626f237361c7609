"""The terminal's `@picture.png`: image files named in a prompt go with it to the model."""

from __future__ import annotations

import re
from pathlib import Path

from ollie.backend import images
from ollie.backend.types import Image

# `@` at a word's start, then a path ending in an image suffix (quotes for one with spaces: @"my shot.png"),
# perhaps followed by punctuation (`look at @a.png, then`).
_MENTION = re.compile(r'(?<!\S)@(?:"([^"]+\.(?:png|jpe?g|gif|webp))"|(\S+?\.(?:png|jpe?g|gif|webp)))'
                      r'(?=[,.;:!?)]*(?:\s|$))', re.IGNORECASE)


async def attached_images(prompt: str, cwd: Path) -> list[Image]:
    """The images a prompt names with `@path` (beneath `cwd`, the session's real one, through the chokepoint);
    ImageError if one is bad."""
    if prompt.startswith(("/", "!")):
        return []  # commands and shell lines take no images
    found = [await images.read(cwd, quoted or bare) for quoted, bare in _MENTION.findall(prompt)]
    return images.checked(found)
