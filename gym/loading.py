"""YAML files -> validated models. Every problem becomes a one-line ``file: field: message``.

YAML is parsed with the safe loader (no object construction), duplicate keys are
errors, and files over 1 MiB are refused before parsing.
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml
from pydantic import BaseModel, ValidationError

from gym.errors import GymError, Problem
from gym.models import Design, FieldError, Scenario

M = TypeVar("M", bound=BaseModel)
N = TypeVar("N", Design, Scenario)

MAX_FILE_BYTES = 1 << 20
_FAULT_KINDS = {"crash", "stall", "slowdown"}


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing duplicate keys."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (it appears twice in the same mapping)",
                key_node.start_mark,
            )
        seen[key] = loader.construct_object(value_node, deep=True)
    return seen


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _mapping_without_duplicates,
)


def read_yaml(path: str | Path) -> Any:
    """Parse one YAML file; any problem is a :class:`GymError` naming the file."""
    file = str(path)
    p = Path(path)
    if not p.exists():
        raise GymError.single(file, None, "file not found")
    if p.is_dir():
        raise GymError.single(file, None, "is a directory, not a YAML file")
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise GymError.single(
                file, None, f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}"
            )
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise GymError.single(
            file, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise GymError.single(file, None, f"cannot read: {exc.strerror}") from None
    return parse_yaml_text(text, file)


def parse_yaml_text(text: str, file: str | None = None) -> Any:
    """Parse YAML text safely: no object construction, no duplicate keys, no alias bombs."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem or exc.context or "malformed YAML"
        raise GymError.single(file, None, f"malformed YAML at {where}{what}") from None
    except yaml.YAMLError as exc:
        raise GymError.single(file, None, f"malformed YAML: {exc}") from None
    except RecursionError:
        raise GymError.single(file, None, "malformed YAML: nested too deeply") from None
    except ValueError as exc:  # e.g. a number PyYAML cannot read
        raise GymError.single(file, None, f"malformed YAML: {exc}") from None
    _check_size(data, file)
    return data


MAX_VALUES = 100_000
MAX_DEPTH = 64


