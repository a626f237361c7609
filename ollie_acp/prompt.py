"""An ACP prompt (text, resource links, embedded resources, images) as what the engine runs, editor context marked."""

from __future__ import annotations

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

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)


def _language(uri: str) -> str:
    suffix = Path(urlparse(uri).path).suffix.lstrip(".")
    return suffix if suffix.isidentifier() else ""


def prompt_text(blocks: list[PromptBlock], *, cwd: Path) -> str:
    """The prompt: editor-context blocks for the attached files, then the user's text (a command stays bare);
    -32602 naming an audio block (images travel beside the text: `prompt_images`)."""
    texts: list[str] = []
    contexts: list[str] = []
    for index, block in enumerate(blocks):
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            header = f"File: {display_path(block.uri, cwd)}"
            if block.description:
                header += f" ({block.description})"
            contexts.append(context_block(header + " (linked: read it if you need it)"))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            header = f"File: {display_path(resource.uri, cwd)}"
            if isinstance(resource, TextResourceContents):
                contexts.append(context_block(header, caption="Attached text:", body=resource.text,
                                              fence=_language(resource.uri)))
            elif _is_image(resource):
                contexts.append(context_block(header + " (an image: sent with the prompt)"))
            else:
                contexts.append(context_block(header + " (binary, not shown)"))
        elif isinstance(block, AudioContentBlock):  # a turn without what the user said: asked for nothing
            raise RequestError.invalid_params(
                {"prompt": f"prompt[{index}] is audio: ollie takes text, files and images (promptCapabilities)"})
    text = "\n".join(texts).strip()
    if not contexts or is_command(text):
        return text
    return "\n\n".join([*contexts, text]) if text else "\n\n".join(contexts)


def _is_image(resource: object) -> bool:
    return isinstance(resource, BlobResourceContents) and (resource.mime_type or "").startswith("image/")


def image_blocks(blocks: list[PromptBlock]) -> list[ImageContentBlock | EmbeddedResourceContentBlock]:
    """The prompt's `image` blocks and embedded image files, unchecked."""
    return [b for b in blocks if isinstance(b, ImageContentBlock)
            or isinstance(b, EmbeddedResourceContentBlock) and _is_image(b.resource)]


def prompt_images(blocks: list[PromptBlock]) -> list[Image]:
    """The prompt's `image` blocks and embedded image files, checked (format by content, size, count); -32602
    naming the block if not."""
    found: list[Image] = []
    try:
        images.checked(image_blocks(blocks))
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
