"""What a suggested fix changes (:mod:`gym.explore.fix`): each field that differs between
a design and the fixed one, by its dotted path, as words and as the ``--set`` options
that make it; each change's effect when made alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gym.models import Design
from gym.system.graph import GraphDesign


@dataclass(frozen=True)
class Change:
    """One field of the design changed by the fix."""

    path: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.path} {self.words()}"

    def words(self) -> str:
        """``4 -> 5``; a graph's edges: ``drops a -> b; adds a -> c, c -> b``."""
        if _is_edges(self.old) and _is_edges(self.new):
            said = [
                f"{verb} {edges}"
                for verb, edges in (
                    ("drops", _edge_words(self.old, self.new)),
                    ("adds", _edge_words(self.new, self.old)),
                )
                if edges != "-"
            ]
            return "; ".join(said) or "the same edges, reordered"
        return f"{self.shown_old} -> {self.shown_new}"

    @property
    def shown_old(self) -> str:
        from gym.explore.compare import shown

        if _is_edges(self.old) and _is_edges(self.new):  # a graph's edges: those it drops
            return _edge_words(self.old, self.new)
        if self.old is None and not isinstance(self.new, dict | type(None)):
            return "default"  # a field left to its default, not a section absent
        return shown(self.old)

    @property
    def shown_new(self) -> str:
        from gym.explore.compare import shown

        if _is_edges(self.old) and _is_edges(self.new):  # and those it adds
            return _edge_words(self.new, self.old)
        if self.new is None and not isinstance(self.old, dict | type(None)):
            return "default"  # back to its default (worked out from the units), not "none"
        return shown(self.new)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new}


def _is_edges(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(e, dict) and "from" in e for e in value)


def _edge_words(edges: list[dict[str, Any]], other: list[dict[str, Any]]) -> str:
    """The edges of ``edges`` that ``other`` has not, as ``a -> b`` (a share or a delay
    when it has one): a fix's new write buffer is ``consumers -> db_buffer, db_buffer ->
    db`` in place of ``consumers -> db``, not both lists in full."""
    words = []
    for e in edges:
        if e in other:
            continue
        extra = []
        if e.get("share", 1) != 1:
            extra.append(f"share {e['share']:g}")
        if e.get("delay_s"):
            extra.append(f"after {e['delay_s']:g} s")
        words.append(f"{e['from']} -> {e['to']}" + (f" ({', '.join(extra)})" if extra else ""))
    return ", ".join(words) or "-"


@dataclass(frozen=True)
class Effect:
    """One change of a fix made alone: the failing SLOs it fixes by itself, and the units
    it adds (0: it fits the units the design already pays for). ``alone`` is False where
    the change makes no design by itself (a graph's new edges without their node)."""

    path: str
    fixes: tuple[str, ...]
    units: int
    alone: bool = True
    #: SLOs the design passed that the change alone fails (a cost SLO it goes over).
    breaks: tuple[str, ...] = ()

    def words(self) -> str:
        """``alone fixes throughput_rps, free`` (free: within the units already bought;
        a change that gives units back: ``saves 2 units``)."""
        if not self.alone:
            return "only with the others" + (f", {self.cost()}" if self.units else "")
        fixes = ", ".join(self.fixes) if self.fixes else "no SLO"
        breaks = f", breaks {', '.join(self.breaks)}" if self.breaks else ""
        return f"alone fixes {fixes}{breaks}, {self.cost()}"

    def cost(self) -> str:
        """``free`` (within the units already bought), ``+2 units`` or ``saves 9 units``."""
        n = abs(self.units)
        units = f"{n} unit{'s' if n != 1 else ''}"
        return "free" if not self.units else f"+{units}" if self.units > 0 else f"saves {units}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "fixes": list(self.fixes),
            "units": self.units,
            "alone": self.alone,
            "breaks": list(self.breaks),
        }


def mapping(design: Design | GraphDesign) -> dict[str, Any]:
    return design.model_dump(mode="json", by_alias=True)  # a graph edge's from and to


def put(data: dict[str, Any], path: str, value: Any, *, make: bool = False) -> None:
    """Set the field at the dotted ``path``; ``make``: its sections made where missing."""
    *parents, last = path.split(".")
    for key in parents:
        if make and not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[last] = value


def read(data: dict[str, Any], path: str) -> Any:
    """The field at the dotted ``path`` (None where a section on the way is missing)."""
    value: Any = data
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def with_field(design: Design | GraphDesign, path: str, value: Any) -> Design | GraphDesign:
    """``design`` with the field at ``path`` (dotted) set to ``value``, validated."""
    data = mapping(design)
    put(data, path, value, make=True)
    return type(design).model_validate(data)


def flow(value: Any) -> str:
    """A section as one line of YAML, as ``--set`` reads it back."""
    import yaml

    return str(yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6)).strip()


def changes(before: Design | GraphDesign, after: Design | GraphDesign) -> list[Change]:
    """Every field that differs between two designs, by its dotted path (a section added
    or removed is one change)."""
    out: list[Change] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in [*a, *(k for k in b if k not in a)]:
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else key)
        elif a != b:
            if a is None and isinstance(b, dict):  # a section added: the fields it sets
                b = _set_fields(after, path, b)
            out.append(Change(path, a, b))

    walk(mapping(before), mapping(after), "")
    return out


def _set_fields(design: Design | GraphDesign, path: str, whole: dict[str, Any]) -> dict[str, Any]:
    """The section of ``design`` at ``path`` without the fields at their defaults (a
    discovery section added as ``{shards: 5}``, not with its default lookup time)."""
    from pydantic import BaseModel

    node: Any = design
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
    if not isinstance(node, BaseModel):
        return whole
    trimmed: dict[str, Any] = node.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if "kind" in trimmed:  # a node's kind first, as a design file has it
        trimmed = {"kind": trimmed.pop("kind"), **trimmed}
    return trimmed


def leaves(data: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    """Every field of a section by its dotted path (None and empty values left out: the
    defaults)."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        here = f"{path}.{key}"
        if isinstance(value, dict):
            out += leaves(value, here)
        elif value is not None and value != []:
            out.append((here, value))
    return out


def exact(value: Any) -> str:
    """A value as ``--set`` reads it back to the same value: YAML's null, and numbers in
    full where 12 digits would change them (and so, maybe, their units)."""
    from gym.explore.compare import shown

    return "null" if value is None else shown(value)
