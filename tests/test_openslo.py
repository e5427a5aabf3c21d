"""Scenarios' SLOs as OpenSLO v1 (gym.inputs.openslo, ``gym slo``, ``slos_from``).

The OpenSLO repository ships its specification as prose (README.md) and examples, no JSON
schema; the structural checks below are the specification's own rules for the fields
the gym writes (names, kinds, budgeting methods, operators, target ranges).
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gym
from gym.core.errors import GymError
from gym.core.limits import DEFAULT_CONFIDENCE
from gym.inputs import openslo, openslo_alerts
from gym.inputs.strict_yaml import dump_yaml_documents, parse_yaml_text
from gym.models import SLOs
from gym.models.alerts import Alerts, workbook
from tests.conftest import CHAOS, REFERENCE, ROOT

SCENARIOS = [*sorted((ROOT / "scenarios").rglob("*.yaml")), ROOT / "gym/data/crawler-chaos.yaml"]
RFC1123 = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def gym_cmd(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gym", *map(str, args)], capture_output=True, text=True
    )


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_round_trip_keeps_every_figure(path: Path) -> None:
    """Every shipped scenario's SLOs, written as OpenSLO and read back: the same SLOs,
    every figure equal (not close)."""
    scenario = gym.load_scenario(path)
    assert scenario.slos.count() > 0
    documents = parse_yaml_text(openslo.dump(scenario), documents=True)
    back = openslo.parse(documents, "x.yaml")
    assert back.slos == scenario.slos.model_dump(exclude_none=True)
    assert back.notes == []
    # One SLI and one SLO per gym SLO, the SLO referring to its SLI; then an alert
    # condition and its policy per alert on the availability SLO.
    alerts = scenario.alerts.resolved() if scenario.slos.availability else ()
    kinds = [d["kind"] for d in documents]
    n = scenario.slos.count()
    assert kinds == ["SLI", "SLO"] * n + ["AlertCondition", "AlertPolicy"] * len(alerts)
    for sli, slo in zip(documents[: 2 * n : 2], documents[1 : 2 * n : 2], strict=True):
        assert slo["spec"]["indicatorRef"] == sli["metadata"]["name"]
    # Every figure of the alerts too (the Workbook's, when the scenario names none).
    got = () if back.alerts is None else Alerts(conditions=back.alerts).resolved()
    assert got == alerts


@pytest.mark.parametrize("path", SCENARIOS[:3], ids=lambda p: p.name)
def test_exported_documents_follow_the_specification(path: Path) -> None:
    """The OpenSLO v1 rules for what the gym writes: apiVersion openslo/v1; names are RFC
    1123 labels of at most 63 characters; an SLI has exactly one of ratioMetric and
    thresholdMetric; an SLO's budgetingMethod is one of the three, its target in [0, 1),
    op one of lte/gte/lt/gt and given (with value) only for a threshold metric."""
    for doc in openslo.export(gym.load_scenario(path)):
        assert doc["apiVersion"] == "openslo/v1"
        assert doc["kind"] in ("SLI", "SLO", "AlertCondition", "AlertPolicy")
        name = doc["metadata"]["name"]
        assert RFC1123.fullmatch(name) and len(name) <= 63
        spec = doc["spec"]
        assert len(spec.get("description", "")) <= 1050
        if doc["kind"] == "AlertCondition":
            # severity required; condition kind burnrate with op, threshold, lookbackWindow
            assert isinstance(spec["severity"], str)
            cond = spec["condition"]
            assert cond["kind"] == "burnrate" and cond["op"] in ("lte", "gte", "lt", "gt")
            assert isinstance(cond["threshold"], int | float)
            assert re.fullmatch(r"[0-9]+[mhdwMQY]", cond["lookbackWindow"])
            continue
        if doc["kind"] == "AlertPolicy":
            # conditions: an array of at most one; notificationTargets required
            assert len(spec["conditions"]) == 1 and "notificationTargets" in spec
            continue
        if doc["kind"] == "SLI":
            assert ("ratioMetric" in spec) != ("thresholdMetric" in spec)
            continue
        assert spec["budgetingMethod"] in ("Occurrences", "Timeslices", "RatioTimeslices")
        (objective,) = spec["objectives"]
        assert 0 <= objective["target"] < 1
        assert ("op" in objective) == ("value" in objective)
        if "op" in objective:
            assert objective["op"] in ("lte", "gte", "lt", "gt")


def test_names_are_labels_whatever_the_scenario_is_called() -> None:
    """A scenario named with markup, spaces and 200 characters still gives RFC 1123
    names of at most 63 characters, and reads back."""
    for name in ("<b>Crawl & co</b> 2x!", "x" * 200, "---", "Ünïcödé"):
        scenario = gym.load_scenario(CHAOS).model_copy(update={"name": name})
        documents = openslo.export(scenario)
        for doc in documents:
            label = doc["metadata"]["name"]
            assert RFC1123.fullmatch(label) and len(label) <= 63, label
        assert openslo.parse(documents, None).slos == scenario.slos.model_dump(exclude_none=True)


def test_a_scenario_takes_its_slos_from_an_openslo_file(tmp_path: Path) -> None:
    """``slos_from`` (relative to the scenario) gives the same SLOs, so the same run and
    verdict, as the scenario with its own ``slos:``."""
    text = CHAOS.read_text()
    slos_block = re.search(r"^slos:\n(?:  .*\n)+", text, re.M)
    assert slos_block is not None
    (tmp_path / "sub").mkdir()
    export = gym_cmd("slo", "export", CHAOS, "-o", tmp_path / "sub" / "slos.yaml")
    assert export.returncode == 0, export.stderr
    scenario_file = tmp_path / "chaos.yaml"
    scenario_file.write_text(text.replace(slos_block.group(0), "slos_from: sub/slos.yaml\n"))
    own, taken = gym.load_scenario(CHAOS), gym.load_scenario(scenario_file)
    assert taken.slos == own.slos
    assert taken._slos_file == str(tmp_path / "sub" / "slos.yaml")
    a = gym.simulate(REFERENCE, own, seed=3)
    b = gym.simulate(REFERENCE, taken, seed=3)
    assert [c.to_dict() for c in a.checks] == [c.to_dict() for c in b.checks]
    # The command line reads it the same way.
    run = gym_cmd("run", REFERENCE, "--scenario", scenario_file, "--json")
    assert run.returncode == 0, run.stderr


def test_slos_from_problems_name_the_scenario_or_the_file(tmp_path: Path) -> None:
    base = CHAOS.read_text()
    both = tmp_path / "both.yaml"
    both.write_text(base + "slos_from: slos.yaml\n")
    with pytest.raises(GymError, match=r"both\.yaml: slos_from: give slos or slos_from"):
        gym.load_scenario(both)
    missing = tmp_path / "missing.yaml"
    missing.write_text(re.sub(r"^slos:\n(?:  .*\n)+", "slos_from: nope.yaml\n", base, flags=re.M))
    with pytest.raises(GymError, match=r"missing\.yaml: slos_from: 'nope\.yaml': no such file"):
        gym.load_scenario(missing)
    bad = tmp_path / "nope.yaml"
    bad.write_text("apiVersion: openslo/v1\nkind: SLO\nmetadata: {name: Bad_Name}\nspec: {}\n")
    with pytest.raises(GymError, match=r"nope\.yaml: document 1 metadata\.name: 'Bad_Name'"):
        gym.load_scenario(missing)


def _documents() -> list[dict[str, Any]]:
    return openslo.export(gym.load_scenario(CHAOS))


def _edit(path: str, value: Any) -> list[dict[str, Any]]:
    """The chaos scenario's documents with one field set (``DOC.key.key``; ``DOC`` the
    document's index; ``value`` None removes the field)."""
    documents = copy.deepcopy(_documents())
    index, *keys = path.split(".")
    node: Any = documents[int(index)]
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last: Any = int(keys[-1]) if isinstance(node, list) else keys[-1]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return documents


