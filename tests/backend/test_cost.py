"""The pricing table: prefix matching, cache discounts, vendor-reported cost, free local models."""

from __future__ import annotations

import pytest

from ollie.agent.cost import compute_cost, price_for
from ollie.backend.types import Usage

MILLION = 1_000_000


@pytest.mark.parametrize(("model", "input_price", "output_price"), [
    ("claude-sonnet-4-5-20250929", 3.0, 15.0),
    ("CLAUDE-OPUS-4-1", 15.0, 75.0),
    ("claude-opus-4-5", 5.0, 25.0),       # longer prefix beats claude-opus-4
    ("claude-3-5-haiku-latest", 0.8, 4.0),
    ("gpt-4o-mini-2024-07-18", 0.15, 0.6),  # beats gpt-4o and gpt-4
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4-0613", 30.0, 60.0),
    ("o3-mini", 1.1, 4.4),
    ("o3", 2.0, 8.0),
    ("gemini-2.5-flash-lite", 0.1, 0.4),
    ("anthropic/claude-sonnet-4.5", 3.0, 15.0),  # OpenRouter's vendor/ route prefix
    ("google/gemini-2.5-pro", 1.25, 10.0),
])
def test_prefix_match(model, input_price, output_price):
    usage = Usage(input_tokens=MILLION, output_tokens=MILLION)
    assert compute_cost(model, usage) == pytest.approx(input_price + output_price)


def test_cached_input_discount_is_ten_percent_for_anthropic_and_half_for_others():
    cached = Usage(cached_input_tokens=MILLION)
    assert compute_cost("claude-sonnet-4", cached) == pytest.approx(0.30)
    assert compute_cost("gpt-4.1", cached) == pytest.approx(1.00)
    assert compute_cost("gemini-2.5-pro", cached) == pytest.approx(0.625)


def test_cache_creation_costs_a_quarter_more():
    assert compute_cost("claude-sonnet-4", Usage(cache_creation_tokens=MILLION)) == pytest.approx(3.75)


def test_vendor_reported_cost_wins_even_when_zero():
    assert compute_cost("gpt-4o", Usage(input_tokens=MILLION, cost=0.0)) == 0.0
    assert compute_cost("llama3.2", Usage(input_tokens=10, cost=0.5)) == 0.5


@pytest.mark.parametrize("model", ["llama3.2:latest", "qwen3", "scripted-model", "gpt-oss:20b", ""])
def test_unknown_and_local_models_are_free(model):
    assert price_for(model) is None
    assert compute_cost(model, Usage(input_tokens=MILLION, output_tokens=MILLION)) == 0.0
