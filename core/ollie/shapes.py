"""Every shape that crosses a boundary, declared once as an attrs class and checked by one cattrs converter.

The daemon's params and initializationOptions, agent configs, sandbox.yaml, generation parameters and the
executors' arguments are attrs classes. `parse` checks plain data (JSON, or YAML's) into one: types are strict
("3" is not 3, true is not 1), bounds, lengths and patterns come from a field's `Check`, and every problem is
reported at once with its path (`context[1].range.start.line`). JSON keys are the camelCase of the attribute
(`includeArchived`; its snake_case name is accepted too) unless the class says `json_keys = "snake"`; unknown
keys are refused unless it says `unknown_keys = "ignore"`. `json_schema` derives the schema the model sees.
Why attrs and cattrs (loaded by pygls anyway) rather than pydantic: docs/DESIGN-NOTES.md.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import attrs
import cattrs

T = TypeVar("T")
FieldPath = tuple[str | int, ...]


@attrs.frozen(eq=False, repr=False)  # hashed by identity: cattrs keys its hooks by the annotated type
class Check:
    """What one field must be beyond its type (`Annotated[int, Check(ge=0)]`); `parse`/`schema` replace the type's."""

    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    min_length: int = 0
    max_length: int | None = None  # checked before the items are read: a hostile list is refused at its length
    pattern: str | None = None
    doc: str = ""
    parse: Callable[[Any], Any] | None = None
    schema: dict[str, Any] | None = None


class Invalid(Exception):
    """Data that does not fit a shape: a (path, reason) pair for every problem."""

    def __init__(self, problems: Sequence[tuple[FieldPath, str]]) -> None:
        super().__init__(problems)
        self.problems = list(problems)

    def messages(self, top: str = "(top level)") -> list[str]:
        """`path: reason` for each problem (`top` names the value itself)."""
        return [f"{dotted(path) or top}: {reason}" for path, reason in self.problems]

    def __str__(self) -> str:
        return "; ".join(self.messages())