# (edit, the field the error names, words of its message). Documents 0/1 are
# availability's SLI and SLO, 2/3 throughput's, 8/9 the first alert's condition and policy.
REFUSED = [
    ("0.apiVersion", "openslo/v1alpha", "document 1 apiVersion", "is not read"),
    ("0.apiVersion", None, "document 1 apiVersion", "is missing"),
    ("1.kind", "AlertRule", "document 2 kind", "is not read"),
    ("1.kind", None, "document 2 kind", "is missing"),
    ("1.metadata.name", "Avail", "document 2 metadata.name", "not an OpenSLO name"),
    ("1.metadata", None, "document 2 metadata", "is required"),
    ("1.spec.budgetingMethod", "Timeslices", "spec.budgetingMethod", "Occurrences"),
    ("1.spec.budgetingMethod", None, "spec.budgetingMethod", "is required"),
    ("1.spec.alertPolicies", [{"alertPolicyRef": "x"}], "alertPolicyRef", "names no Alert"),
    ("1.spec.alertPolicies", "page", "spec.alertPolicies", "must be a list"),
    ("3.spec.alertPolicies", [{"alertPolicyRef": "x"}], "spec.alertPolicies", "availability"),
    # documents 8 and 9: the first alert's condition and its policy
    ("8.spec.condition.op", "lt", "spec.condition.op", "write op: gte"),
    ("8.spec.condition.kind", "threshold", "spec.condition.kind", "burnrate only"),
    ("8.spec.condition.threshold", 0, "spec.condition.threshold", "> 0"),
    ("8.spec.condition.lookbackWindow", "1M", "lookbackWindow", "no fixed length"),
    ("8.spec.condition.lookbackWindow", "90s", "lookbackWindow", "m, h, d or w"),
    ("8.spec.severity", None, "spec.severity", "is required"),
    ("9.spec.conditions", [], "spec.conditions", "must list"),
    ("9.spec.conditions", [{"conditionRef": "nope"}], "conditionRef", "names no AlertCondition"),
    ("1.spec.indicatorRef", "nothing", "spec.indicatorRef", "names no SLI"),
    ("1.spec.objectives", [], "spec.objectives", "must be a list of one objective"),
    ("1.spec.objectives.0.target", 1.0, "objectives[0].target", "below 1"),
    ("1.spec.objectives.0.target", "high", "objectives[0].target", "must be a number"),
    ("1.spec.objectives.0.target", None, "objectives[0]", "needs one of target"),
    ("1.spec.objectives.0.op", "lt", "objectives[0].op", "at or above"),
    ("1.spec.objectives.0.timeSliceWindow", "1m", "timeSliceWindow", "time slices"),
    ("1.spec.objectives.0.compositeWeight", 2, "compositeWeight", "composite"),
    ("0.spec.ratioMetric.raw", {"metricSource": {}}, "ratioMetric.raw", "raw ratio"),
    ("0.spec.ratioMetric.good.metricSource.type", "Prometheus", "metricSource.type", "type: gym"),
    ("0.spec.ratioMetric.total.metricSource.spec.count", "offered", "total", "write finished"),
    ("0.spec.ratioMetric.good.metricSource.spec", {"query": "x"}, "metricSource.spec", "count"),
    ("2.spec.thresholdMetric.metricSource.spec.metric", "latency", "spec.metric", "not a gym"),
    ("3.spec.objectives.0.op", "gt", "objectives[0].op", "write op: gte"),
    ("3.spec.objectives.0.value", -1, "objectives[0].value", ">= 0"),
    ("3.spec.objectives.0.value", float("nan"), "objectives[0].value", "a number"),
    ("3.spec.objectives.0.value", True, "objectives[0].value", "a number"),
]


