"""The Backend interface every provider implements."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool

if TYPE_CHECKING:
    from ollie.backend.settings import BackendSpec


@runtime_checkable
class Backend(Protocol):
    """An LLM provider; `stream` raises the typed errors of `ollie.backend.errors`."""

    name: str  # whoever serves it: the spec's name, or for an OpenAI-compatible URL its provider (groq, local...)
    said: str  # the name its errors give (settings.said_name): a local server's host and port, as in its URL
    spec: BackendSpec  # how it is configured (its variables, its wire format)
    base_url: str  # where its requests go, without a trailing slash

    @property
    def model(self) -> str:
        """The model requests go to."""
        ...

    def set_model(self, model: str) -> None:
        """Switch the model for later requests."""
        ...

    def stream(
        self, messages: list[Message], tools: list[Tool], params: GenerationParams
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream one completion."""
        ...

    async def context_length(self) -> int:
        """The model's context window in tokens (cached after the first look-up)."""
        ...

    async def takes_images(self) -> bool | None:
        """Whether the model accepts images in prompts (None: the server does not say)."""
        ...

    async def list_models(self) -> list[str]:
        """Model names the backend offers."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...
