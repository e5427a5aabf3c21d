"""A scenario's SLOs as OpenSLO v1 documents, and back.

`OpenSLO <https://openslo.com>`_ v1 is the vendor-neutral form SLO tools read. Each SLO a
scenario sets becomes two documents: an ``SLI`` saying what is measured, and an ``SLO``
referring to it (``indicatorRef``) with one objective. The gym's measurements are named
by a metric source of type ``gym``:

==================  ====================================================  ===============
gym SLO             SLI                                                   objective
==================  ====================================================  ===============
availability        ``ratioMetric``: good ``served``, total ``finished``  ``target``: min
throughput_rps      ``thresholdMetric``: ``throughput_rps``               ``gte`` value
peak_saturation     ``thresholdMetric``: ``peak_saturation``              ``lte`` value
cost_units          ``thresholdMetric``: ``cost_units``                   ``lte`` value
==================  ====================================================  ===============

``finished`` is served + failed: the gym's availability leaves out what its seen set
skipped and what is still in flight at the end. Budgeting is by occurrences: for
availability the events are URLs, so the objective's ``target`` is the availability;
for a threshold the event is a run of the scenario, and ``target`` the share of runs
that must meet it, which the gym takes from ``--confidence`` (0.8 unless given; written
so on export) and not from the file: a file asking another share gets a note saying so.

The availability SLO's burn-rate alerts go with it, as ``AlertCondition`` and
``AlertPolicy`` documents (:mod:`gym.inputs.openslo_alerts`).

Read back (a scenario's ``slos_from``, ``gym slo import``): ``SLO`` and ``SLI``
documents, the SLO's indicator inline or by reference, and the alert policies the
availability SLO lists; ``Service`` and ``DataSource`` documents are skipped. Everything
else is refused with one line naming the document and the field: other API versions,
notification targets as documents, budgeting by time slices, composite SLOs (several
objectives), metric sources of another type, a raw ratio. ``timeWindow`` is read and
not used: the window is the run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from gym.core.errors import GymError, Problem
from gym.core.limits import DEFAULT_CONFIDENCE
from gym.inputs import openslo_alerts
from gym.inputs.strict_yaml import dump_yaml_documents, read_yaml, value_kind
from gym.models import Scenario, SLOs

API_VERSION = "openslo/v1"
#: The metric source type that names the gym's own measurements.
SOURCE = "gym"
#: Kinds read, and kinds skipped (they define no SLO).
READ_KINDS = ("SLO", "SLI", "AlertPolicy", "AlertCondition")
SKIPPED_KINDS = ("Service", "DataSource", "AlertNotificationTarget")
#: RFC 1123 labels, as OpenSLO's names must be.
NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True)
class Measure:
    """How one gym SLO reads in OpenSLO."""

    slo: str  # the gym's name (scenario field)
    title: str
    op: str | None  # a threshold's comparison; None for the ratio
    unit: str
    what: str


MEASURES = {
    m.slo: m
    for m in (
        Measure(
            "availability",
            "Availability",
            None,
            "",
            "Served URLs over finished ones (served + failed) in a run of the scenario.",
        ),
        Measure(
            "throughput_rps",
            "Throughput",
            "gte",
            "URLs/s",
            "Served URLs per second over a run of the scenario.",
        ),
        Measure(
            "peak_saturation",
            "Peak saturation",
            "lte",
            "",
            "Highest demand over capacity of any component in any 1-second window of a run.",
        ),
        Measure(
            "cost_units",
            "Cost",
            "lte",
            "units",
            "Units the design provisions, priced by the scenario's catalog.",
        ),
    )
}
#: The ratio's counts: (good or bad, total).
GOOD, BAD, TOTAL = "served", "failed", "finished"


@dataclass
class Imported:
    """What a file gave: the ``slos:`` mapping a scenario takes, and notes on what in the
    file the gym reads differently (a threshold's share of runs)."""

    slos: dict[str, dict[str, float]]
    notes: list[str] = field(default_factory=list)
    #: The availability SLO's alert policies as ``alerts.conditions`` items; None when
    #: the file gives none (the scenario's own alerts then apply).
    alerts: list[dict[str, Any]] | None = None


# -- export --------------------------------------------------------------------------------


def label(text: str, most: int = 63) -> str:
    """``text`` as an RFC 1123 label (lower case, digits and dashes), at most ``most``
    characters; ``gym`` when nothing is left of it."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:most].strip("-")
    return out or "gym"


def export(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's SLOs as OpenSLO v1 documents: for each, an SLI then its SLO."""
    service = label(scenario.name or "scenario", 63 - len("-peak-saturation") - 1)
    documents: list[dict[str, Any]] = []
    alert_docs: list[dict[str, Any]] = []
    for name, measure in MEASURES.items():
        slo = getattr(scenario.slos, name)
        if slo is None:
            continue
        ident = f"{service}-{name.replace('_', '-')}"
        documents.append(
            _document(
                "SLI",
                ident,
                measure.title,
                {"description": measure.what, **_indicator(measure)},
            )
        )
        if measure.op is None:
            if slo.min >= 1:
                raise GymError.single(
                    scenario._source,
                    "slos.availability.min",
                    "1 cannot be written as OpenSLO (its targets are below 1); "
                    "use 0.9999 or the like",
                )
            objective: dict[str, Any] = {"displayName": f"at least {slo.min:g}", "target": slo.min}
        else:
            value = _plain(slo.min if measure.op == "gte" else slo.max)
            shown = f"{'at least' if measure.op == 'gte' else 'at most'} {value:g}"
            objective = {
                "displayName": f"{shown} {measure.unit}".strip(),
                "op": measure.op,
                "value": value,
                # The share of runs (the gym's --confidence); see the module's docstring.
                "target": DEFAULT_CONFIDENCE,
            }
        spec: dict[str, Any] = {
            "description": f"{measure.what} From the gym's scenario {scenario.name}.",
            "service": service,
            "indicatorRef": ident,
            "budgetingMethod": "Occurrences",
            "objectives": [objective],
        }
        if measure.op is None:  # availability: the alerts on its budget (none: [])
            alert_docs, policies = openslo_alerts.export(scenario, service, label)
            spec["alertPolicies"] = [{"alertPolicyRef": p} for p in policies]
        documents.append(_document("SLO", ident, f"{measure.title} of {scenario.name}", spec))
    return documents + alert_docs


def shown(slos: SLOs) -> dict[str, dict[str, float | int]]:
    """A scenario's ``slos:`` mapping, whole numbers written as such (6000, not 6000.0)."""
    return {
        n: {k: _plain(v) for k, v in b.items()}
        for n, b in slos.model_dump(exclude_none=True).items()
    }


def _plain(value: float) -> float | int:
    """A whole number written without ``.0``."""
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else value


def _document(kind: str, name: str, title: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "displayName": title},
        "spec": spec,
    }