@pytest.mark.parametrize(("edit", "value", "field", "words"), REFUSED)
def test_unsupported_or_malformed_documents_are_refused(
    edit: str, value: Any, field: str, words: str
) -> None:
    with pytest.raises(GymError) as err:
        openslo.parse(_edit(edit, value), "slos.yaml")
    (problem,) = err.value.problems
    assert problem.file == "slos.yaml"
    assert field in (problem.field or ""), problem
    assert words in problem.message, problem


def test_refusals_from_the_command_line_are_one_line(tmp_path: Path) -> None:
    """Malformed and unsupported files: one line naming the file and the field, exit 2,
    no traceback."""
    cases = {
        "timeslices.yaml": dump_yaml_documents(_edit("1.spec.budgetingMethod", "Timeslices")),
        "broken.yaml": "apiVersion: openslo/v1\nkind: [SLO\n",
        "scenario.yaml": CHAOS.read_text(),
        "empty.yaml": "",
        "text.yaml": "just words\n",
        "services.yaml": "apiVersion: openslo/v1\nkind: Service\nmetadata: {name: web}\nspec: {}\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        got = gym_cmd("slo", "import", tmp_path / name)
        assert got.returncode == 2, (name, got.stderr)
        lines = got.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / name}"), lines
        assert "Traceback" not in got.stderr and got.stdout == ""
    assert "gym slo export" in gym_cmd("slo", "import", tmp_path / "scenario.yaml").stderr
    assert "holds no SLO" in gym_cmd("slo", "import", tmp_path / "services.yaml").stderr


