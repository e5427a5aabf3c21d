"""YAML files -> validated models. Every problem becomes a one-line ``file: field: message``.

Only regular files are read, and at most 1 MiB of them. YAML is parsed with the safe
loader (no object construction) under the YAML 1.2 core schema; duplicate keys, keys that
are not names and explicit tags are errors; documents that nest over 64 levels or hold
over 10,000 values (aliases expanded) are refused. ``--set`` and ``--vary`` values are
read by the same loader under the same limits.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union

import yaml
from pydantic import BaseModel, ValidationError

from gym.errors import GymError, Problem
from gym.models import Design, FieldError, GraphDesign, Scenario
from gym.models.graph import NODE_NAME_PATTERN, graph_problems

M = TypeVar("M", bound=BaseModel)
N = TypeVar("N", Design, GraphDesign, Scenario)

MAX_FILE_BYTES = 1 << 20
MAX_VALUES = 10_000
MAX_DEPTH = 64
#: Digits an integer may have: far more than any field allows, far fewer than Python's own
#: limit on converting text to an integer (4,300 digits).
MAX_INT_DIGITS = 100
_FAULT_KINDS = {"crash", "stall", "slowdown"}
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


class _Refused(Exception):
    """A limit hit while parsing (before the whole document is built)."""


class _Unfit(yaml.constructor.ConstructorError):
    """Well-formed YAML that no input may hold (a duplicate key, a list as a key)."""


class _StrictLoader(yaml.SafeLoader):
    """The safe loader reading YAML 1.2 core-schema scalars, refusing duplicate keys,
    non-scalar keys, explicit tags other than ``!!str`` (no input needs them, and PyYAML's
    constructors for them crash on bad values), and documents that nest or grow beyond
    the limits while they are read.

    YAML 1.2 (unlike PyYAML's YAML 1.1): ``1e9`` and ``1e-1`` are numbers; ``yes``, ``on``
    and ``off`` are text, not booleans; ``1:30`` is text, not 90; ``017`` is 17, ``0o17``
    is 15; dates are text; ``_`` is not a digit separator.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        tag = getattr(event, "tag", None)
        if tag not in (None, "!", _STR_TAG):
            shown = tag.replace("tag:yaml.org,2002:", "!!")
            raise _Unfit(
                None,
                None,
                f"the tag {shown} is not allowed (only !!str is); write the value without it",
                event.start_mark,
            )
        self._depth += 1
        self._nodes += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"nested more than {MAX_DEPTH} levels deep")
        if self._nodes > MAX_VALUES:
            raise _Refused(f"holds more than {MAX_VALUES:,} values")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


# The YAML 1.2 core schema's implicit types (https://yaml.org/spec/1.2.2/#1032-tag-resolution),
# in place of YAML 1.1's: no timestamps, no sexagesimal numbers, no yes/no/on/off.
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _regexp, _first in (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    (
        "tag:yaml.org,2002:int",
        r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$",
        list("-+0123456789"),
    ),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+0123456789."),
    ),
    (_MERGE_TAG, r"^(?:<<)$", ["<"]),
):
    _StrictLoader.add_implicit_resolver(_tag, re.compile(_regexp), _first)


_INT_DIGITS = {
    10: re.compile(r"[0-9]+"),
    8: re.compile(r"[0-7]+"),
    16: re.compile(r"[0-9a-fA-F]+"),
}


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    """A YAML 1.2 integer: decimal, ``0o`` octal or ``0x`` hexadecimal, ASCII digits only."""
    text = str(loader.construct_scalar(node))
    body = text[1:] if text[:1] in "+-" else text
    base = {"0o": 8, "0x": 16}.get(body[:2], 10)
    digits = body[2:] if base != 10 else body
    if not _INT_DIGITS[base].fullmatch(digits):
        raise _Unfit(None, None, f"{_show(text)} is not an integer", node.start_mark)
    if len(digits) > MAX_INT_DIGITS:
        raise _Unfit(
            None,
            None,
            f"an integer of {len(digits):,} digits is too large for any field "
            f"(at most {MAX_INT_DIGITS} digits)",
            node.start_mark,
        )
    return (-1 if text.startswith("-") else 1) * int(digits, base)