def dotted(path: FieldPath) -> str:
    """`("context", 1, "uri")` -> `context[1].uri`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_JSON_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", type(None): "null",
               list: "an array", dict: "an object"}


def expected(what: str, value: object) -> Invalid:
    """The problem of `value` not being `what` ("a string"), its JSON type named."""
    got = _JSON_NAMES.get(type(value)) or ("an object" if isinstance(value, Mapping) else type(value).__name__)
    return Invalid([((), f"expected {what}, got {got}")])


def json_key(cls: type, name: str) -> str:
    """The JSON key of attribute `name` of shape `cls`."""
    head, *rest = name.split("_")
    return name if getattr(cls, "json_keys", "camel") == "snake" else head + "".join(word.title() for word in rest)


def _strict(kind: type, what: str) -> Callable[[object, Any], Any]:
    kinds = (int, float) if kind is float else (kind,)

    def check(value: object, _: Any) -> Any:
        # bool is an int to Python, never to JSON; an int is a fine float.
        if not isinstance(value, kinds) or (isinstance(value, bool) and kind is not bool):
            raise expected(what, value)
        return float(value) if kind is float else value  # type: ignore[arg-type]
    return check


def _each(pairs: Any, structure: Callable[[Any, Any], tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """`structure` of each (key or index, item); Invalid naming every bad one by its key or index."""
    out, problems = [], []
    for where, item in pairs:
        try:
            out.append(structure(where, item))
        except Exception as exc:  # noqa: BLE001  # a hook's problem, named by where it is
            problems += problems_of(exc, (where,))
    if problems:
        raise Invalid(problems)
    return out


def _list(value: object, kind: Any) -> Any:
    if not isinstance(value, list):
        raise expected("an array", value)
    item = (get_args(kind) or (Any,))[0]
    items = [v for _, v in _each(enumerate(value), lambda i, v: (i, converter.structure(v, item)))]
    return tuple(items) if get_origin(kind) is tuple else items


def _dict(value: object, kind: Any) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise expected("an object", value)
    key, item = get_args(kind) or (str, Any)
    return dict(_each(((str(k), v) for k, v in value.items()),
                      lambda k, v: (converter.structure(k, key), converter.structure(v, item))))


def _literal(value: object, kind: Any) -> Any:
    options = get_args(kind)
    if value not in options or isinstance(value, bool):
        raise Invalid([((), f"must be one of {', '.join(map(repr, options))}")])
    return value


def _annotated(kind: Any) -> Callable[[object, Any], Any]:
    base, *extras = get_args(kind)
    check = next((e for e in extras if isinstance(e, Check)), Check())
    pattern = re.compile(check.pattern) if check.pattern else None

    def structure(raw: object, _: Any) -> Any:
        if check.max_length is not None and isinstance(raw, (str, list, tuple)) and len(raw) > check.max_length:
            raise Invalid([((), f"must have a length of at most {check.max_length}, got {len(raw):,}")])
        value = check.parse(raw) if check.parse else converter.structure(raw, base)
        if isinstance(value, (str, list, tuple)) and len(value) < check.min_length:
            raise Invalid([((), "must not be empty" if check.min_length == 1
                            else f"must have a length of at least {check.min_length}")])
        if pattern is not None and not pattern.fullmatch(value):  # type: ignore[arg-type]
            raise Invalid([((), f"must match {check.pattern}")])
        for bound, fails, sign in ((check.ge, float.__lt__, ">="), (check.gt, float.__le__, ">"),
                                   (check.le, float.__gt__, "<=")):
            if bound is not None and value is not None and fails(float(value), bound):  # type: ignore[arg-type]
                raise Invalid([((), f"must be {sign} {bound:g}, got {raw}")])
        return value
    return structure


def _shape(cls: type) -> Callable[[object, Any], Any]:
    # Read field by field, not by cattrs' generated function: compiling that cost ~4 ms of a first token for the agent
    # config alone, more than a config's parses ever take.
    keys = {json_key(cls, a.name): a for a in attrs.fields(attrs.resolve_types(cls)) if a.init}
    forbid = getattr(cls, "unknown_keys", "forbid") == "forbid"

    def structure(value: object, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise expected("an object", value)
        data = dict(value)
        for key, field in keys.items():  # the attribute's own name works too
            if field.name in data and key not in data:
                data[key] = data.pop(field.name)
        given, problems = {}, []
        for key, field in keys.items():
            if key in data:
                try:
                    given[field.alias] = converter.structure(data[key], field.type)
                except Exception as exc:  # noqa: BLE001  # a hook's problem, named by its key
                    problems += problems_of(exc, (key,))
            elif field.default is attrs.NOTHING:
                problems.append(((key,), "required"))
        problems += [((key,), "unknown key") for key in sorted(data) if forbid and key not in keys]
        if problems:
            raise Invalid(problems)
        return cls(**given)
    return structure


def _is_union(kind: Any) -> bool:
    return get_origin(kind) in (Union, types.UnionType)


def _json_kind(kind: Any) -> str:
    """Which JSON value a type is read from: "an object", "an array", ... (Annotated and Optional unwrapped)."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Annotated or (_is_union(kind) and len(args) == 2 and type(None) in args):
        return _json_kind(next(a for a in args if a is not type(None)))
    if attrs.has(kind) or kind is dict or origin is dict:
        return "an object"
    if origin in (list, tuple):
        return "an array"
    return "a string" if origin is Literal else _JSON_NAMES.get(kind, "a value")


def _union(value: object, kind: Any) -> Any:
    """A union read by the value's JSON kind (an object or an array of them); None where it is optional."""
    if value is None and type(None) in get_args(kind):
        return None
    options = {_json_kind(a): a for a in get_args(kind) if a is not type(None)}
    got = _JSON_NAMES.get(type(value)) or ("an object" if isinstance(value, Mapping) else "")
    if got == "an integer" and got not in options:
        got = "a number"
    if got not in options:
        raise expected(" or ".join(options), value)
    return converter.structure(value, options[got])


