"""An ACP prompt (text, resource links, embedded resources, images) as what the engine runs, editor context marked."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from ollie.agent.editorcontext import context_block, display_path, is_command
from ollie.backend import images
from ollie.backend.types import Image
from ollie_acp.errors import invalid_params

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)


def _language(uri: str) -> str:
    suffix = Path(urlparse(uri).path).suffix.lstrip(".")
    return suffix if suffix.isidentifier() else ""


# A line range in a file URI's fragment, 1-based and inclusive: Zed's selection and symbol mentions (`#L10:20`),
# GitHub's form (`#L10-L20`), one line (`#L10`). A line number is 9 digits at most (more: no range, not a failed prompt).
_LINES = re.compile(r"L(\d{1,9})(?:[:-]L?(\d{1,9}))?")


def _mention(uri: str, cwd: Path) -> tuple[str, list[str]]:
    """A mention's path as the prompt names it (`app.py:10-20` with a range: the label chat lists show) and the
    notes of its block (the range's `Location:`, as the daemon writes a selection's)."""
    path = display_path(uri, cwd)
    if not (lines := _LINES.fullmatch(urlparse(uri).fragment)):
        return path, []
    first, last = int(lines[1]), int(lines[2] or lines[1])
    span = f"{first}" if last <= first else f"{first}-{last}"
    return f"{path}:{span}", [f"Location: {'line' if last <= first else 'lines'} {span}"]


def prompt_text(blocks: list[PromptBlock], *, cwd: Path) -> str:
    """The prompt: editor-context blocks for the attached files, then the user's text with each mention as
    `@path` where it was typed (a command stays bare); -32602 naming an audio block (images travel beside the text:
    `prompt_images`)."""
    words: list[tuple[bool, str]] = []  # (a mention?, text), in the order sent
    contexts: list[str] = []
    for index, block in enumerate(blocks):
        if isinstance(block, TextContentBlock):
            words.append((False, block.text))
        elif isinstance(block, ResourceContentBlock | EmbeddedResourceContentBlock):
            uri = block.uri if isinstance(block, ResourceContentBlock) else block.resource.uri
            name, notes = _mention(uri, cwd)
            words.append((True, f"@{name}"))
            header = f"File: {display_path(uri, cwd)}"
            if isinstance(block, ResourceContentBlock):
                header += f" ({block.description})" if block.description else ""
                contexts.append(context_block(header + " (linked: read it if you need it)", notes=notes))
            elif isinstance(resource := block.resource, TextResourceContents):
                contexts.append(context_block(header, notes=notes, caption="Selected text:" if notes else
                                              "Attached text:", body=resource.text, fence=_language(uri)))
            else:
                contexts.append(context_block(header + (" (an image: sent with the prompt)" if _is_image(resource)
                                                        else " (binary, not shown)"), notes=notes))
        elif isinstance(block, AudioContentBlock):  # a turn without what the user said: asked for nothing
            raise RequestError.invalid_params(
                {"prompt": f"prompt[{index}] is audio: ollie takes text, files and images (promptCapabilities)"})
    # Zed sends "explain ", the file, " and fix it": joined with newlines and without the file, the sentence lost
    # what it named. Text blocks side by side are lines, as before.
    text = ""
    for (mention, piece), before in zip(words, [None, *words], strict=False):
        if text and before is not None and not mention and not before[0]:
            text += "\n"
        elif text and not text[-1].isspace() and not piece[:1].isspace():
            text += " "
        text += piece
    text = text.strip()
    # A command line (`/i look at @app.py too`) takes no blocks: its mentions stay as typed.
    return text if not contexts or is_command(text) else "\n\n".join([*contexts, text])


def _is_image(resource: object) -> bool:
    return isinstance(resource, BlobResourceContents) and (resource.mime_type or "").startswith("image/")


def image_blocks(blocks: list[PromptBlock]) -> list[ImageContentBlock | EmbeddedResourceContentBlock]:
    """The prompt's `image` blocks and embedded image files, unchecked."""
    return [b for b in blocks if isinstance(b, ImageContentBlock)
            or isinstance(b, EmbeddedResourceContentBlock) and _is_image(b.resource)]


def image_bytes(blocks: list[ImageContentBlock | EmbeddedResourceContentBlock]) -> int:
    """What `image_blocks`' images come to decoded, counted from their base64 before any is decoded (one past the cap
    at the cap: its decoding refuses it, naming it)."""
    return sum(min(len(b.data if isinstance(b, ImageContentBlock) else getattr(b.resource, "blob", "")) * 3 // 4,
                   images.max_image_bytes()) for b in blocks)


def prompt_images(blocks: list[PromptBlock]) -> list[Image]:
    """The prompt's `image` blocks and embedded image files, checked (format by content, size, count); -32602
    naming the block if not."""
    found: list[Image] = []
    with invalid_params("prompt", images.ImageError):
        images.checked(image_blocks(blocks))
        for index, block in enumerate(blocks):
            if isinstance(block, ImageContentBlock):
                found.append(images.from_base64(block.data, mime=block.mime_type, name=f"prompt[{index}]"))
            elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(block.resource, BlobResourceContents) \
                    and _is_image(block.resource):
                found.append(images.from_base64(block.resource.blob, mime=block.resource.mime_type or "",
                                                name=f"prompt[{index}].resource"))
        return images.checked(found)