_FLOAT_BODY = re.compile(r"(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:e[-+]?[0-9]+)?")


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    sign = -1.0 if text.startswith("-") else 1.0
    body = text[1:] if text[:1] in "+-" else text
    if body == ".inf":
        return sign * math.inf
    if body == ".nan":
        return math.nan
    if not _FLOAT_BODY.fullmatch(body):
        raise _Unfit(None, None, f"{_show(text)} is not a number", node.start_mark)
    return sign * float(body) + 0.0  # + 0.0: -0.0 becomes 0.0


def _key(loader: _StrictLoader, node: yaml.Node) -> str:
    """A mapping key: a name, never a list, a mapping, a number or null."""
    if not isinstance(node, yaml.ScalarNode):
        what = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
        raise _Unfit(None, None, f"a key must be a name, not {what}", node.start_mark)
    key = loader.construct_object(node, deep=True)
    if not isinstance(key, str):
        raise _Unfit(None, None, f"a key must be a name, not {_kind(key)}", node.start_mark)
    return key


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[str, Any]:
    """A mapping whose keys are names, each written once; merge keys (``<<: *base``)
    give defaults that the mapping's own keys override."""
    own: set[str] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = _key(loader, key_node)
        if key in own:
            raise _Unfit(
                None,
                None,
                f"duplicate key {key!r} (it appears twice in the same mapping)",
                key_node.start_mark,
            )
        own.add(key)
    loader.flatten_mapping(node)
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        out[_key(loader, key_node)] = loader.construct_object(value_node, deep=True)
    return out


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


class _Yaml12Dumper(yaml.SafeDumper):
    """Writes YAML that :class:`_StrictLoader` reads back the same: text that YAML 1.2
    reads as a number, a boolean or null (a name such as ``1e9`` or ``0o17``) is quoted."""


_Yaml12Dumper.yaml_implicit_resolvers = _StrictLoader.yaml_implicit_resolvers


def dump_yaml(data: Any) -> str:
    """``data`` (plain dicts, lists, text and numbers) as YAML that loads back to it."""
    return yaml.dump(data, Dumper=_Yaml12Dumper, sort_keys=False)


