"""YAML files -> validated models. Every problem becomes a one-line ``file: field: message``.

The files are read strictly by :mod:`gym.inputs.strict_yaml` (regular files of at most
1 MiB, the YAML 1.2 core schema, limits on depth and size); ``--set`` and ``--vary``
values are read by the same loader under the same limits, here.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, Union

import yaml
from pydantic import BaseModel, ValidationError

from gym.core.errors import GymError, Problem
from gym.inputs.strict_yaml import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    check_size,
    clipped,
    load_text,
    read_yaml,
    value_kind,
    yaml_problem,
)
from gym.models import Design, FieldError, Scenario, SLOs
from gym.system.graph import NODE_NAME_PATTERN, GraphDesign, graph_problems

M = TypeVar("M", bound=BaseModel)
N = TypeVar("N", Design, GraphDesign, Scenario)

_FAULT_KINDS = {"crash", "stall", "slowdown"}


def parse(model: type[M], data: Any, file: str | None, what: str) -> M:
    """Validate ``data`` as ``model``; problems name ``file`` and the field."""
    if data is None:
        required = [n for n, f in model.model_fields.items() if f.is_required()]
        raise GymError.single(file, None, f"the file is empty; a {what} needs {_join(required)}")
    if not isinstance(data, dict):
        raise GymError.single(
            file,
            None,
            f"expected a mapping of keys at the top level (a {what}), got {value_kind(data)}",
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
        raise GymError(_typos_first([_problem(model, e, file) for e in exc.errors()])) from None
    except RecursionError:
        raise GymError.single(file, None, "nested too deeply") from None


def load_design(
    path: str | Path, overrides: list[str] | None = None, *, contents: Any = None
) -> Design | GraphDesign:
    """Read and validate a design file (designs/*.yaml): the crawler's sections, or a
    ``graph`` of nodes and edges (:class:`~gym.system.graph.GraphDesign`).

    ``overrides`` are ``PATH=VALUE`` what-ifs (``cache.hit_ratio=0.6``), applied to the
    file's contents before validation, so they are checked like the file itself.
    ``contents``: what :func:`read_yaml` gave for ``path`` already (a sweep builds every
    point from one reading; reading is most of the cost of a load), not read again.
    """
    data = read_yaml(path) if contents is None else contents
    if isinstance(data, dict) and _means_graph(data):
        return _load(GraphDesign, path, "design", overrides, data)
    return _load(Design, path, "design", overrides, data)


class DesignParts(NamedTuple):
    """What can still be read of a design that does not validate as a whole."""

    name: str
    #: The sections valid on their own, validated, by name.
    valid: dict[str, BaseModel]
    #: Every section the design gives (not null), valid or not.
    given: frozenset[str]
    #: Whether it is a graph's: then ``valid`` holds its nodes valid on their own, by name.
    graph: bool = False


def design_parts(
    path: str | Path, overrides: list[str] | None = None, *, contents: Any = None
) -> DesignParts | None:
    """The parts of a design file that are valid on their own (a crawler's sections, a
    graph's nodes), for the checks against a scenario's catalog that can still be made
    when the design as a whole is not valid (its schema's problems and the catalog's
    reported in one round). None: the file cannot be read, or is not a mapping (or a
    graph without a mapping of nodes)."""
    try:
        data = read_yaml(path) if contents is None else contents
        if overrides:
            data = apply_overrides(data, overrides, str(path))
    except GymError:
        return None
    if not isinstance(data, dict):
        return None
    name = data.get("name")
    named = name if isinstance(name, str) and name else Path(path).stem
    if _means_graph(data):
        return _graph_parts(data, named)
    valid: dict[str, BaseModel] = {}
    for key, field in Design.model_fields.items():
        section = _section_model(field.annotation)
        if section is None or not isinstance(data.get(key), dict):
            continue
        try:
            valid[key] = section.model_validate(data[key])
        except (ValidationError, RecursionError):
            continue
    return DesignParts(
        named,
        valid,
        frozenset(str(k) for k, v in data.items() if v is not None),
    )


def _graph_parts(data: dict[Any, Any], name: str) -> DesignParts | None:
    """A graph's nodes that are valid on their own (a well-named node of a known kind
    with valid parameters); None if it has no mapping of nodes."""
    from pydantic import TypeAdapter

    from gym.system.graph import NodeSpec

    graph = data.get("graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, dict):
        return None
    adapter: TypeAdapter[Any] = TypeAdapter(NodeSpec)
    valid: dict[str, BaseModel] = {}
    for key, spec in nodes.items():
        if not isinstance(key, str) or not re.fullmatch(NODE_NAME_PATTERN, key):
            continue
        try:
            valid[key] = adapter.validate_python(spec)
        except (ValidationError, RecursionError):
            continue
    return DesignParts(name, valid, frozenset(valid), graph=True)


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a design's section (``FetchersConfig``, ``RetryPolicy | None``)."""
    for kind in (annotation, *typing.get_args(annotation)):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind
    return None


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
    """Read and validate a scenario file (scenarios/*.yaml); its ``slos_from`` (an
    OpenSLO file, relative to it) read into its ``slos`` and, if the file gives the
    availability SLO alert policies, its ``alerts``."""
    scenario = _load(Scenario, path, "scenario")
    if scenario.slos_from is None:
        return scenario
    file = Path(scenario.slos_from)
    if not file.is_absolute():
        file = Path(path).parent / file
    if not file.exists() and not file.is_symlink():
        raise GymError.single(
            str(path), "slos_from", f"{scenario.slos_from!r}: no such file (looked for {file})"
        )
    try:
        slos, alerts, notes = read_openslo(file)
    except GymError as err:  # a file that cannot be read at all: say where it was named
        raise GymError(
            [
                Problem(str(path), "slos_from", f"{p.file}: {p.message}")
                if p.field is None and p.file == str(file)
                else p
                for p in err.problems
            ]
        ) from None
    data = scenario.model_dump(exclude={"slos_from"})
    data["slos"] = slos.model_dump(exclude_none=True)
    if alerts is not None:
        if "conditions" in scenario.alerts.model_fields_set:
            raise GymError.single(
                str(path),
                "alerts.conditions",
                f"the alerts come from {scenario.slos_from} (its alert policies) or from "
                "here, not both",
            )
        data["alerts"]["conditions"] = alerts
    # Checked whole again, as every run's batch will read it (the alerts a scenario lists
    # need the availability SLO the file may not give).
    final = parse(Scenario, data, str(path), "scenario")
    final._source = scenario._source
    final._slos_file = str(file)
    final._slos_notes = notes
    return final


def read_openslo(
    path: str | Path,
) -> tuple[SLOs, list[dict[str, Any]] | None, list[str]]:
    """An OpenSLO file's SLOs, the availability SLO's alerts (None: the file gives no
    policies), and notes: checked as a scenario that takes them is (``gym slo import``
    and ``slos_from`` read files the same way)."""
    from gym.inputs import openslo
    from gym.models.alerts import Alerts

    got = openslo.read(path)
    slos = parse(SLOs, got.slos, str(path), "set of SLOs")
    if got.alerts is not None:
        parse(Alerts, {"conditions": got.alerts}, str(path), "set of alerts")
    return slos, got.alerts, got.notes


def parse_override(text: str, option: str = "--set") -> tuple[list[str], Any]:
    """``fetchers.replicas=5`` -> (["fetchers", "replicas"], 5); the value is read as YAML,
    under the limits a file has (size, depth, aliases), and text that does not parse as
    YAML is taken as text. A problem names the path as its field."""
    key, sep, raw = text.partition("=")
    keys = [k.strip() for k in key.split(".")]
    if not sep or not all(keys):
        raise GymError.single(
            None, option, f"{clipped(text)} is not PATH=VALUE (for example cache.hit_ratio=0.6)"
        )
    path = ".".join(keys)
    if len(keys) > MAX_DEPTH:
        raise GymError.single(
            None, option, f"{clipped(path)}: a path of more than {MAX_DEPTH} keys"
        )
    if not raw.strip():
        return keys, None
    try:
        value = load_text(raw)
    except (yaml.scanner.ScannerError, yaml.parser.ParserError):
        value = raw  # not YAML: plain text (a name with a colon, an unclosed bracket)
    except Exception as exc:
        problem = yaml_problem(exc)
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
    """Say so when a problem is at a field a ``--set`` wrote, or is an unknown key a
    ``--set`` made (``--set fetcher.replicas=4``: ``fetcher``)."""
    for text in overrides:
        key = text.partition("=")[0].strip()
        made = problem.message.startswith("unknown key") and key.startswith(f"{problem.field}.")
        if problem.field and (problem.field == key or problem.field.startswith(key + ".") or made):
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
    _other_kind(data, str(path), what)
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
    """One of pydantic's errors as one line: where, and what is wrong in the file's words."""
    loc = _clean_loc(err["loc"])
    error = (err.get("ctx") or {}).get("error")
    if isinstance(error, FieldError):
        return Problem(file, _join_loc((*loc, *_split_field(error.field))), error.message)
    for rule in _RULES:
        found = rule(model, err, loc)
        if found is not None:
            return Problem(file, *found)
    message = str(err["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    message = message.replace("Input should be", "must be").replace("Input ", "")
    if message[:1].isupper():
        message = message[0].lower() + message[1:]
    return Problem(file, _join_loc(loc), f"{message} (got {clipped(err.get('input'))})")


#: Where and what, for an error one of the rules below words (None: not this rule's).
_Worded = tuple[str | None, str] | None


def _unknown_key(model: type[BaseModel], err: Any, loc: tuple[Any, ...]) -> _Worded:
    """A key the model does not have, with the closest one and those allowed there."""
    if err["type"] != "extra_forbidden":
        return None
    allowed = _fields_at(model, loc[:-1])
    hint = ""
    if allowed:
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        hint += f" (allowed here: {', '.join(allowed)})"
    return _join_loc(loc), f"unknown key{hint}"


def _missing(model: type[BaseModel], err: Any, loc: tuple[Any, ...]) -> _Worded:
    return (_join_loc(loc), "is required but missing") if err["type"] == "missing" else None


def _kind_tag(model: type[BaseModel], err: Any, loc: tuple[Any, ...]) -> _Worded:
    """A node's or a fault's ``kind`` missing or not one of them."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind not in ("union_tag_invalid", "union_tag_not_found"):
        return None
    where = _join_loc((*loc, "kind"))
    if "nodes" in loc:
        from gym.system.kinds import graph_kinds

        kinds = ", ".join(graph_kinds())
        said = f"{ctx.get('tag')!r} is not a node kind; expected" if ctx.get("tag") else "is "
        said += f"required: one of {kinds}" if not ctx.get("tag") else f" {kinds}"
        return where, said
    if kind == "union_tag_invalid":
        return where, f"{ctx.get('tag')!r} is not a fault kind; expected crash, stall or slowdown"
    return where, "is required: one of crash, stall or slowdown"


def _node_name(model: type[BaseModel], err: Any, loc: tuple[Any, ...]) -> _Worded:
    ctx = err.get("ctx") or {}
    if err["type"] != "string_pattern_mismatch" or ctx.get("pattern") != NODE_NAME_PATTERN:
        return None
    where = _join_loc(loc[:-1]) if loc and loc[-1] == "[key]" else _join_loc(loc)
    return where, (
        f"{err.get('input')!r} is not a node name: one starts with a letter and holds "
        "letters, digits, _ and - (at most 64 characters)"
    )


def _shape(model: type[BaseModel], err: Any, loc: tuple[Any, ...]) -> _Worded:
    """A mapping or a list expected, something else given."""
    wanted = {"model_type": "a mapping of keys", "list_type": "a list"}.get(err["type"])
    if wanted is None:
        return None
    return _join_loc(loc), f"must be {wanted}, got {value_kind(err.get('input'))}"


def _flag(model: type[BaseModel], err: Any, loc: tuple[Any, ...]) -> _Worded:
    """true or false expected: YAML 1.2's words for them said."""
    if err["type"] not in ("bool_parsing", "bool_type"):
        return None
    value, why = err.get("input"), ""
    if isinstance(value, str) and value.lower() in ("yes", "no", "on", "off", "y", "n"):
        why = f": YAML 1.2 reads {value} as a word; write true or false"
    elif isinstance(value, str) and value.lower() in ("true", "false"):
        why = f": a quoted word; write {value.lower()} without quotes"
    return _join_loc(loc), f"must be true or false (got {clipped(value)}{why})"


_RULES = (_unknown_key, _missing, _kind_tag, _node_name, _shape, _flag)


def _typos_first(problems: list[Problem]) -> list[Problem]:
    """A misspelt key is one problem, not two: where an unknown key's "did you mean"
    names a key that is missing beside it (``bufer`` for ``buffer``), the missing key's
    "is required but missing" is left out."""
    meant = set()
    for p in problems:
        close = re.search(r"did you mean '([^']+)'", p.message)
        if close and p.field is not None:
            parent = p.field.rpartition(".")[0]
            meant.add(f"{parent}.{close.group(1)}" if parent else close.group(1))
    return [
        p for p in problems if not (p.message == "is required but missing" and p.field in meant)
    ] or problems


#: The top-level keys of the other kind of file: a scenario given as a design (or the
#: other way round) is said so in one line, not as every key it lacks and has.
_SCENARIO_KEYS = {"duration_s", "base_rps", "load", "faults", "slos", "slos_from", "web"}
_DESIGN_KEYS = {"frontier", "fetchers", "cache", "page_store", "graph"}


def _other_kind(data: Any, file: str | None, what: str) -> None:
    if not isinstance(data, dict):
        return
    keys = set(map(str, data))
    mine, theirs = (
        (_DESIGN_KEYS, _SCENARIO_KEYS) if what == "design" else (_SCENARIO_KEYS, _DESIGN_KEYS)
    )
    found = sorted(keys & theirs)
    if len(found) >= 2 and not keys & mine:
        other = "scenario" if what == "design" else "design"
        flag = "--scenario FILE" if other == "scenario" else "DESIGN"
        raise GymError.single(
            file,
            None,
            f"this is a {other} file (it has {', '.join(found)}), not a {what}; give it as {flag}",
        )


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop the discriminator tag pydantic puts in a fault's path (faults.1.crash.at_s) and
    in a graph node's (graph.nodes.db.store.rps)."""
    from gym.system.kinds import REGISTRY

    out: list[Any] = []
    for i, part in enumerate(loc):
        if i > 0 and isinstance(loc[i - 1], int) and part in _FAULT_KINDS:
            continue
        if i > 1 and loc[i - 2] == "nodes" and part in REGISTRY:
            continue
        if part in ("alert-word", "alert-list"):  # the form of alerts.conditions
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


def _echo(text: str) -> str:
    """What the user typed, as typed when short and printable, else quoted and clipped."""
    return text if len(text) <= 60 and text.isprintable() else clipped(text)


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
