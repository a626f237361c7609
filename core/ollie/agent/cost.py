"""What a request cost in USD: the vendor's own figure, else the built-in pricing table."""

from __future__ import annotations

import attrs

from ollie.backend.types import Usage


@attrs.frozen(eq=False, repr=False, slots=False)
class Price:
    """USD per million tokens; `cached_ratio` is the cached-input price as a share of `input`."""

    input: float
    output: float
    cached_ratio: float


CACHE_CREATION = 1.25

# (model-name prefix, input, output) in USD per million tokens; Anthropic's cached input costs a tenth, others' half.
PRICES: dict[str, Price] = {
    prefix: Price(i, o, 0.10 if prefix.startswith("claude") else 0.50) for prefix, i, o in (
        ("claude-opus-4-5", 5.0, 25.0),
        ("claude-opus-4", 15.0, 75.0),
        ("claude-sonnet-4", 3.0, 15.0),
        ("claude-haiku-4", 1.0, 5.0),
        ("claude-3-opus", 15.0, 75.0),
        ("claude-3-7-sonnet", 3.0, 15.0),
        ("claude-3-5-sonnet", 3.0, 15.0),
        ("claude-3-5-haiku", 0.8, 4.0),
        ("claude-3-haiku", 0.25, 1.25),
        ("gpt-5-nano", 0.05, 0.40),
        ("gpt-5-mini", 0.25, 2.0),
        ("gpt-5", 1.25, 10.0),
        ("gpt-4.5", 75.0, 150.0),
        ("gpt-4.1-nano", 0.10, 0.40),
        ("gpt-4.1-mini", 0.40, 1.60),
        ("gpt-4.1", 2.0, 8.0),
        ("gpt-4o-mini", 0.15, 0.60),
        ("gpt-4o", 2.50, 10.0),
        ("gpt-4-turbo", 10.0, 30.0),
        ("gpt-4", 30.0, 60.0),
        ("gpt-3.5-turbo", 0.50, 1.50),
        ("o1-pro", 150.0, 600.0),
        ("o1-mini", 1.10, 4.40),
        ("o1", 15.0, 60.0),
        ("o3-pro", 20.0, 80.0),
        ("o3-mini", 1.10, 4.40),
        ("o3", 2.0, 8.0),
        ("o4-mini", 1.10, 4.40),
        ("gemini-2.5-pro", 1.25, 10.0),
        ("gemini-2.5-flash-lite", 0.10, 0.40),
        ("gemini-2.5-flash", 0.30, 2.50),
        ("gemini-2.0-flash-lite", 0.075, 0.30),
        ("gemini-2.0-flash", 0.10, 0.40),
        ("gemini-1.5-pro", 1.25, 5.0),
        ("gemini-1.5-flash", 0.075, 0.30),
    )
}


def price_for(model: str) -> Price | None:
    """The longest table prefix of `model` (case-insensitive; a `vendor/` route prefix is ignored)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    best = max((prefix for prefix in PRICES if name.startswith(prefix)), key=len, default=None)
    return PRICES[best] if best else None


def compute_cost(model: str, usage: Usage) -> float:
    """USD for one request; a vendor-reported `usage.cost` wins, unknown and local models cost 0."""
    if usage.cost is not None:
        return usage.cost
    price = price_for(model)
    if price is None:
        return 0.0
    per_token_in = price.input / 1_000_000
    return (
        usage.input_tokens * per_token_in
        + usage.cached_input_tokens * per_token_in * price.cached_ratio
        + usage.cache_creation_tokens * per_token_in * CACHE_CREATION
        + usage.output_tokens * price.output / 1_000_000
    )