def read_yaml(path: str | Path) -> Any:
    """Parse one YAML file; any problem is a :class:`GymError` naming the file.

    Only regular files are read (not devices, FIFOs, sockets or directories, wherever a
    symbolic link points), and never more than the size limit plus one byte: a file whose
    size the file system does not report (``/proc``) cannot get past the limit either.
    """
    file = str(path)
    try:
        _check_regular(os.stat(path).st_mode, file)  # a FIFO or a socket is never opened
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise GymError.single(file, None, "file not found") from None
    except IsADirectoryError:
        raise GymError.single(file, None, "is a directory, not a YAML file") from None
    except OSError as exc:
        raise GymError.single(file, None, f"cannot read: {exc.strerror}") from None
    except ValueError as exc:  # e.g. a NUL byte in the path
        raise GymError.single(file, None, f"cannot read: {exc}") from None
    try:
        _check_regular(os.fstat(fd).st_mode, file)  # what was opened, if it changed since
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise GymError.single(file, None, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    return parse_yaml_bytes(data, file)


def parse_yaml_bytes(data: bytes, file: str) -> Any:
    """A YAML file's bytes, however they arrived (read here, or sent by the playground's
    page): at most ``MAX_FILE_BYTES``, UTF-8, then :func:`parse_yaml_text`."""
    if len(data) > MAX_FILE_BYTES:
        raise GymError.single(file, None, f"file is over {MAX_FILE_BYTES:,} bytes, the limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GymError.single(
            file, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    return parse_yaml_text(text, file)


def _check_regular(mode: int, file: str) -> None:
    if stat.S_ISDIR(mode):
        raise GymError.single(file, None, "is a directory, not a YAML file")
    if not stat.S_ISREG(mode):
        raise GymError.single(
            file, None, f"is {_file_kind(mode)}, not a regular file; give a YAML file"
        )


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def parse_yaml_text(text: str, file: str | None = None) -> Any:
    """Parse YAML text safely: no object construction, no duplicate keys, no alias bombs,
    at most ``MAX_FILE_BYTES`` of text, ``MAX_DEPTH`` levels and ``MAX_VALUES`` values."""
    try:
        data = _parse(text)
    except Exception as exc:
        problem = _yaml_problem(exc)
        if problem is None:
            raise
        raise GymError.single(file, None, problem) from None
    check_size(data, file)
    return data


def _parse(text: str) -> Any:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise _Refused(f"is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    return yaml.load(text, Loader=_StrictLoader)


def _yaml_problem(exc: Exception) -> str | None:
    """What went wrong parsing YAML, in one line; None for an exception that is a bug."""
    if isinstance(exc, _Refused):
        return str(exc)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem or exc.context or "malformed YAML"
        if isinstance(exc, _Unfit):
            return f"at {where}{what}"
        return f"malformed YAML at {where}{what}"
    if isinstance(exc, RecursionError):
        return "malformed YAML: nested too deeply"
    if isinstance(exc, yaml.YAMLError | ValueError | OverflowError):
        return f"malformed YAML: {exc}"
    return None


def check_size(data: Any, file: str | None, field: str | None = None) -> None:
    """Refuse documents that expand (through aliases) to more values than any input needs,
    nest deeper than any input needs, or refer to themselves."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise GymError.single(file, field, f"nested more than {MAX_DEPTH} levels deep")
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise GymError.single(file, field, "an alias refers to the value that contains it")
        active.add(key)
        children = node.values() if isinstance(node, dict) else node
        total = 1 + sum(size(child, depth + 1) for child in children)
        active.discard(key)
        memo[key] = total
        if total > MAX_VALUES:
            raise GymError.single(
                file, field, f"expands to more than {MAX_VALUES:,} values (through aliases?)"
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
        if model is GraphDesign:
            graph = GraphDesign.model_validate(data, context={"graph_problems": "later"})
            found = graph_problems(graph)
            if found:
                raise GymError([Problem(file, f, message) for f, message in found])
            return graph  # type: ignore[return-value]
        return model.model_validate(data)
    except ValidationError as exc:
        raise GymError([_problem(model, e, file) for e in exc.errors()]) from None
    except RecursionError:
        raise GymError.single(file, None, "nested too deeply") from None


def load_design(
    path: str | Path, overrides: list[str] | None = None, *, contents: Any = None
) -> Design | GraphDesign:
    """Read and validate a design file (designs/*.yaml): the crawler's sections, or a
    ``graph`` of nodes and edges (:class:`~gym.models.GraphDesign`).

    ``overrides`` are ``PATH=VALUE`` what-ifs (``cache.hit_ratio=0.6``), applied to the
    file's contents before validation, so they are checked like the file itself.
    ``contents``: what :func:`read_yaml` gave for ``path`` already (a sweep builds every
    point from one reading; reading is most of the cost of a load), not read again.
    """
    data = read_yaml(path) if contents is None else contents
    if isinstance(data, dict) and _means_graph(data):
        return _load(GraphDesign, path, "design", overrides, data)
    return _load(Design, path, "design", overrides, data)


def _means_graph(data: dict[Any, Any]) -> bool:
    """Whether a design mapping is a graph: it has ``graph``, or none of the crawler's
    sections and a key that looks like ``graph`` misspelled (then the graph's errors,
    with their "did you mean", are the ones that help)."""
    if "graph" in data:
        return True
    crawler = {"frontier", "fetchers", "cache", "page_store", "async_writer", "dedup"}
    if crawler & set(map(str, data)):
        return False
    return any(difflib.get_close_matches(str(k).lower(), ["graph"], cutoff=0.6) for k in data)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (scenarios/*.yaml)."""
    return _load(Scenario, path, "scenario")


def parse_override(text: str, option: str = "--set") -> tuple[list[str], Any]:
    """``fetchers.replicas=5`` -> (["fetchers", "replicas"], 5); the value is read as YAML,
    under the limits a file has (size, depth, aliases), and text that does not parse as
    YAML is taken as text. A problem names the path as its field."""
    key, sep, raw = text.partition("=")
    keys = [k.strip() for k in key.split(".")]
    if not sep or not all(keys):
        raise GymError.single(
            None, option, f"{_show(text)} is not PATH=VALUE (for example cache.hit_ratio=0.6)"
        )
    path = ".".join(keys)
    if len(keys) > MAX_DEPTH:
        raise GymError.single(None, option, f"{_show(path)}: a path of more than {MAX_DEPTH} keys")
    if not raw.strip():
        return keys, None
    try:
        value = _parse(raw)
    except (yaml.scanner.ScannerError, yaml.parser.ParserError):
        value = raw  # not YAML: plain text (a name with a colon, an unclosed bracket)
    except Exception as exc:
        problem = _yaml_problem(exc)
        if problem is None:
            raise
        raise GymError.single(None, path, f"{problem} (from {option} {_echo(text)})") from None
    try:
        check_size(value, None, path)
    except GymError as err:
        (limit,) = err.problems
        raise GymError.single(
            None, path, f"{limit.message} (from {option} {_echo(text)})"
        ) from None
    return keys, value


_WHOLE = re.compile(rf"[-+]?[0-9]{{1,{MAX_INT_DIGITS}}}")


def whole_number(text: str) -> int:
    """A whole number as a person types it on a command line: ASCII digits with an
    optional sign, spaces around allowed, no ``_``, no other scripts' digits, at most
    ``MAX_INT_DIGITS`` digits. Raises ValueError otherwise."""
    if not _WHOLE.fullmatch(text.strip()):
        raise ValueError(f"not a whole number: {text!r}")
    return int(text.strip())


def apply_overrides(data: Any, overrides: list[str], file: str | None) -> Any:
    """A copy of ``data`` with each ``PATH=VALUE`` set (sections are created as needed).

    The result is held to the limits of a file: the values ``--set`` adds count too.
    """
    import copy

    out = copy.deepcopy(data) if data is not None else {}
    if not isinstance(out, dict):
        return out  # parse() reports the top-level problem
    parsed: list[tuple[str, list[str], Any]] = []
    for text in overrides:
        try:
            keys, value = parse_override(text)
        except GymError as err:
            raise GymError([Problem(file, p.field, p.message) for p in err.problems]) from None
        for earlier, earlier_keys, _ in parsed:
            # one field set twice (however spelled), or a section and one of its fields:
            # the later value would silently drop the earlier one
            common = min(len(keys), len(earlier_keys))
            if keys[:common] == earlier_keys[:common]:
                raise GymError.single(
                    file,
                    "--set",
                    f"--set {_echo(earlier)} and --set {_echo(text)} set the same field; "
                    "give each once",
                )
        parsed.append((text, keys, value))
    for text, keys, value in parsed:
        node = out
        for i, key in enumerate(keys[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            if not isinstance(child, dict):
                where = ".".join(keys[: i + 1])
                raise GymError.single(
                    file, where, f"--set {_echo(text)}: {where} is a value, not a section"
                )
            node = child
        node[keys[-1]] = value
    check_size(out, file, "--set")
    return out


def _blame_override(problem: Problem, overrides: list[str]) -> Problem:
    """Say so when a problem is at a field a ``--set`` wrote."""
    for text in overrides:
        key = text.partition("=")[0].strip()
        if problem.field and (problem.field == key or problem.field.startswith(key + ".")):
            return Problem(
                problem.file, problem.field, f"{problem.message} (from --set {_echo(text)})"
            )
    return problem


def _load(
    model: type[N],
    path: str | Path,
    what: str,
    overrides: list[str] | None = None,
    contents: Any = None,
) -> N:
    """Parse, validate, name after the file if unnamed, and remember the file."""
    data = read_yaml(path) if contents is None else contents
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
    if kind in ("union_tag_invalid", "union_tag_not_found") and "nodes" in loc:
        from gym.kinds import graph_kinds

        kinds = ", ".join(graph_kinds())
        said = f"{ctx.get('tag')!r} is not a node kind; expected" if ctx.get("tag") else "is "
        said += f"required: one of {kinds}" if not ctx.get("tag") else f" {kinds}"
        return Problem(file, _join_loc((*loc, "kind")), said)
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
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == NODE_NAME_PATTERN:
        where = _join_loc(loc[:-1]) if loc and loc[-1] == "[key]" else field
        return Problem(
            file,
            where,
            f"{value!r} is not a node name: one starts with a letter and holds letters, "
            "digits, _ and - (at most 64 characters)",
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
    """Drop the discriminator tag pydantic puts in a fault's path (faults.1.crash.at_s) and
    in a graph node's (graph.nodes.db.store.rps)."""
    from gym.kinds import REGISTRY

    out: list[Any] = []
    for i, part in enumerate(loc):
        if i > 0 and isinstance(loc[i - 1], int) and part in _FAULT_KINDS:
            continue
        if i > 1 and loc[i - 2] == "nodes" and part in REGISTRY:
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
        return [info.alias or name for name, info in current.model_fields.items()]
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
    if value is None:
        return "null"
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


def _echo(text: str) -> str:
    """What the user typed, as typed when short and printable, else quoted and clipped."""
    return text if len(text) <= 60 and text.isprintable() else _show(text)


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
