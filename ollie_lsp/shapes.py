"""A small checker of JSON params: strict types, bounds, aliases, nested shapes; every bad field named by its path.

`ollie_lsp.params` declares the daemon's params with it. No pydantic: it would cost the daemon ~60 ms and
~11 MiB before its first answer. A JSON type must match (`"text": 3` is an error, a bool is not an int),
unknown keys are ignored, and all the problems of one object are reported together, each with its path
(`context[1].uri`, `context.range.start.line`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ollie_lsp.errors import InvalidParams

S = TypeVar("S", bound="Shape")
FieldPath = tuple[str | int, ...]
# A rule takes a JSON value and returns what the field holds, or raises Bad naming what is wrong.
Check = Callable[[object], Any]


class Bad(Exception):
    """What is wrong with one value: (path below that value, reason) pairs."""

    def __init__(self, problems: list[tuple[FieldPath, str]]) -> None:
        super().__init__(problems)
        self.problems = problems

    def under(self, key: str | int) -> list[tuple[FieldPath, str]]:
        """These problems, as problems of the field (or item) `key` of the value that holds this one."""
        return [((key, *path), reason) for path, reason in self.problems]


_JSON_NAMES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
               "NoneType": "null", "list": "an array", "dict": "an object"}


def expected(what: str, value: object) -> Bad:
    """The problem of `value` not being `what` ("a string"), its JSON type named."""
    got = type(value).__name__
    return Bad([((), f"expected {what}, got {_JSON_NAMES.get(got, got)}")])


def string(*, min_length: int = 0, pattern: str | None = None) -> Check:
    """A str, at least `min_length` long, matching `pattern` when given."""
    regex = re.compile(pattern) if pattern else None

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise expected("a string", value)
        if len(value) < min_length:
            raise Bad([((), "must not be empty" if min_length == 1 else f"must be at least {min_length} characters")])
        if regex is not None and not regex.fullmatch(value):
            raise Bad([((), f"must match {pattern}")])
        return value
    return check


def integer(*, ge: int | None = None) -> Check:
    """An int (never a bool, never 1.0), at least `ge` when given."""
    def check(value: object) -> int:
        if type(value) is not int:
            raise expected("an integer", value)
        if ge is not None and value < ge:
            raise Bad([((), f"must be >= {ge}, got {value}")])
        return value
    return check


def number(value: object) -> float:
    """An int or a float (never a bool), as a float."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise expected("a number", value)
    return float(value)


def flag(value: object) -> bool:
    """true or false (never 0/1)."""
    if not isinstance(value, bool):
        raise expected("a boolean", value)
    return value


def mapping(value: object) -> dict[str, Any]:
    """Any JSON object, as a dict (its keys are checked by whoever reads it)."""
    if not isinstance(value, Mapping):
        raise expected("an object", value)
    return dict(value)


def optional(check: Check) -> Check:
    """`check`, or null."""
    return lambda value: None if value is None else check(value)


def array(check: Check) -> Check:
    """A list whose every item passes `check`; bad items are named by index."""
    def check_all(value: object) -> list[Any]:
        if not isinstance(value, list):
            raise expected("an array", value)
        out, problems = [], []
        for index, item in enumerate(value):
            try:
                out.append(check(item))
            except Bad as bad:
                problems += bad.under(index)
        if problems:
            raise Bad(problems)
        return out
    return check_all


def shape(cls: type[S]) -> Callable[[object], S]:
    """A JSON object checked into the shape `cls`."""
    def check(value: object) -> S:
        if not isinstance(value, Mapping):
            raise expected("an object", value)
        return build(cls, value)
    return check


def one_or_many(check: Check) -> Check:
    """One object, or a list of them (items named `[i]`)."""
    many = array(check)

    def check_either(value: object) -> Any:
        if isinstance(value, list):
            return many(value)
        if not isinstance(value, Mapping):
            raise expected("an object or an array of objects", value)
        return check(value)
    return check_either


_REQUIRED: Any = object()


class Rule:
    """One field of a shape: its check, its default (none: required) and its JSON name when not the attribute's."""

    __slots__ = ("check", "default", "alias", "name")

    def __init__(self, check: Check, default: object, alias: str | None) -> None:
        self.check, self.default, self.alias, self.name = check, default, alias, ""


def rule(check: Check, default: object = _REQUIRED, *, alias: str | None = None) -> Any:
    """A field checked by `check`; no `default` means required; `alias` is its JSON name."""
    return Rule(check, default, alias)


class Shape:
    """Base of the params shapes: fields declared with `rule`, inherited, frozen, compared by value.

    Not @dataclass: generating its methods costs ~0.5 ms a class, ~12 ms for these at the daemon's start.
    """

    _rules: tuple[Rule, ...] = ()

    def __init_subclass__(cls) -> None:
        rules = {r.name: r for r in cls._rules}
        for name, value in list(vars(cls).items()):
            if isinstance(value, Rule):
                value.name = name
                rules[name] = value
                delattr(cls, name)  # the instance always holds the value (or the default)
        cls._rules = tuple(rules.values())

    def __init__(self, **values: object) -> None:
        for r in self._rules:
            value = values.pop(r.name, r.default)
            if value is _REQUIRED:
                raise TypeError(f"{type(self).__name__}: {r.name} is required")
            object.__setattr__(self, r.name, value)
        if values:
            raise TypeError(f"{type(self).__name__}: no field {', '.join(values)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]  # equal by value, and a list field is unhashable anyway

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def build(cls: type[S], data: Mapping[str, Any]) -> S:
    """`data` checked into the shape `cls`; Bad with every problem found."""
    values: dict[str, object] = {}
    problems: list[tuple[FieldPath, str]] = []
    for r in cls._rules:
        key = r.alias or r.name
        if key in data or r.name in data:  # the JSON name, or the attribute's (as pydantic's populate_by_name)
            try:
                values[r.name] = r.check(data[key] if key in data else data[r.name])
            except Bad as bad:
                problems += bad.under(key)
        elif r.default is _REQUIRED:
            problems.append(((key,), "required"))
    if problems:
        raise Bad(problems)
    return cls(**values)


def _name(path: FieldPath, prefix: str) -> str:
    """`("context", 1, "uri")` -> `context[1].uri`; the empty path is the params object itself."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return prefix + out if out else "params"


def invalid(bad: Bad, prefix: str = "") -> InvalidParams:
    """-32602 naming each problem's field (`prefix` before each path: `params.` for generation params)."""
    return InvalidParams("; ".join(f"{_name(path, prefix)}: {reason}" for path, reason in bad.problems))
