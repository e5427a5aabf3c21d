"""YAML text to plain data, strictly. Every problem is a :class:`~gym.core.errors.GymError`
naming the file.

Only regular files are read, and at most 1 MiB of them. YAML is parsed with the safe
loader (no object construction) under the YAML 1.2 core schema; duplicate keys, keys that
are not names and explicit tags are errors; documents that nest over 64 levels or hold
over 10,000 values (aliases expanded) are refused. ``--set`` and ``--vary`` values are
read by the same loader under the same limits (:mod:`gym.inputs.loading`).
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from gym.core.errors import GymError

MAX_FILE_BYTES = 1 << 20
MAX_VALUES = 10_000
MAX_DEPTH = 64
#: Digits an integer may have: far more than any field allows, far fewer than Python's own
#: limit on converting text to an integer (4,300 digits).
MAX_INT_DIGITS = 100
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
        raise _Unfit(None, None, f"{clipped(text)} is not an integer", node.start_mark)
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
        raise _Unfit(None, None, f"{clipped(text)} is not a number", node.start_mark)
    return sign * float(body) + 0.0  # + 0.0: -0.0 becomes 0.0


def _key(loader: _StrictLoader, node: yaml.Node) -> str:
    """A mapping key: a name, never a list, a mapping, a number or null."""
    if not isinstance(node, yaml.ScalarNode):
        what = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
        raise _Unfit(None, None, f"a key must be a name, not {what}", node.start_mark)
    key = loader.construct_object(node, deep=True)
    if not isinstance(key, str):
        raise _Unfit(None, None, f"a key must be a name, not {value_kind(key)}", node.start_mark)
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


def dump_yaml_documents(documents: list[Any]) -> str:
    """Several documents, each as :func:`dump_yaml` writes it, separated by ``---``."""
    return yaml.dump_all(documents, Dumper=_Yaml12Dumper, sort_keys=False, explicit_start=True)


def read_yaml(path: str | Path, *, documents: bool = False) -> Any:
    """Parse one YAML file; any problem is a :class:`GymError` naming the file. With
    ``documents``, a list of the file's documents (``---`` between them), under the
    same limits for the whole file.

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
    return parse_yaml_bytes(data, file, documents=documents)


def parse_yaml_bytes(data: bytes, file: str, *, documents: bool = False) -> Any:
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
    return parse_yaml_text(text, file, documents=documents)


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


def parse_yaml_text(text: str, file: str | None = None, *, documents: bool = False) -> Any:
    """Parse YAML text safely: no object construction, no duplicate keys, no alias bombs,
    at most ``MAX_FILE_BYTES`` of text, ``MAX_DEPTH`` levels and ``MAX_VALUES`` values
    (with ``documents``: a list of its documents, the limits on all of them together)."""
    try:
        data = load_text(text, documents=documents)
    except Exception as exc:
        problem = yaml_problem(exc)
        if problem is None:
            raise
        raise GymError.single(file, None, problem) from None
    check_size(data, file)
    return data


def load_text(text: str, *, documents: bool = False) -> Any:
    """YAML text to plain data with the strict loader, at most ``MAX_FILE_BYTES`` of it
    (with ``documents``: a list of its documents, read by one loader, whose limits count
    all of them)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise _Refused(f"is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    if documents:
        return list(yaml.load_all(text, Loader=_StrictLoader))
    return yaml.load(text, Loader=_StrictLoader)


def _opened(exc: yaml.MarkedYAMLError) -> str:
    """Where the construct the parser was in began, when on an earlier line, with that
    line: an unclosed ``{`` is found a line late, where the next key is; the line to
    fix is the one that opened it."""
    start, end = exc.context_mark, exc.problem_mark
    if start is None or end is None or not exc.context or start.line > end.line:
        return ""
    if (start.line, start.column) >= (end.line, end.column):
        return ""
    line = ""
    if isinstance(start.buffer, str):
        text = start.buffer.rstrip("\0").split("\n")
        if start.line < len(text):
            line = " ".join(text[start.line].split())[:120]
    closer = "}" if "mapping" in exc.context else "]" if "sequence" in exc.context else None
    hint = f"; is its '{closer}' missing?" if closer and "flow" in exc.context else ""
    said = exc.context.removeprefix("while parsing ").removeprefix("while scanning ")
    if start.line == end.line:  # on the same line: where it opened is enough
        return f" (in {said} that starts at column {start.column + 1}{hint})"
    return (
        f" (in {said} that starts at line {start.line + 1}, column {start.column + 1}"
        + (f": {line!r}" if line else "")
        + f"{hint})"
    )


def yaml_problem(exc: Exception) -> str | None:
    """What went wrong parsing YAML, in one line; None for an exception that is a bug."""
    if isinstance(exc, _Refused):
        return str(exc)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem or exc.context or "malformed YAML"
        if isinstance(exc, _Unfit):
            return f"at {where}{what}"
        return f"malformed YAML at {where}{what}{_opened(exc)}"
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


def value_kind(value: Any) -> str:
    """What a value is, in words: null, a list, the text '...', the number 3."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {clipped(value)}"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return type(value).__name__


def clipped(value: Any) -> str:
    """A value's repr, clipped to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