def _check_size(data: Any, file: str | None) -> None:
    """Refuse documents that expand (through aliases) to more values than any input needs,
    nest deeper than any input needs, or refer to themselves."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise GymError.single(file, None, f"nested more than {MAX_DEPTH} levels deep")
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise GymError.single(file, None, "an alias refers to the value that contains it")
        active.add(key)
        children = node.values() if isinstance(node, dict) else node
        total = 1 + sum(size(child, depth + 1) for child in children)
        active.discard(key)
        memo[key] = total
        if total > MAX_VALUES:
            raise GymError.single(
                file, None, f"expands to more than {MAX_VALUES:,} values (through aliases?)"
            )
        return total

    size(data, 0)


def parse(model: type[M], data: Any, file: str | None, what: str) -> M:
    """Validate ``data`` as ``model``; problems name ``file`` and the field."""
    if data is None:
        required = [n for n, f in model.model_fields.items() if f.is_required()]
        raise GymError.single(file, None, f"the file is empty; a {what} needs {_join(required)}")
    if not isinstance(data, dict):
        raise GymError.single(
            file,
            None,
            f"expected a mapping of keys at the top level (a {what}), got {_kind(data)}",
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise GymError([_problem(model, e, file) for e in exc.errors()]) from None
    except RecursionError:
        raise GymError.single(file, None, "nested too deeply") from None


def load_design(path: str | Path, overrides: list[str] | None = None) -> Design:
    """Read and validate a design file (designs/*.yaml).

    ``overrides`` are ``PATH=VALUE`` what-ifs (``cache.hit_ratio=0.6``), applied to the
    file's contents before validation, so they are checked like the file itself.
    """
    return _load(Design, path, "design", overrides)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (scenarios/*.yaml)."""
    return _load(Scenario, path, "scenario")


def parse_override(text: str) -> tuple[list[str], Any]:
    """``fetchers.replicas=5`` -> (["fetchers", "replicas"], 5); the value is read as YAML."""
    key, sep, raw = text.partition("=")
    keys = [k.strip() for k in key.split(".")]
    if not sep or not all(keys):
        raise GymError.single(
            None, "--set", f"{text!r} is not PATH=VALUE (for example cache.hit_ratio=0.6)"
        )
    try:
        value = yaml.load(raw, Loader=_StrictLoader) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    return keys, value


def apply_overrides(data: Any, overrides: list[str], file: str | None) -> Any:
    """A copy of ``data`` with each ``PATH=VALUE`` set (sections are created as needed)."""
    import copy

    out = copy.deepcopy(data) if data is not None else {}
    if not isinstance(out, dict):
        return out  # parse() reports the top-level problem
    for text in overrides:
        keys, value = parse_override(text)
        node = out
        for i, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            if not isinstance(child, dict):
                where = ".".join(keys[: i + 1])
                raise GymError.single(
                    file, where, f"--set {text}: {where} is a value, not a section"
                )
            node = child
        node[keys[-1]] = value
    return out


def _blame_override(problem: Problem, overrides: list[str]) -> Problem:
    """Say so when a problem is at a field a ``--set`` wrote."""
    for text in overrides:
        key = text.partition("=")[0].strip()
        if problem.field and (problem.field == key or problem.field.startswith(key + ".")):
            return Problem(problem.file, problem.field, f"{problem.message} (from --set {text})")
    return problem


def _load(model: type[N], path: str | Path, what: str, overrides: list[str] | None = None) -> N:
    """Parse, validate, name after the file if unnamed, and remember the file."""
    data = read_yaml(path)
    if overrides:
        data = apply_overrides(data, overrides, str(path))
        try:
            loaded = parse(model, data, str(path), what)
        except GymError as err:
            raise GymError([_blame_override(p, overrides) for p in err.problems]) from None
    else:
        loaded = parse(model, data, str(path), what)
    if loaded.name is None:
        loaded = loaded.model_copy(update={"name": Path(path).stem})
    loaded._source = str(path)
    return loaded


# -- turning pydantic's errors into one line each ---------------------------------------


def _problem(model: type[BaseModel], err: Any, file: str | None) -> Problem:
    loc = _clean_loc(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    error = ctx.get("error")
    if isinstance(error, FieldError):
        return Problem(file, _join_loc((*loc, *_split_field(error.field))), error.message)
    field = _join_loc(loc)
    if kind == "extra_forbidden":
        parent, key = loc[:-1], loc[-1]
        allowed = _fields_at(model, parent)
        hint = ""
        if allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            hint += f" (allowed here: {', '.join(allowed)})"
        return Problem(file, field, f"unknown key{hint}")
    if kind == "missing":
        return Problem(file, field, "is required but missing")
    if kind == "union_tag_invalid":
        return Problem(
            file,
            _join_loc((*loc, "kind")),
            f"{ctx.get('tag')!r} is not a fault kind; expected crash, stall or slowdown",
        )
    if kind == "union_tag_not_found":
        return Problem(
            file, _join_loc((*loc, "kind")), "is required: one of crash, stall or slowdown"
        )
    if kind == "model_type":
        return Problem(file, field, f"must be a mapping of keys, got {_kind(value)}")
    if kind == "list_type":
        return Problem(file, field, f"must be a list, got {_kind(value)}")
    message = str(err["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    message = message.replace("Input should be", "must be").replace("Input ", "")
    if message[:1].isupper():
        message = message[0].lower() + message[1:]
    return Problem(file, field, f"{message} (got {_show(value)})")


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop the discriminator tag pydantic puts in a fault's path: faults.1.crash.at_s."""
    out: list[Any] = []
    for i, part in enumerate(loc):
        if i > 0 and isinstance(loc[i - 1], int) and part in _FAULT_KINDS:
            continue
        out.append(part)
    return tuple(out)


def _join_loc(loc: tuple[Any, ...]) -> str | None:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or None


def _split_field(field: str) -> tuple[Any, ...]:
    parts: list[Any] = []
    for piece in field.replace("]", "").split("."):
        name, _, index = piece.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index))
    return tuple(parts)


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed in the mapping at ``loc`` (for 'did you mean')."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if args else None
            continue
        if isinstance(current, list):  # a union of models: pick the one with that field
            current = next((m for m in current if part in m.model_fields), None)
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        if part not in current.model_fields:
            return []
        current = current.model_fields[part].annotation
    current = _unwrap(current)
    if isinstance(current, list):
        return sorted({k for m in current for k in m.model_fields})
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unwrap(tp: Any) -> Any:
    """Optional[X] -> X, Annotated[X, ...] -> X, a union of models -> list of models."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [_unwrap(a) for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return members[0]
        return [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    return tp


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {_show(value)}"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