def _indicator(measure: Measure) -> dict[str, Any]:
    def source(spec: dict[str, str]) -> dict[str, Any]:
        return {"metricSource": {"type": SOURCE, "spec": spec}}

    if measure.op is None:
        return {
            "ratioMetric": {
                "counter": False,  # totals over the run, not a counter's samples
                "good": source({"count": GOOD}),
                "total": source({"count": TOTAL}),
            }
        }
    return {"thresholdMetric": source({"metric": measure.slo})}


def dump(scenario: Scenario) -> str:
    """:func:`export` as a YAML file, with a header saying where it came from."""
    head = (
        f"# OpenSLO v1: the SLOs of the gym scenario {scenario.name!r} (gym slo export).\n"
        "# A scenario reads them back with slos_from: this file.\n"
    )
    return head + dump_yaml_documents(export(scenario))


# -- import --------------------------------------------------------------------------------


def read(path: str | Path) -> Imported:
    """Read an OpenSLO file into the ``slos:`` a scenario takes; problems name the file,
    the document and the field (:class:`GymError`)."""
    file = str(path)
    documents = read_yaml(path, documents=True)
    return parse(documents, file)


def parse(documents: list[Any], file: str | None) -> Imported:
    """:func:`read` of documents already parsed."""
    slis: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (where, spec)
    slos: list[tuple[str, dict[str, Any]]] = []
    alerting = openslo_alerts.Reader(file)
    for i, doc in enumerate(documents):
        if doc is None:  # an empty document (a trailing ---)
            continue
        where = f"document {i + 1}"
        _need(isinstance(doc, dict), file, where, f"must be a mapping, not {value_kind(doc)}")
        version = doc.get("apiVersion")
        if version is None and "duration_s" in doc:
            raise GymError.single(
                file,
                None,
                "this is a gym scenario, not an OpenSLO file; write its SLOs as one with "
                "gym slo export",
            )
        _need(
            version is not None,
            file,
            f"{where} apiVersion",
            f"is missing; an OpenSLO document starts with apiVersion: {API_VERSION}",
        )
        _need(
            version == API_VERSION,
            file,
            f"{where} apiVersion",
            f"{version!r} is not read; the gym reads {API_VERSION} documents",
        )
        kind = doc.get("kind")
        _need(
            kind is not None,
            file,
            f"{where} kind",
            f"is missing; give one of {', '.join(READ_KINDS)}",
        )
        if kind in SKIPPED_KINDS:
            continue
        _need(
            kind in READ_KINDS,
            file,
            f"{where} kind",
            f"{kind!r} is not read; the gym reads {' and '.join(READ_KINDS)} documents "
            f"(and skips {' and '.join(SKIPPED_KINDS)})",
        )
        name = _name(doc.get("metadata"), file, f"{where} metadata")
        where = f"{kind} {name}"
        spec = doc.get("spec")
        _need(isinstance(spec, dict), file, f"{where} spec", "is required (a mapping)")
        if kind == "SLI":
            _need(name not in slis, file, f"{where} metadata.name", "names two SLIs")
            slis[name] = (where, spec)
        elif kind == "SLO":
            slos.append((where, spec))
        else:
            alerting.add(kind, name, where, doc)
    out = Imported({})
    found: dict[str, str] = {}
    for where, spec in slos:
        measure, objective = _slo(where, spec, slis, file)
        _need(
            measure.slo not in found,
            file,
            where,
            f"measures {measure.slo}, as {found.get(measure.slo)} does; keep one",
        )
        found[measure.slo] = where
        bound, note = _objective(where, measure, objective, file)
        out.slos[measure.slo] = bound
        if note:
            out.notes.append(note)
        policies = spec.get("alertPolicies")
        if policies is not None:  # [] on the availability SLO: no alerts
            got = alerting.alerts(where, policies, measure.slo == "availability")
            if measure.slo == "availability":
                out.alerts = got
    _need(bool(out.slos), file, None, "holds no SLO document; the gym reads kind SLO")
    out.notes += alerting.unused()
    return out


