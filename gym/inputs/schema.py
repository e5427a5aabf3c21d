"""JSON Schema and field reference of the two file kinds, generated from the models.

``gym schema`` writes ``schemas/design.schema.json`` and ``schemas/scenario.schema.json``
(editors that speak the YAML language server offer completion and show the field
descriptions; every shipped file names its schema in its first line) and, with
``--docs``, one Markdown page per file kind listing every field, its unit, range and
default. Tests check that the committed files are what this module generates.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from gym.models import Design, Scenario
from gym.system.graph import GraphDesign

KINDS: dict[str, type[BaseModel]] = {"design": Design, "scenario": Scenario}
#: Other forms a file kind can take (a design given as a graph), in the same schema.
ALTERNATIVES: dict[str, tuple[type[BaseModel], ...]] = {"design": (GraphDesign,)}

#: Units, by field name (the descriptions say more); :data:`BY_KIND` first.
UNITS = {
    "drain_rps": "URLs/s",
    "rps": "per second",
    "rps_per_replica": "fetches/s",
    "base_rps": "URLs/s",
    "lookups_rps": "lookups/s",
    "max_rps_per_replica": "fetches/s",
    "buffer": "URLs",
    "back_queues": "queues (one host each)",
    "replicas": "replicas",
    "hosts": "hosts",
    "urls": "URLs",
    "page_kb": "KB",
    "mean_ms": "ms",
    "duration_s": "s",
    "at_s": "s",
    "for_s": "s",
    "crawl_delay_s": "s",
    "hit_ratio": "fraction",
    "base_hit_ratio": "fraction",
    "fp_rate": "fraction",
    "flush_ceiling": "fraction of capacity",
    "seen_url_fraction": "fraction",
    "duplicate_body_fraction": "fraction",
    "multiplier": "x base_rps",
    "factor": "x",
    "cv": "std / mean",
}

#: Units a kind gives a field its own way (issue 30): by the model's class (or a base of
#: it), then the field. A graph's nodes count requests, a write buffer writes, a retry's
#: multiplier the wait before.
BY_KIND: dict[str, dict[str, str]] = {
    "RetryPolicy": {"multiplier": "x the wait before"},
    "AsyncWriterConfig": {"buffer": "writes"},
    "PageStoreConfig": {"rps": "writes/s"},
    "CacheParams": {"rps": "lookups/s"},
    "LookupParams": {"rps": "lookups/s"},
    "ServiceParams": {"rps": "requests/s"},
    "QueueParams": {"drain_rps": "requests/s", "buffer": "requests"},
    "FleetNode": {"rps_per_replica": "requests/s"},
    "StoreNode": {"rps": "requests/s"},
}


def unit_of(model: type[BaseModel], name: str) -> str:
    """The unit of field ``name`` of ``model``: its kind's own, else the field name's."""
    for cls in model.__mro__:
        own = BY_KIND.get(cls.__name__, {})
        if name in own:
            return own[name]
    return UNITS.get(name, "")


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a design or a scenario file."""
    model = KINDS[kind]
    others = ALTERNATIVES.get(kind, ())
    if others:
        from pydantic import TypeAdapter

        forms: Any = typing.Union[(model, *others)]
        schema = TypeAdapter(forms).json_schema()
        schema["description"] = " Or: ".join(
            (m.__doc__ or m.__name__).strip().splitlines()[0] for m in (model, *others)
        )
    else:
        schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"crawler SLO gym {kind}"
    return schema


def schema_text(kind: str) -> str:
    return json.dumps(json_schema(kind), indent=2, sort_keys=False) + "\n"


def field_rows(
    model: type[BaseModel], prefix: str = "", defaults: BaseModel | None = None
) -> list[tuple[str, str, str, str, str, str]]:
    """(path, type, unit, range, default, description) for every field, nested ones too.

    ``defaults`` is the value the parent field defaults to, so nested fields show the
    defaults actually used (the fetch time's 250 ms, not "required")."""
    rows = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{info.alias or name}"
        nested = _models(info.annotation)
        default = _default(info)
        if defaults is not None:
            value = getattr(defaults, name)
            default = "see below" if isinstance(value, BaseModel) else _json(value)
        rows.append(
            (
                path,
                _type_name(info.annotation),
                unit_of(model, name),
                _range(info),
                default,
                info.description or "",
            )
        )
        child_default = getattr(defaults, name) if defaults is not None else _factory(info)
        for sub in nested:
            label = ""
            if len(nested) > 1:
                kind_field = sub.model_fields.get("kind")
                tag = typing.get_args(kind_field.annotation)[0] if kind_field else sub.__name__
                label = f"(kind: {tag})"
            given = child_default if isinstance(child_default, sub) else None
            inside = "[]" if _is_list(info.annotation) else ""
            inside = ".<name>" if _is_dict(info.annotation) else inside
            rows += field_rows(sub, f"{path}{inside}{label}.", given)
    return rows


