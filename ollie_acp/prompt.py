"""An ACP prompt (text, resource links, embedded resources, images) as what the engine runs, editor context marked."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

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

from ollie.backend import images
from ollie.backend.types import Image

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)
# The longest attached text copied into a prompt (as the daemon's editor context); beyond it the text is cut.
MAX_CONTEXT_CHARS = 20_000


def display_path(uri: str, cwd: Path) -> str:
    """A file URI as a path relative to `cwd` when inside it, else absolute; other URIs unchanged."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = unquote(parsed.path)
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else rel


def _clip(text: str) -> str:
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + f"\n[... cut: {len(text) - MAX_CONTEXT_CHARS} more characters]"


def _context_block(header: str, body: str | None, language: str = "") -> str:
    # The same `<editor-context>` block the daemon puts before a prompt (ollie_lsp.editor), so the
    # agent prompts that explain it apply to both.
    lines = ["<editor-context>", header]
    if body is not None:
        lines += ["Attached text:", f"```{language}", _clip(body), "```"]
    lines.append("</editor-context>")
    return "\n".join(lines)


def _language(uri: str) -> str:
    suffix = Path(urlparse(uri).path).suffix.lstrip(".")
    return suffix if suffix.isidentifier() else ""


def prompt_text(blocks: list[PromptBlock], *, cwd: Path) -> str:
    """The prompt: editor-context blocks for the attached files, then the user's text (a command stays bare)."""
    texts: list[str] = []
    contexts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            header = f"File: {display_path(block.uri, cwd)}"
            if block.description:
                header += f" ({block.description})"
            contexts.append(_context_block(header + " (linked: read it if you need it)", None))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            header = f"File: {display_path(resource.uri, cwd)}"
            if isinstance(resource, TextResourceContents):
                contexts.append(_context_block(header, resource.text, _language(resource.uri)))
            elif _is_image(resource):
                contexts.append(_context_block(header + " (an image: sent with the prompt)", None))
            else:
                contexts.append(_context_block(header + " (binary, not shown)", None))
        elif not isinstance(block, ImageContentBlock):  # images travel beside the text: prompt_images
            contexts.append(f"[a {block.type} attachment was left out: ollie takes text and images]")
    text = "\n".join(texts).strip()
    if not contexts or text.startswith(("/", "!")):
        return text
    return "\n\n".join([*contexts, text]) if text else "\n\n".join(contexts)


def _is_image(resource: object) -> bool:
    return isinstance(resource, BlobResourceContents) and (resource.mime_type or "").startswith("image/")


def prompt_images(blocks: list[PromptBlock]) -> list[Image]:
    """The prompt's `image` blocks and embedded image files, checked (format by content, size, count); -32602
    naming the block if not."""
    found: list[Image] = []
    try:
        images.checked([b for b in blocks if isinstance(b, ImageContentBlock | EmbeddedResourceContentBlock)
                        and (isinstance(b, ImageContentBlock) or _is_image(b.resource))])
        for index, block in enumerate(blocks):
            if isinstance(block, ImageContentBlock):
                found.append(images.from_base64(block.data, mime=block.mime_type, name=f"prompt[{index}]"))
            elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(block.resource, BlobResourceContents) \
                    and _is_image(block.resource):
                found.append(images.from_base64(block.resource.blob, mime=block.resource.mime_type or "",
                                                name=f"prompt[{index}].resource"))
        return images.checked(found)
    except images.ImageError as exc:
        raise RequestError.invalid_params({"prompt": str(exc)}) from None