def _need(ok: bool, file: str | None, where: str | None, message: str) -> None:
    if not ok:
        raise GymError([Problem(file, where, message)])


def _name(metadata: Any, file: str | None, where: str) -> str:
    _need(isinstance(metadata, dict), file, where, "is required (a mapping with a name)")
    name = metadata.get("name")
    _need(
        isinstance(name, str) and NAME.fullmatch(name) is not None,
        file,
        f"{where}.name",
        f"{name!r} is not an OpenSLO name: up to 63 lower-case letters, digits and dashes, "
        "starting and ending with a letter or digit",
    )
    return str(name)


def _slo(
    where: str,
    spec: dict[str, Any],
    slis: dict[str, tuple[str, dict[str, Any]]],
    file: str | None,
) -> tuple[Measure, dict[str, Any]]:
    """The gym SLO an SLO document measures, and its one objective."""
    method = spec.get("budgetingMethod")
    _need(
        method is not None,
        file,
        f"{where} spec.budgetingMethod",
        "is required; the gym budgets by Occurrences (a run is one window)",
    )
    _need(
        method == "Occurrences",
        file,
        f"{where} spec.budgetingMethod",
        f"{method!r} is not read; the gym budgets by Occurrences (a run is one window)",
    )
    inline: Any = spec.get("indicator")
    ref: Any = spec.get("indicatorRef")
    _need(
        (inline is None) != (ref is None),
        file,
        f"{where} spec",
        "needs one of indicator (inline) or indicatorRef (an SLI's name), not both",
    )
    if ref is not None:
        _need(
            isinstance(ref, str) and ref in slis,
            file,
            f"{where} spec.indicatorRef",
            f"{ref!r} names no SLI in this file"
            + (f" (it has {', '.join(sorted(slis))})" if slis else ""),
        )
        sli_where, sli = slis[ref]
        sli_where += " spec"
    else:
        _need(isinstance(inline, dict), file, f"{where} spec.indicator", "must be a mapping")
        sli = inline.get("spec")
        sli_where = f"{where} spec.indicator.spec"
        _need(isinstance(sli, dict), file, sli_where, "is required (a mapping)")
    measure = _measure(sli_where, sli, file)
    objectives: Any = spec.get("objectives")
    _need(
        isinstance(objectives, list) and len(objectives) == 1 and isinstance(objectives[0], dict),
        file,
        f"{where} spec.objectives",
        "must be a list of one objective: the gym's SLO has one target (several "
        "objectives, and composite SLOs, are not read)",
    )
    return measure, objectives[0]


