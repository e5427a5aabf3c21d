"""Results as JUnit XML (``--junit FILE`` on ``run``, ``sweep`` and ``optimize``), the form
CI pipelines render: a test suite per design (per point of a sweep), a test case per SLO.

A failing SLO is a ``<failure>`` whose message holds the measured value and the target,
and whose text is the explanation ``gym run`` prints for it. With many runs a case fails
when that SLO alone would fail the ``--runs`` rule (the 95% Wilson lower bound of its
pass rate under ``--confidence``), and one more case per suite, ``every SLO``, carries the
verdict itself (the share of runs passing them all), so the suites fail exactly when the
command exits 1. A sweep's point that could not be built is an ``<error>``; one that did
not run (Ctrl-C) is ``<skipped>``.

No time or timestamp is written: the same inputs give the same file, byte for byte.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym.analysis.scoring import SLO_NAMES, format_measured

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.explore.fix import Fix, NoFix
    from gym.explore.montecarlo import MonteCarloResult
    from gym.explore.optimize import Optimum
    from gym.models import Scenario

#: The case that carries a many-run verdict.
EVERY_SLO = "every SLO"


@dataclass
class Case:
    """One test case: passed, failed (``failure``), invalid (``error``) or not run."""

    name: str
    classname: str
    failure: tuple[str, str] | None = None  # (message, text)
    error: tuple[str, str] | None = None
    skipped: str | None = None


@dataclass
class Suite:
    """One design (or sweep point) under the scenario."""

    name: str
    cases: list[Case] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    out: str = ""  # <system-out>: the suggested fix, what a search found

    def count(self, what: str) -> int:
        return sum(1 for c in self.cases if getattr(c, what) is not None)


def _target(op: str, target: float) -> str:
    return f"target {op} {target:g}"


def of_run(result: Result, fix: Fix | NoFix | None = None) -> Suite:
    """One run: a case per SLO, failures explained as ``gym run`` explains them."""
    from gym.explore.fix import Fix

    design, scenario = result.design.name, result.scenario.name
    classname = f"gym.{design}"
    why: dict[str, list[str]] = {}
    for e in result.explanations:
        if e.kind == "slo" and e.slo is not None:
            why.setdefault(e.slo, []).extend([e.text, *e.details])
    suite = Suite(
        f"{design} under {scenario}",
        properties=_properties(result.design, result.scenario)
        | {"engine": result.engine, "seed": str(result.seed), "verdict": result.verdict},
    )
    for c in result.checks:
        case = Case(c.name, classname)
        if not c.passed:
            message = f"{c.name} {format_measured(c.name, c.measured)}, {_target(c.op, c.target)}"
            case.failure = (message, "\n".join(why.get(c.name, [message])))
        suite.cases.append(case)
    if fix is not None:
        suite.out = f"suggested fix: {fix.summary()}"
        if isinstance(fix, Fix):
            suite.out += "\n" + " ".join(f"--set {s}" for s in fix.sets())
    return suite


def _fails(passes: int, runs: int, confidence: float) -> bool:
    """Whether a pass count fails the ``--runs`` rule (one run: unless it passed)."""
    from gym.explore.montecarlo import wilson

    return passes < runs if runs == 1 else wilson(passes, runs)[0] < confidence


def _slo_case(
    name: str, classname: str, op: str, target: float, mean: float | None, passes: int, runs: int
) -> Case:
    """A failed SLO over ``runs`` runs (one: its value)."""
    if runs == 1:
        message = f"{name} {format_measured(name, mean)}, {_target(op, target)}"
    else:
        message = (
            f"{name} mean {format_measured(name, mean)}, {_target(op, target)}: "
            f"met in {passes}/{runs} runs"
        )
    return Case(name, classname, failure=(message, message))


def of_runs(
    design: Any,
    scenario: Scenario,
    mc: MonteCarloResult,
    name: str | None = None,
    classname: str | None = None,
    engine: str = "flow",
) -> Suite:
    """Many runs of one design: a case per SLO (its pass rate under the ``--runs``
    rule), and the verdict as the case ``every SLO``."""
    label = name or f"{design.name} under {scenario.name}"
    classname = classname or f"gym.{design.name}"
    suite = Suite(
        label,
        properties=_properties(design, scenario)
        | {
            "engine": engine,
            "runs": str(mc.n),
            "seeds": f"{mc.runs[0]['seed']}..{mc.runs[-1]['seed']}" if mc.runs else "",
            "confidence": f"{mc.confidence:g}",
            "verdict": mc.verdict,
        },
    )
    for s in mc.slos:
        passes = round(s.pass_rate * mc.n)
        if not _fails(passes, mc.n, mc.confidence):
            suite.cases.append(Case(s.name, classname))
            continue
        case = _slo_case(s.name, classname, s.op, s.target, s.mean, passes, mc.n)
        assert case.failure is not None
        spread = f"min {format_measured(s.name, s.min)}, max {format_measured(s.name, s.max)}"
        undefined = sum(1 for r in mc.runs if r["slos"][s.name]["measured"] is None)
        if undefined:  # the mean is over the runs where it is defined
            spread += f"; undefined in {undefined} runs (nothing finished), which fail it"
        case.failure = (
            case.failure[0],
            f"{case.failure[0]} ({spread}); alone it fails the --runs rule: the 95% "
            f"Wilson lower bound of its pass rate is below the confidence {mc.confidence:g}",
        )
        suite.cases.append(case)
    suite.cases.append(_every(classname, mc.verdict, mc.passes, mc.n, *mc.ci, mc.confidence))
    return suite


def _every(
    classname: str, verdict: str, passes: int, runs: int, low: float, high: float, conf: float
) -> Case:
    """The verdict of many runs (or one) as a case."""
    case = Case(EVERY_SLO, classname)
    if verdict != "pass":
        message = (
            "the run fails an SLO"
            if runs == 1
            else f"every SLO met in {passes}/{runs} runs; pass probability 95% interval "
            f"[{low:.2f}, {high:.2f}], its lower bound below the confidence {conf:g}"
        )
        case.failure = (message, message)
    return case


def of_sweep(
    rows: list[dict[str, Any]],
    axes: Sequence[str],
    scenario: Scenario,
    runs: int,
    confidence: float,
    base: Path | None = None,
    engine: str = "flow",
    seed: int = 0,
) -> list[Suite]:
    """A sweep: a suite per point, named by its values, its cases as :func:`of_runs`'s;
    ``base`` the design file the points change."""
    suites = []
    for row in rows:
        label = ", ".join(f"{a}={row[a]}" for a in axes)
        classname = f"gym.sweep.{label}"
        properties = {
            "design_file": str(base or ""),
            "scenario": str(scenario.name),
            "scenario_file": str(scenario._source or ""),
            "engine": engine,
            "runs": str(runs),
            "seeds": f"{seed}..{seed + runs - 1}",
        }
        suite = Suite(label, properties=properties)
        status = row.get("status")
        if status == "invalid":
            suite.cases.append(
                Case("point", classname, error=("invalid design", str(row.get("error"))))
            )
        elif status == "not run":
            suite.cases.append(Case("point", classname, skipped=str(row.get("error"))))
        else:
            suite.properties |= {"cost_units": str(row["cost_units"]), "verdict": row["verdict"]}
            for name in SLO_NAMES:
                slo = getattr(scenario.slos, name)
                if slo is None or f"{name}_pass_rate" not in row:
                    continue
                op, target = (">=", slo.min) if hasattr(slo, "min") else ("<=", slo.max)
                passes = round(row[f"{name}_pass_rate"] * runs)
                if _fails(passes, runs, confidence):
                    mean = row.get(f"{name}_mean")
                    suite.cases.append(_slo_case(name, classname, op, target, mean, passes, runs))
                else:
                    suite.cases.append(Case(name, classname))
            passes = round(row["pass_probability"] * runs)
            suite.cases.append(
                _every(
                    classname,
                    row["verdict"],
                    passes,
                    runs,
                    row["pass_ci_low"],
                    row["pass_ci_high"],
                    confidence,
                )
            )
        suites.append(suite)
    return suites


def of_optimum(opt: Optimum, scenario: Scenario) -> list[Suite]:
    """``gym optimize``: the cheapest passing design's suite (as :func:`of_runs`), or
    one failing case saying why nothing within the cost limit passes."""
    why = "\n".join(opt.why_nothing_cheaper())
    if opt.best is None:
        suite = Suite(f"cheapest design under {scenario.name}")
        suite.cases.append(
            Case(
                "a design within the cost limit passes",
                "gym.optimize",
                failure=("no design within the cost limit passes every SLO", why),
            )
        )
        return [suite]
    best = opt.best
    suite = of_runs(
        best.design,
        scenario,
        best.result,
        name=f"cheapest design under {scenario.name}: {best.cost} units ({best.describe()})",
        classname="gym.optimize",
    )
    suite.properties["cost_units"] = str(best.cost)
    suite.out = "why nothing cheaper passes:\n" + why
    return [suite]


def _properties(design: Any, scenario: Scenario) -> dict[str, str]:
    return {
        "design": str(design.name),
        "design_file": str(design._source or ""),
        "scenario": str(scenario.name),
        "scenario_file": str(scenario._source or ""),
    }


#: Characters XML 1.0 does not allow (control characters but tab, newline and carriage
#: return; surrogates; U+FFFE and U+FFFF).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """Text an XML file can hold: each character XML forbids as its escape (\\x01)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def render(suites: list[Suite], name: str = "gym") -> bytes:
    """The suites as one JUnit XML document (``<testsuites>``), UTF-8."""
    root = ET.Element(
        "testsuites",
        name=name,
        tests=str(sum(len(s.cases) for s in suites)),
        failures=str(sum(s.count("failure") for s in suites)),
        errors=str(sum(s.count("error") for s in suites)),
        skipped=str(sum(s.count("skipped") for s in suites)),
    )
    for s in suites:
        node = ET.SubElement(
            root,
            "testsuite",
            name=_xml(s.name),
            tests=str(len(s.cases)),
            failures=str(s.count("failure")),
            errors=str(s.count("error")),
            skipped=str(s.count("skipped")),
        )
        if s.properties:
            props = ET.SubElement(node, "properties")
            for key, value in s.properties.items():
                ET.SubElement(props, "property", name=key, value=_xml(value))
        for c in s.cases:
            case = ET.SubElement(node, "testcase", name=_xml(c.name), classname=_xml(c.classname))
            for tag, what in (("failure", c.failure), ("error", c.error)):
                if what is not None:
                    message, text = what
                    ET.SubElement(case, tag, message=_xml(message), type="SLO").text = _xml(text)
            if c.skipped is not None:
                ET.SubElement(case, "skipped", message=_xml(c.skipped))
        if s.out:
            ET.SubElement(node, "system-out").text = _xml(s.out)
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"


def write(path: Path, suites: list[Suite]) -> Path:
    """Write :func:`render` atomically (the path checked before any work:
    :func:`check`)."""
    from gym.core.outputs import write_file

    return write_file(path, render(suites), "--junit")


def check(path: Path, force: bool) -> Path:
    """The ``--junit`` path, checked before any work: a new ``.xml`` file, or an existing
    one with ``--force``."""
    from gym.core.outputs import check_file

    return check_file(path, "--junit", suffixes=(".xml",), force=force)