def test_what_is_read_beyond_the_export() -> None:
    """Forms the specification allows and the gym reads the same: an inline indicator,
    targetPercent, bad over total, an op-less ratio objective, a timeWindow (the run is
    the window), Service and DataSource documents (skipped), an empty document."""
    service = {"apiVersion": "openslo/v1", "kind": "Service", "metadata": {"name": "crawler"}}
    source = {"apiVersion": "openslo/v1", "kind": "DataSource", "metadata": {"name": "gym"}}
    sli = _documents()[0]
    bad = copy.deepcopy(sli["spec"])
    bad["ratioMetric"]["bad"] = bad["ratioMetric"].pop("good")
    bad["ratioMetric"]["bad"]["metricSource"]["spec"]["count"] = "failed"
    slo = {
        "apiVersion": "openslo/v1",
        "kind": "SLO",
        "metadata": {"name": "avail"},
        "spec": {
            "indicator": {"metadata": {"name": "inline"}, "spec": bad},
            "timeWindow": [{"duration": "4w", "isRolling": True}],
            "budgetingMethod": "Occurrences",
            "objectives": [{"targetPercent": 99.5}],
        },
    }
    got = openslo.parse([service, None, source, slo], "f.yaml")
    assert got.slos == {"availability": {"min": 99.5 / 100}}


def test_a_threshold_target_the_gym_takes_from_confidence_is_noted() -> None:
    """A threshold's target is a share of runs, which ``--confidence`` sets: a file asking
    another share is read, and told so; the export writes the default share."""
    assert _documents()[3]["spec"]["objectives"][0]["target"] == DEFAULT_CONFIDENCE
    got = openslo.parse(_edit("3.spec.objectives.0.target", 0.99), "f.yaml")
    assert got.slos["throughput_rps"] == {"min": 6000.0}
    (note,) = got.notes
    assert "--confidence 0.99" in note


def test_two_slos_of_one_measure_and_duplicate_slis_are_refused() -> None:
    documents = _documents()
    twice = [*documents, {**documents[1], "metadata": {"name": "again"}}]
    with pytest.raises(GymError, match="measures availability, as SLO crawler-chaos-avail"):
        openslo.parse(twice, None)
    with pytest.raises(GymError, match="names two SLIs"):
        openslo.parse([documents[0], *documents[:2]], None)


def test_export_command(tmp_path: Path) -> None:
    """To stdout by default; ``-o`` writes the file and refuses to replace one without
    --force; an availability of 1 (OpenSLO targets are below 1) and a scenario with no
    SLOs are refused before anything is written."""
    out = gym_cmd("slo", "export", CHAOS)
    assert out.returncode == 0
    assert openslo.parse(parse_yaml_text(out.stdout, documents=True), None).slos == (
        gym.load_scenario(CHAOS).slos.model_dump(exclude_none=True)
    )
    target = tmp_path / "slos.yaml"
    assert gym_cmd("slo", "export", CHAOS, "-o", target).returncode == 0
    assert target.read_text() == out.stdout
    again = gym_cmd("slo", "export", CHAOS, "-o", target)
    assert again.returncode == 2 and "--force" in again.stderr
    assert gym_cmd("slo", "export", CHAOS, "-o", target, "--force").returncode == 0
    perfect = tmp_path / "perfect.yaml"
    perfect.write_text(CHAOS.read_text().replace("{min: 0.97}", "{min: 1}"))
    refused = gym_cmd("slo", "export", perfect, "-o", tmp_path / "p.yaml")
    assert refused.returncode == 2 and "slos.availability.min" in refused.stderr
    assert not (tmp_path / "p.yaml").exists()
    none = tmp_path / "none.yaml"
    none.write_text(re.sub(r"^slos:\n(?:  .*\n)+", "", CHAOS.read_text(), flags=re.M))
    assert "sets no SLO" in gym_cmd("slo", "export", none).stderr