def _measure(where: str, sli: dict[str, Any], file: str | None) -> Measure:
    ratio: Any = sli.get("ratioMetric")
    threshold: Any = sli.get("thresholdMetric")
    _need(
        (ratio is None) != (threshold is None),
        file,
        where,
        "needs one of ratioMetric or thresholdMetric",
    )
    if threshold is not None:
        metric = _source(f"{where}.thresholdMetric", threshold, "metric", file)
        names = [n for n, m in MEASURES.items() if m.op is not None]
        _need(
            metric in names,
            file,
            f"{where}.thresholdMetric.metricSource.spec.metric",
            f"{metric!r} is not a gym measurement; give one of {', '.join(names)}",
        )
        return MEASURES[metric]
    _need(isinstance(ratio, dict), file, f"{where}.ratioMetric", "must be a mapping")
    _need(
        "raw" not in ratio,
        file,
        f"{where}.ratioMetric.raw",
        "a raw ratio is not read; give good (or bad) and total",
    )
    good, bad = ratio.get("good"), ratio.get("bad")
    _need(
        (good is None) != (bad is None) and "total" in ratio,
        file,
        f"{where}.ratioMetric",
        "needs total and one of good or bad",
    )
    side, expected = ("good", GOOD) if good is not None else ("bad", BAD)
    counts = {
        side: _source(f"{where}.ratioMetric.{side}", ratio[side], "count", file),
        "total": _source(f"{where}.ratioMetric.total", ratio["total"], "count", file),
    }
    for part, want in ((side, expected), ("total", TOTAL)):
        _need(
            counts[part] == want,
            file,
            f"{where}.ratioMetric.{part}.metricSource.spec.count",
            f"{counts[part]!r}: the gym's ratio is availability, {GOOD} (or {BAD}) over "
            f"{TOTAL}; write {want}",
        )
    return MEASURES["availability"]


def _source(where: str, metric: Any, key: str, file: str | None) -> Any:
    """What a ``metricSource`` of type gym names under ``key``."""
    _need(isinstance(metric, dict), file, where, "must be a mapping with a metricSource")
    source = metric.get("metricSource")
    _need(isinstance(source, dict), file, f"{where}.metricSource", "is required (a mapping)")
    kind = source.get("type")
    _need(
        kind == SOURCE,
        file,
        f"{where}.metricSource.type",
        f"{kind!r} is not read; the gym measures its own runs: type: {SOURCE}",
    )
    spec = source.get("spec")
    _need(
        isinstance(spec, dict) and key in spec,
        file,
        f"{where}.metricSource.spec",
        f"needs {key}: the gym measurement it is",
    )
    return spec[key]


def _objective(
    where: str, measure: Measure, objective: dict[str, Any], file: str | None
) -> tuple[dict[str, float], str | None]:
    """The scenario's bound from an objective, and a note when the file asks something
    the gym sets elsewhere."""
    at = f"{where} spec.objectives[0]"
    for key in ("indicator", "indicatorRef", "compositeWeight"):
        _need(key not in objective, file, f"{at}.{key}", "composite SLOs are not read")
    for key in ("timeSliceTarget", "timeSliceWindow"):
        _need(key not in objective, file, f"{at}.{key}", "time slices are not read")
    target = _target(at, objective, file)
    op = objective.get("op")
    if measure.op is None:
        _need(
            op in (None, "gte"),
            file,
            f"{at}.op",
            f"{op!r}: availability is met at or above its target (gte, or no op)",
        )
        _need("value" not in objective, file, f"{at}.value", "a ratio's objective is its target")
        return {"min": target}, None
    _need(
        op == measure.op,
        file,
        f"{at}.op",
        f"{op!r}: {measure.slo} is met when the run's value is "
        f"{'at least' if measure.op == 'gte' else 'at most'} the value; write op: {measure.op}",
    )
    value = _number(objective.get("value"), f"{at}.value", file)
    _need(value >= 0, file, f"{at}.value", f"{value!r} must be >= 0")
    note = None
    if target != DEFAULT_CONFIDENCE:
        note = (
            f"{where}: target {target:g} is the share of runs that must meet it; the gym "
            f"takes that share from --confidence ({DEFAULT_CONFIDENCE:g} unless given), "
            f"not from the file: add --confidence {target:g} to a run with --runs"
        )
    return {"min" if measure.op == "gte" else "max": value}, note


def _target(at: str, objective: dict[str, Any], file: str | None) -> float:
    has = [k for k in ("target", "targetPercent") if k in objective]
    _need(len(has) == 1, file, at, "needs one of target or targetPercent, not both")
    key = has[0]
    value = _number(objective[key], f"{at}.{key}", file)
    scale = 1.0 if key == "target" else 100.0
    _need(
        0 <= value < scale,
        file,
        f"{at}.{key}",
        f"{value!r} must be >= 0 and below {scale:g}",
    )
    if scale == 1.0:
        return value
    # 99.9 -> 0.999, not 0.9990000000000001: divided as the decimal written.
    return float(Decimal(repr(value)) / Decimal(100))


def _number(value: Any, where: str, file: str | None) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    _need(ok, file, where, f"{value!r} must be a number")
    return float(value)