def docs_text(kind: str) -> str:
    """The Markdown reference of one file kind."""
    model = KINDS[kind]
    lines = [
        f"# The {kind} file: every field",
        "",
        f"Generated from the models by `gym schema --docs docs` (do not edit by hand; a test "
        f"checks this page is current). JSON Schema: `schemas/{kind}.schema.json`.",
        "",
        (model.__doc__ or "").strip(),
        "",
        "| field | type | unit | range | default | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for path, type_name, unit, rng, default, desc in field_rows(model):
        cells = [f"`{path}`", type_name, unit, rng, default, desc.replace("|", "/")]
        lines.append("| " + " | ".join(c.replace("\n", " ") for c in cells) + " |")
    for other in ALTERNATIVES.get(kind, ()):
        lines += [
            "",
            f"## Or: {(other.__doc__ or other.__name__).strip().splitlines()[0]}",
            "",
            "A graph of nodes of the kinds in docs/architecture.md, and the edges between "
            "them (`designs/systems/`).",
            "",
            "| field | type | unit | range | default | meaning |",
            "|---|---|---|---|---|---|",
        ]
        for path, type_name, unit, rng, default, desc in field_rows(other):
            cells = [f"`{path}`", type_name, unit, rng, default, desc.replace("|", "/")]
            lines.append("| " + " | ".join(c.replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _models(tp: Any) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    for arg in _flatten(tp):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            out.append(arg)
    return out


def _flatten(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _flatten(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType, list):
        return [x for arg in typing.get_args(tp) for x in _flatten(arg)]
    if origin is dict:
        return _flatten(typing.get_args(tp)[1])
    return [tp]


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) is list


def _is_dict(tp: Any) -> bool:
    return typing.get_origin(tp) is dict


def _type_name(tp: Any) -> str:
    names = []
    for arg in _flatten(tp):
        if arg is type(None):
            names.append("null")
        elif isinstance(arg, type) and issubclass(arg, BaseModel):
            names.append("mapping")
        elif typing.get_origin(arg) is typing.Literal:
            names.append(" / ".join(repr(a) for a in typing.get_args(arg)))
        else:
            names.append(getattr(arg, "__name__", str(arg)))
    text = " or ".join(dict.fromkeys(names))
    if _is_dict(tp):
        return f"mapping of names to {text}"
    return f"list of {text}" if _is_list(tp) else text


def _range(info: FieldInfo) -> str:
    parts = []
    for meta in info.metadata:
        for attr, sym in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(
                    f"{sym} {value:g}" if isinstance(value, float | int) else f"{sym} {value}"
                )
        for attr, word in (("min_length", "at least"), ("max_length", "at most")):
            value = getattr(meta, attr, None)
            if value is not None:
                things = "characters" if info.annotation in (str, str | None) else "items"
                parts.append(f"{word} {value} {things}")
    return ", ".join(parts)


def _json(value: Any) -> str:
    return "none" if value is None else json.dumps(value)


def _factory(info: FieldInfo) -> Any:
    if info.default_factory is None:
        return None
    try:
        return info.default_factory()  # type: ignore[call-arg]
    except TypeError:
        return None


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        try:
            value = info.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
        if isinstance(value, BaseModel):
            return "see below"
        return json.dumps(value) if not isinstance(value, list) or not value else "see below"
    if info.default is PydanticUndefined:
        return ""
    return json.dumps(info.default) if info.default is not None else "none"


def write(schema_dir: Path | None, docs_dir: Path | None, force: bool = False) -> list[Path]:
    """Write the schemas and/or the field pages. A file that is not one of ours (it lacks
    the generated marker) is only replaced with ``force``."""
    from gym.core.errors import GymError

    planned: list[tuple[Path, str, str]] = []
    for kind in KINDS:
        if schema_dir is not None:
            planned.append(
                (
                    schema_dir / f"{kind}.schema.json",
                    schema_text(kind),
                    f'"title": "crawler SLO gym {kind}"',
                )
            )
        if docs_dir is not None:
            planned.append(
                (
                    docs_dir / f"{kind}-file.md",
                    docs_text(kind),
                    "Generated from the models by `gym schema",
                )
            )
    from gym.core.outputs import check_dir, check_file, write_file

    for directory, option in ((schema_dir, "-o"), (docs_dir, "--docs")):
        if directory is not None:
            check_dir(directory, option, force=True)  # our files are checked one by one
    for path, _, marker in planned:
        option = "--docs" if path.suffix == ".md" else "-o"
        check_file(path, option, suffixes=(path.suffix,), force=True)
        if path.exists() and not force and marker not in path.read_text(errors="replace"):
            raise GymError.single(
                str(path), None, "exists and was not written by gym schema; pass --force"
            )
    for path, text, _ in planned:
        write_file(path, text, "--docs" if path.suffix == ".md" else "-o")
    return [p for p, _, _ in planned]