def test_import_command_prints_the_slos_block(tmp_path: Path) -> None:
    target = tmp_path / "slos.yaml"
    target.write_text(openslo.dump(gym.load_scenario(CHAOS)))
    got = gym_cmd("slo", "import", target)
    assert got.returncode == 0
    expected = {
        "slos": {
            "availability": {"min": 0.97},
            "throughput_rps": {"min": 6000},
            "peak_saturation": {"max": 0.9},
            "cost_units": {"max": 9},
        },
        "alerts": {"conditions": [a.model_dump(exclude_none=True) for a in workbook()]},
    }
    assert parse_yaml_text(got.stdout) == expected


def test_alert_documents_beyond_the_export() -> None:
    """A policy and its condition inline in the SLO, an alertAfter of 0m (none), a
    condition without the short-window annotation (one window): read. Policies and
    conditions no SLO lists: noted, not read."""
    documents = _documents()[:8]
    condition = {
        "kind": "AlertCondition",
        "metadata": {"name": "fast"},
        "spec": {
            "severity": "page",
            "condition": {
                "kind": "burnrate",
                "op": "gte",
                "threshold": 10,
                "lookbackWindow": "1h",
                "alertAfter": "0m",
            },
        },
    }
    documents[1] = copy.deepcopy(documents[1])
    documents[1]["spec"]["alertPolicies"] = [
        {"kind": "AlertPolicy", "metadata": {"name": "p"}, "spec": {"conditions": [condition]}}
    ]
    stray = {"apiVersion": "openslo/v1", **copy.deepcopy(condition)}
    stray["metadata"] = {"name": "stray"}
    got = openslo.parse([*documents, stray], "f.yaml")
    assert got.alerts == [
        {"name": "fast", "severity": "page", "burn_rate": 10.0, "long_window": "1h"}
    ]
    assert got.notes == ["AlertCondition stray is listed by no SLO's alertPolicies: not read"]


def test_a_scenario_takes_its_alerts_from_the_openslo_file(tmp_path: Path) -> None:
    """slos_from brings the availability SLO's alert policies as the scenario's alerts
    (its own time_scale kept); alerts.conditions in the scenario as well is refused."""
    exported = _documents()
    exported[8]["spec"]["condition"]["threshold"] = 20
    (tmp_path / "slos.yaml").write_text(dump_yaml_documents(exported))
    text = re.sub(r"^slos:\n(?:  .*\n)+", "slos_from: slos.yaml\n", CHAOS.read_text(), flags=re.M)
    scenario_file = tmp_path / "s.yaml"
    scenario_file.write_text(text + "alerts: {time_scale: 100}\n")
    s = gym.load_scenario(scenario_file)
    first = s.alerts.resolved()[0]
    assert (first.name, first.burn_rate, first.short_window) == ("page-1h", 20.0, "5m")
    assert s.alerts.time_scale == 100
    scenario_file.write_text(text + "alerts: {conditions: none}\n")
    with pytest.raises(GymError, match=r"alerts\.conditions: the alerts come from slos\.yaml"):
        gym.load_scenario(scenario_file)


def _scenario_taking(tmp_path: Path, slos: str, extra: str = "") -> Path:
    """The chaos scenario with its slos: taken from ``slos`` (a file in tmp_path)."""
    text = re.sub(r"^slos:\n(?:  .*\n)+", f"slos_from: {slos}\n", CHAOS.read_text(), flags=re.M)
    path = tmp_path / "taking.yaml"
    path.write_text(text + extra)
    return path