converter = cattrs.Converter(detailed_validation=True)
for _kind, _what in ((str, "a string"), (int, "an integer"), (float, "a number"), (bool, "a boolean")):
    converter.register_structure_hook(_kind, _strict(_kind, _what))
converter.register_structure_hook_func(lambda t: get_origin(t) in (list, tuple), _list)
converter.register_structure_hook_func(lambda t: t is dict or get_origin(t) is dict, _dict)
converter.register_structure_hook_func(lambda t: get_origin(t) is Literal, _literal)
converter.register_structure_hook_func(lambda t: t is Any, lambda value, _: value)
converter.register_structure_hook_func(lambda t: _is_union(t) and len(set(get_args(t)) - {type(None)}) > 1, _union)
converter.register_structure_hook_factory(lambda t: get_origin(t) is Annotated, _annotated)
converter.register_structure_hook_factory(attrs.has, _shape)


def problems_of(exc: BaseException, path: FieldPath = ()) -> list[tuple[FieldPath, str]]:
    """The (path, reason) pairs an exception raised while structuring stands for."""
    if isinstance(exc, Invalid):
        return [((*path, *where), reason) for where, reason in exc.problems]
    return [(path, str(exc))]


def parse(shape: type[T], data: object) -> T:
    """`data` checked into `shape`; Invalid naming every problem."""
    try:
        return converter.structure(data, shape)
    except Exception as exc:  # noqa: BLE001  # whatever a hook raised is a problem of the data, named by its path
        raise Invalid(problems_of(exc)) from None


def parse_config(shape: type[T], data: object, source: str) -> T:
    """`data` read from config file `source` checked into `shape`; ConfigError naming the file and each key."""
    from ollie.errors import ConfigError

    try:
        return parse(shape, data)
    except Invalid as exc:
        keys = "; ".join(f"key '{dotted(path) or '(top level)'}': {reason}" for path, reason in exc.problems)
        raise ConfigError(f"{source}: {keys}") from None


def _check_schema(check: Check, schema: dict[str, Any]) -> dict[str, Any]:
    size = "Items" if schema.get("type") == "array" else "Length"
    for key, value in (("description", check.doc or None), (f"min{size}", check.min_length or None),
                       (f"max{size}", check.max_length),
                       ("pattern", check.pattern), ("minimum", check.ge), ("exclusiveMinimum", check.gt),
                       ("maximum", check.le)):
        if value is not None:
            schema[key] = value
    return schema


_SCHEMAS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema of a shape (or any type a shape's field has), as the model sees it."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Annotated:
        check = next((e for e in args[1:] if isinstance(e, Check)), Check())
        return _check_schema(check, dict(check.schema) if check.schema is not None else json_schema(args[0]))
    if attrs.has(kind):
        fields = attrs.fields(attrs.resolve_types(kind))
        schema: dict[str, Any] = {
            "type": "object", "properties": {json_key(kind, a.name): json_schema(a.type) for a in fields}}
        required = [json_key(kind, a.name) for a in fields if a.default is attrs.NOTHING]
        if required:
            schema["required"] = required
        if getattr(kind, "unknown_keys", "forbid") == "forbid":
            schema["additionalProperties"] = False
        return schema
    if origin in (list, tuple):
        return {"type": "array", "items": json_schema(args[0])}
    if kind is dict or origin is dict:
        return {"type": "object"}
    if origin is Literal:
        return {"type": "string", "enum": list(args)}
    if _is_union(kind):
        options = [json_schema(a) for a in args if a is not type(None)]
        return options[0] if len(options) == 1 else {"anyOf": options}
    return {"type": _SCHEMAS[kind]}