def test_alerts_listed_need_the_availability_slo_the_file_may_not_give(tmp_path: Path) -> None:
    """A scenario listing alerts, whose slos_from file sets no availability SLO: refused
    when it is read (exit 2), not when a batch of runs reads it again."""
    cost_only = gym.load_scenario(CHAOS).model_copy(
        update={"slos": SLOs.model_validate({"cost_units": {"max": 9}})}
    )
    (tmp_path / "c.yaml").write_text(openslo.dump(cost_only))
    alert = "alerts: {conditions: [{name: fast, burn_rate: 2, long_window: 1h}]}\n"
    scenario = _scenario_taking(tmp_path, "c.yaml", alert)
    with pytest.raises(GymError, match="watch the availability SLO"):
        gym.load_scenario(scenario)
    got = gym_cmd("run", REFERENCE, "--scenario", scenario, "--runs", "3", "--workers", "1")
    assert got.returncode == 2 and "Traceback" not in got.stderr


def test_no_alerts_come_back_as_none(tmp_path: Path) -> None:
    """alerts: none is exported as an empty alertPolicies, read back as no alert."""
    none = gym.load_scenario(CHAOS).model_copy(
        update={"alerts": Alerts.model_validate({"conditions": "none"})}
    )
    (tmp_path / "n.yaml").write_text(openslo.dump(none))
    taken = gym.load_scenario(_scenario_taking(tmp_path, "n.yaml"))
    assert taken.alerts.resolved() == ()


def test_alert_names_that_become_one_openslo_name_are_refused() -> None:
    alerts = [
        {"name": "page 1h", "burn_rate": 14.4, "long_window": "1h"},
        {"name": "page-1h", "burn_rate": 6, "long_window": "6h"},
    ]
    twins = gym.load_scenario(CHAOS).model_copy(
        update={"alerts": Alerts.model_validate({"conditions": alerts})}
    )
    with pytest.raises(GymError, match="'page-1h' and 'page 1h' both become the OpenSLO name"):
        openslo.export(twins)


def test_target_percent_reads_as_written() -> None:
    for percent, target in ((99.9, 0.999), (99.99, 0.9999), (97, 0.97), (0, 0.0)):
        got = openslo.parse(_edit("1.spec.objectives.0", {"targetPercent": percent}), None)
        assert got.slos["availability"] == {"min": target}


def test_alert_problems_name_the_openslo_field(tmp_path: Path) -> None:
    """An alert the scenario would refuse is refused reading the file, by its OpenSLO
    field, by gym slo import as by slos_from."""
    cases = {
        # the short window (an annotation) as long as the lookback window
        "short.yaml": (
            _edit("8.metadata.annotations", {openslo_alerts.SHORT: "1h"}),
            "metadata.annotations.crawler-slo-gym/short-window: 1h must be shorter",
        ),
        "severity.yaml": (_edit("8.spec.severity", "x" * 60), "spec.severity: string should"),
        "twice.yaml": (
            _edit("1.spec.alertPolicies", [{"alertPolicyRef": "crawler-chaos-page-1h"}] * 2),
            "is read twice",
        ),
        "digits.yaml": (_edit("8.spec.condition.lookbackWindow", "99999999999w"), "7 digits"),
    }
    for name, (documents, words) in cases.items():
        (tmp_path / name).write_text(dump_yaml_documents(documents))
        got = gym_cmd("slo", "import", tmp_path / name)
        assert got.returncode == 2 and words in got.stderr, (name, got.stderr)
        with pytest.raises(GymError, match=re.escape(words)):
            gym.load_scenario(_scenario_taking(tmp_path, name))


def test_notification_targets_are_skipped() -> None:
    target = {
        "apiVersion": "openslo/v1",
        "kind": "AlertNotificationTarget",
        "metadata": {"name": "on-call"},
        "spec": {"target": "email"},
    }
    documents = _edit("9.spec.notificationTargets", [{"targetRef": "on-call"}])
    assert openslo.parse([*documents, target], None).alerts is not None
