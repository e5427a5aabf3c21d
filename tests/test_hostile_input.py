"""Hostile input, the input side: special files, YAML 1.1 oddities, numbers as people write
them, limits on every input path (files and --set/--vary values), timeline extremes, and
catalogs the optimizer must cope with. Each refusal: exit 2, one line naming the file and
the field, no traceback; each accepted form: the value a reader of YAML 1.2 expects."""

from __future__ import annotations

import json
import math
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

import gym
from gym.analysis.estimate import Inputs, estimate
from gym.cli import app
from gym.core.errors import GymError
from gym.explore import optimize, unit_space
from gym.explore.sweep import parse_vary
from gym.inputs.loading import apply_overrides, parse_override
from gym.inputs.strict_yaml import MAX_DEPTH, MAX_FILE_BYTES, MAX_VALUES, parse_yaml_text
from gym.models import Scenario
from gym.models.scenario import MAX_DURATION_S, MAX_FAULTS, MAX_STAGES
from gym.system.costing import units
from tests.conftest import CHAOS, REFERENCE, design, scenario

runner = CliRunner()

DESIGN: dict[str, Any] = {
    "name": "hostile",
    "frontier": {"drain_rps": 30000, "buffer": 80000},
    "fetchers": {"replicas": 4, "rps_per_replica": 4000},
    "cache": {"hit_ratio": 0.92},
    "page_store": {"rps": 25000},
    "dedup": {"content_hash": False},
}
SCENARIO: dict[str, Any] = {
    "duration_s": 10,
    "base_rps": 1000,
    "load": [{"at_s": 0, "multiplier": 1}],
    "faults": [{"kind": "stall", "target": "cache", "at_s": 2, "for_s": 1}],
}


def _emit(data: Any, path: tuple[str, ...], raw: str, indent: str = "") -> str:
    """Block YAML for ``data`` with the value at ``path`` written as ``raw``, verbatim."""
    lines = []
    for key, value in data.items():
        if path and key == path[0] and len(path) == 1:
            lines.append(f"{indent}{key}: {raw}\n")
        elif isinstance(value, dict):
            sub = path[1:] if path and key == path[0] else ()
            lines.append(f"{indent}{key}:\n" + _emit(value, sub, raw, indent + "  "))
        else:
            lines.append(f"{indent}{key}: {json.dumps(value)}\n")
    return "".join(lines)


def _write(tmp_path: Path, field: str, raw: str, base: dict[str, Any] = DESIGN) -> Path:
    path = tmp_path / "d.yaml"
    path.write_text(_emit(base, tuple(field.split(".")), raw))
    return path


def _one_line(res: Any, file: str | None, field: str | None, words: str) -> None:
    """Exit 2, no traceback, and a line naming the file, the field and the words."""
    out = res.stdout + res.stderr
    assert res.exit_code == 2, out
    assert "Traceback" not in out
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines, out
    hit = [ln for ln in lines if words in ln]
    assert hit, lines
    if file is not None:
        assert file in hit[0], hit
    if field is not None:
        assert f": {field}:" in hit[0] or f": {field} " in hit[0], hit


# -- class 2: special files -------------------------------------------------------------


def _special(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        path = tmp_path / "fifo.yaml"
        os.mkfifo(path)
        return str(path)
    if kind == "socket":
        path = Path(f"/tmp/gym-test-{os.getpid()}.sock")
        path.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
        return str(path)
    if kind == "symlink to /dev/zero":
        path = tmp_path / "zero.yaml"
        path.symlink_to("/dev/zero")
        return str(path)
    if kind == "directory":
        return str(tmp_path)
    return kind


SPECIAL = ["/dev/zero", "/dev/urandom", "/dev/null", "fifo", "socket", "symlink to /dev/zero"]


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_files_are_refused_unopened(kind: str, tmp_path: Path) -> None:
    """Devices, FIFOs, sockets and links to them are refused as designs and as scenarios,
    without reading them (a FIFO with no writer would hang; /dev/zero never ends). The
    FIFO runs in a child process with a generous time-out, so a regression hangs no CI."""
    path = _special(kind, tmp_path)
    try:
        _refused_unopened(kind, path)
    finally:
        if kind == "socket":
            Path(path).unlink(missing_ok=True)


def _refused_unopened(kind: str, path: str) -> None:
    for args in (["validate", path], ["run", str(REFERENCE), "--scenario", path]):
        if kind != "fifo":
            _one_line(runner.invoke(app, args), path, None, "not a regular file")
            continue
        res = subprocess.run(
            [sys.executable, "-m", "gym", *args],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr
        assert path in res.stderr and "not a regular file" in res.stderr, res.stderr


def test_dev_stdin_is_refused_when_it_is_not_a_file() -> None:
    """/dev/stdin (a pipe, a terminal or /dev/null here) is not read as a design."""
    res = subprocess.run(
        [sys.executable, "-m", "gym", "validate", "/dev/stdin"],
        capture_output=True,
        text=True,
        timeout=120,
        input="",
    )
    assert res.returncode == 2 and "not a regular file" in res.stderr, res.stderr


def test_a_directory_is_refused(tmp_path: Path) -> None:
    res = runner.invoke(app, ["validate", str(tmp_path)])
    _one_line(res, str(tmp_path), None, "is a directory")


def test_reading_stops_at_the_limit(tmp_path: Path) -> None:
    """A sparse 64 GiB file is refused after reading at most the limit plus one byte."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.truncate(64 << 30)
    res = runner.invoke(app, ["validate", str(path)])
    _one_line(res, str(path), None, f"over {MAX_FILE_BYTES:,} bytes")


def test_files_whose_size_is_not_reported_cannot_pass_the_limit(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A regular file that reports size 0 (as /proc files do) but holds more than the
    limit is refused: the loader counts what it reads, not what stat says."""
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * (MAX_FILE_BYTES + 10) + b"\n")
    real_fstat = os.fstat

    def zero_size(fd: int) -> Any:
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 0, *st[7:]))

    monkeypatch.setattr(os, "fstat", zero_size)
    with pytest.raises(GymError, match="over 1,048,576 bytes"):
        gym.load_design(path)


# -- class 5: the limits of a file, for --set and --vary values too ---------------------

ALIAS_BOMB = (
    "{a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], "
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], "
    "e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]}"
)

SET_CASES = [
    ("alias bomb", "cache", ALIAS_BOMB, "expands to more than"),
    ("deep brackets", "cache.hit_ratio", "[" * 5000 + "]" * 5000, "nested more than 64"),
    ("deep mappings", "cache", "{a: " * 100 + "1" + "}" * 100, "nested more than 64"),
    ("0x_", "fetchers.replicas", "0x_", "valid integer"),
    ("1_000", "fetchers.replicas", "1_000", "valid integer"),
    ("0b101", "fetchers.replicas", "0b101", "valid integer"),
    ("sexagesimal", "fetchers.replicas", "1:30", "valid integer"),
    ("fullwidth digit", "fetchers.replicas", "４", "valid integer"),
    ("bad date as text", "cache.hit_ratio", "2020-13-45", "valid number"),
    ("explicit bad date", "name", "!!timestamp 2020-13-45", "the tag !!timestamp is not allowed"),
    ("explicit bad int", "fetchers.replicas", "!!int 0x_", "the tag !!int is not allowed"),
    ("explicit bad bool", "dedup.content_hash", "!!bool maybe", "the tag !!bool is not allowed"),
    ("a map tag on a list", "cache", "!!map [1]", "the tag !!map is not allowed"),
    ("a local tag", "cache", "!local {}", "the tag !local is not allowed"),
    ("5,000 digits", "fetchers.replicas", "9" * 5000, "5,000 digits is too large"),
    ("a count of 4.5", "fetchers.replicas", "4.5", "valid integer"),
    ("a count of 1e30", "frontier.buffer", "1e30", "valid integer"),
    ("1e400", "page_store.rps", "1e400", "finite"),
    ("-1e400", "page_store.rps", "-1e400", "finite"),
    (".nan", "page_store.rps", ".nan", "finite"),
    ("nan as text", "page_store.rps", "nan", "valid number"),
    ("yes", "dedup.content_hash", "yes", "must be true or false"),
    ("off", "dedup.content_hash", "off", "must be true or false"),
    ("a list key", "cache", "{[a, b]: 1}", "a key must be a name, not a list"),
    ("a mapping key", "cache", "{{a: 1}: 1}", "a key must be a name, not a mapping"),
    ("a number key", "cache", "{1: 1}", "a key must be a name, not the number 1"),
    ("python tag", "fetchers", "!!python/object:os.system {}", "is not allowed"),
]


@pytest.mark.parametrize(
    ("field", "raw", "words"), [c[1:] for c in SET_CASES], ids=[c[0] for c in SET_CASES]
)
@pytest.mark.parametrize("source", ["file", "--set"])
def test_hostile_values_in_files_and_in_set(
    source: str, field: str, raw: str, words: str, tmp_path: Path
) -> None:
    """The same hostile value, written in a file or given with --set: exit 2, one line
    naming the file and the field, no traceback."""
    if source == "file":
        path = _write(tmp_path, field, raw)
        res = runner.invoke(app, ["validate", str(path), "--scenario", str(CHAOS)])
        _one_line(res, str(path), None, words)
    else:
        res = runner.invoke(
            app, ["validate", str(REFERENCE), "--scenario", str(CHAOS), "--set", f"{field}={raw}"]
        )
        _one_line(res, str(REFERENCE), field, words)
        assert "--set" in res.stderr


VARY_CASES = [c for c in SET_CASES if c[0] in ("deep brackets", "deep mappings", "5,000 digits")]


@pytest.mark.parametrize(
    ("field", "raw", "words"), [c[1:] for c in VARY_CASES], ids=[c[0] for c in VARY_CASES]
)
def test_vary_values_have_the_limits_of_a_file(field: str, raw: str, words: str) -> None:
    """A --vary list item is held to the same limits, and the message names --vary."""
    with pytest.raises(GymError) as info:
        parse_vary(f"{field}={raw}")
    (problem,) = info.value.problems
    assert problem.field == field and words in problem.message and "--vary" in problem.message


def test_a_set_value_over_the_size_limit_is_refused() -> None:
    """--set values are held to the file size limit (from Python, where no command line
    bounds them)."""
    with pytest.raises(GymError, match="the limit is 1,048,576"):
        parse_override("name=" + "x" * (MAX_FILE_BYTES + 1))


def test_many_set_values_together_are_held_to_the_value_limit() -> None:
    """Each --set value small, together over the value limit: refused once combined."""
    item = "[" + ",".join(["1"] * 1000) + "]"
    sets = [f"cache.x{i}={item}" for i in range(MAX_VALUES // 1000 + 1)]
    with pytest.raises(GymError, match="expands to more than"):
        apply_overrides({}, sets, "d.yaml")


def test_a_set_path_deeper_than_the_limit_is_refused() -> None:
    with pytest.raises(GymError, match="more than 64 keys"):
        parse_override(".".join(["a"] * (MAX_DEPTH + 1)) + "=1")


def test_set_text_that_is_not_yaml_is_text() -> None:
    """An unclosed bracket or a colon in a name is text, not a crash and not a refusal."""
    assert parse_override("name=[draft")[1] == "[draft"
    assert parse_override("name=a: b: c")[1] == "a: b: c"


def test_a_document_too_large_is_refused_while_it_is_read() -> None:
    """A file of 1 MiB of list items is refused once it holds more values than any input
    needs, without building the rest; so is nesting past the depth limit."""
    text = "x: [" + ", ".join(["1"] * 300_000) + "]\n"
    with pytest.raises(GymError, match=f"more than {MAX_VALUES:,} values"):
        parse_yaml_text(text, "f.yaml")
    with pytest.raises(GymError, match="nested more than 64"):
        parse_yaml_text("x: " + "- " * 0 + "[" * 300_000, "f.yaml")


# -- class 6: numbers as people write them; merge keys ----------------------------------

ACCEPTED = [
    ("1e9 as a rate", "frontier.drain_rps", "3e4", 30000.0),
    ("1e-1 as a ratio", "cache.hit_ratio", "9.2e-1", 0.92),
    ("capital E", "page_store.rps", "2.5E+4", 25000.0),
    ("leading dot", "cache.hit_ratio", ".92", 0.92),
    ("octal 0o", "frontier.buffer", "0o234200", 80000),
    ("hex", "frontier.buffer", "0x13880", 80000),
    ("leading zero is decimal", "frontier.buffer", "080000", 80000),
    ("a date is text", "name", "2020-12-01", "2020-12-01"),
    ("yes is text", "name", "yes", "yes"),
    ("1:30 is text", "name", "1:30", "1:30"),
    ("a count as 8e4", "frontier.buffer", "8e4", 80000),
    ("a count as 4.0", "fetchers.replicas", "4.0", 4),
    ("True", "dedup.content_hash", "True", True),
    ("!!str keeps text", "name", "!!str 2020", "2020"),
    ("FALSE", "dedup.content_hash", "FALSE", False),
]


def _get(model: Any, field: str) -> Any:
    for part in field.split("."):
        model = getattr(model, part)
    return model


@pytest.mark.parametrize(
    ("field", "raw", "value"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED]
)
def test_yaml_1_2_numbers_and_text(field: str, raw: str, value: Any, tmp_path: Path) -> None:
    """YAML 1.2 forms give the value a YAML 1.2 reader expects, in a file and in --set."""
    from_file = gym.load_design(_write(tmp_path, field, raw))
    from_set = gym.load_design(REFERENCE, [f"{field}={raw}"])
    for got in (_get(from_file, field), _get(from_set, field)):
        assert got == value and type(got) is type(value)


def test_negative_zero_is_zero(tmp_path: Path) -> None:
    """-0.0 is read as 0.0: no '-0' in names or output."""
    sc = dict(SCENARIO, load=[{"at_s": 0, "multiplier": 1}])
    path = tmp_path / "s.yaml"
    path.write_text(_emit(sc, ("load",), "[{at_s: -0.0, multiplier: -0.0}]"))
    loaded = gym.load_scenario(path)
    assert math.copysign(1, loaded.load[0].at_s) == 1
    assert math.copysign(1, loaded.load[0].multiplier) == 1


def test_tiny_numbers_underflow_to_a_refusal_not_a_zero_cost(tmp_path: Path) -> None:
    """1e-400 reads as 0 and a rate must be at least 0.001/s; the smallest rate costs a
    unit, not 0."""
    res = runner.invoke(app, ["validate", str(_write(tmp_path, "page_store.rps", "1e-400"))])
    _one_line(res, None, "page_store.rps", "greater than or equal to 0.001")
    tiny = design(page_store={"rps": 0.001}, frontier={"drain_rps": 0.001, "buffer": 1})
    per = units(tiny, gym.load_scenario(CHAOS).catalog)
    assert per["page_store"] == 1 and per["frontier"] == 1


def test_merge_keys_let_a_mapping_override(tmp_path: Path) -> None:
    """`<<: *base` then a key of its own: the own key wins, no duplicate-key error; a key
    written twice by hand is still refused."""
    text = (
        "x-base: &base {drain_rps: 30000, buffer: 80000}\n"
        "frontier:\n  <<: *base\n  buffer: 90000\n"
        "fetchers: {replicas: 4, rps_per_replica: 4000}\n"
        "cache: {hit_ratio: 0.92}\npage_store: {rps: 25000}\n"
    )
    data = parse_yaml_text(text, "m.yaml")
    assert data["frontier"] == {"drain_rps": 30000, "buffer": 90000}
    many = parse_yaml_text("a: &a {x: 1, y: 1}\nb: &b {x: 2, z: 2}\nc: {<<: [*a, *b], y: 3}\n")
    assert many["c"] == {"x": 1, "y": 3, "z": 2}  # the first merged mapping wins
    with pytest.raises(GymError, match="duplicate key 'buffer'"):
        parse_yaml_text(text.replace("buffer: 90000", "buffer: 90000\n  buffer: 1"), "m.yaml")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--page-kb", "inf"], "--page-kb"),
        (["--page-kb", "1e300"], "--page-kb"),
        (["--urls", "1e400"], "--urls"),
        (["--pages-per-s", "1e300"], "--pages-per-s"),
        (["--compression", "inf"], "--compression"),
    ],
)
def test_estimate_refuses_infinite_inputs(args: list[str], option: str) -> None:
    """gym estimate: an infinite or absurd input is exit 2 naming the option, never a
    crash in the JSON writer."""
    res = runner.invoke(app, ["estimate", "--json", *args])
    _one_line(res, None, option, "must be from")


def test_estimate_inputs_are_checked_from_python() -> None:
    with pytest.raises(GymError, match="--page-kb"):
        Inputs(page_kb=math.nan)


# -- class 5: timeline extremes, and the number of events -------------------------------

TIMELINE = [
    ("for_s 1e307", {"faults": [{"kind": "stall", "target": "cache", "at_s": 1, "for_s": 1e307}]},
     "faults[0].for_s", "less than or equal to 86400"),
    ("crash for_s 1e307", {"faults": [{"kind": "crash", "at_s": 1, "for_s": 1e307}]},
     "faults[0].for_s", "less than or equal to 86400"),
    ("duration 1e-300", {"duration_s": 1e-300}, "duration_s", "greater than or equal to 1"),
    ("duration 0.5", {"duration_s": 0.5}, "duration_s", "greater than or equal to 1"),
    ("duration 1e300", {"duration_s": 1e300}, "duration_s", "less than or equal to 86400"),
    ("at_s 1e300", {"faults": [{"kind": "crash", "at_s": 1e300}]}, "faults[0].at_s",
     "less than or equal to 86400"),
    ("stage at 1e300", {"load": [{"at_s": 0, "multiplier": 1}, {"at_s": 1e300, "multiplier": 2}]},
     "load[1].at_s", "less than or equal to 86400"),
    ("base_rps 1e-300", {"base_rps": 1e-300}, "base_rps", "greater than or equal to 0.001"),
    ("mean_ms 5e-324", {"resolver": {"service": {"mean_ms": 5e-324}}},
     "resolver.service.mean_ms", "greater than or equal to 0.001"),
    ("catalog rate 5e-324", {"catalog": {"page_store": {"rps": 5e-324}}},
     "catalog.page_store.rps", "greater than or equal to 0.001"),
    ("catalog buffer 1e30", {"catalog": {"frontier": {"buffer": 10**30}}},
     "catalog.frontier.buffer", "less than or equal to"),
    (f"{MAX_FAULTS + 1} faults",
     {"faults": [{"kind": "crash", "at_s": 1}] * (MAX_FAULTS + 1)}, "faults",
     f"at most {MAX_FAULTS} items"),
    (f"{MAX_STAGES + 1} stages",
     {"load": [{"at_s": i * 0.01, "multiplier": 1} for i in range(MAX_STAGES + 1)]}, "load",
     f"at most {MAX_STAGES} items"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "field", "words"), [c[1:] for c in TIMELINE], ids=[c[0] for c in TIMELINE]
)
def test_timeline_extremes_are_refused_with_the_field(
    change: dict[str, Any], field: str, words: str, tmp_path: Path
) -> None:
    """Times, durations and counts beyond the documented bounds: exit 2 naming the field
    (before, these crashed the timeline or ran for minutes)."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, **change}))
    res = runner.invoke(app, ["run", str(REFERENCE), "--scenario", str(path)])
    _one_line(res, str(path), field, words)


@pytest.mark.parametrize("engine", ["flow", "request"])
def test_the_extremes_allowed_run(engine: str) -> None:
    """Everything at its bound still runs and keeps the identity: the shortest run, faults
    to the end of a day, the most faults and stages, the tiniest and the longest times."""
    n = min(MAX_FAULTS, MAX_STAGES)
    faults: list[dict[str, Any]] = [
        {"kind": "stall", "target": "cache", "at_s": 0.5, "for_s": MAX_DURATION_S},
        {"kind": "crash", "at_s": 1e-300, "for_s": 1e-300},
    ]
    faults += [{"kind": "crash", "at_s": 0.9 * i / n, "for_s": 0.001} for i in range(n - 2)]
    sc = scenario(
        duration_s=1,
        base_rps=0.001,
        load=[{"at_s": i / n, "multiplier": 1 + i % 3} for i in range(n)],
        faults=faults,
        resolver={"rps": 1e9, "service": {"mean_ms": 0.001}},
    )
    r = gym.simulate(design(), sc, engine=engine)
    m = r.metrics
    assert m.offered == m.served + m.failed + m.in_flight_end + m.skipped


# -- class 7: the optimizer under any catalog the docs allow ----------------------------

CATALOGS = [
    ("frontier drain 6e8", {"frontier": {"drain_rps": 6e8}}),
    ("frontier buffer 1e12", {"frontier": {"buffer": 10**12}}),
    ("store 1e9", {"page_store": {"rps": 1e9}}),
    ("writer 1e12", {"async_writer": {"buffer": 10**12}}),
    ("hit ratio 1 - 1e-13", {"cache": {"base_hit_ratio": 0.9999999999999}}),
    ("hit ratio 1 - 1e-8", {"cache": {"base_hit_ratio": 0.99999999}}),
]


@pytest.mark.parametrize("catalog", [c[1] for c in CATALOGS], ids=[c[0] for c in CATALOGS])
def test_optimizer_candidates_under_extreme_catalogs(catalog: dict[str, Any]) -> None:
    """The optimizer never builds a candidate its own models refuse: unit sets no design
    file can say (beyond a field's limit, or a hit ratio indistinguishable from 1) are
    skipped and counted; every candidate it runs costs exactly its units."""
    sc = Scenario.model_validate(
        {
            "duration_s": 1,
            "base_rps": 100,
            "slos": {"throughput_rps": {"min": 1e12}},  # nothing passes: every cost is tried
            "catalog": catalog,
        }
    )
    opt = optimize.search(sc, runs=1, max_cost=7)
    assert opt.best is None and opt.skipped > 0
    for u in unit_space.unit_sets(6):
        try:
            d = unit_space.unit_design(u, sc, None, "x")
        except GymError as err:
            assert err.problems[0].field is not None and err.problems[0].field.startswith(
                ("frontier", "page_store", "async_writer", "cache")
            )
            continue
        got = {k: v for k, v in units(d, sc.catalog).items() if k != "resolver"}
        assert got == {k: v for k, v in u.items() if v}
        assert gym.simulate(d, sc).metrics is not None


def test_optimize_cli_with_an_extreme_catalog_is_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "duration_s: 1\nbase_rps: 100\nslos: {throughput_rps: {min: 1e12}, cost_units: {max: 6}}\n"
        "catalog: {frontier: {drain_rps: 6e8}, cache: {base_hit_ratio: 0.9999999999999}}\n"
    )
    res = runner.invoke(app, ["optimize", "--scenario", str(path), "--runs", "1", "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert data["found"] is False and data["designs_skipped"] > 0


def test_special_file_kinds_are_named() -> None:
    """The message says what the path is (a device, a pipe), so the user sees the mistake."""
    from gym.inputs.strict_yaml import _file_kind

    assert _file_kind(stat.S_IFCHR) == "a character device"
    assert _file_kind(stat.S_IFIFO) == "a pipe (FIFO)"
    assert _file_kind(stat.S_IFSOCK) == "a socket"


TAGS = ["", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp"]
TAGS += ["!!set", "!!omap", "!!pairs", "!!seq", "!!map", "!!merge", "!!value", "!local", "!"]
ODD = ["abc", "1", "''", "[1]", "{a: 1}", "2020-13-45", "yes", "~", "0x_", "1e999", "-.inf"]
ODD += ["aGk=", "[a: 1]", "<<", "=", "1:2:3", "+", ".", "0o", "0x", "0o8", "1e", ".e5", "&a 1"]


def test_explicit_tags_and_odd_scalars_never_crash() -> None:
    """Every explicit tag on every odd scalar, as a value, a key, a merge and a --set
    value: a value or a GymError, never another exception (PyYAML's own constructors
    raised KeyError for !!bool maybe, AttributeError for !!timestamp abc)."""
    for tag in TAGS:
        for raw in ODD:
            value = f"{tag} {raw}".strip()
            for text in (
                f"x: {value}\n",
                f"? {value}\n: 1\n",
                f"a: {{x: 1}}\nb: {{<<: {value}}}\n",
            ):
                try:
                    parse_yaml_text(text, "f.yaml")
                except GymError as err:
                    assert all(p.file == "f.yaml" for p in err.problems)
            try:
                parse_override(f"name={value}")
            except GymError as err:
                assert all(p.field == "name" for p in err.problems)


@pytest.mark.parametrize(
    "bounds", ["１..３", "1_0..2_0", "0x2..0x4", "2..4:0x1", "9" * 101 + "..1"]
)
def test_vary_ranges_take_ascii_whole_numbers(bounds: str) -> None:
    """A --vary range's bounds are written like YAML 1.2 integers: no other scripts'
    digits, no _ separators, no hex, not hundreds of digits."""
    with pytest.raises(GymError, match="a range takes whole numbers"):
        parse_vary(f"fetchers.replicas={bounds}")
    assert list(parse_vary("fetchers.replicas= 2..4 ")[1]) == [2, 3, 4]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_set_text(text: str) -> None:
    """Any --set text: a path and a value, or GymError with one-line problems."""
    try:
        parse_override(text)
        apply_overrides(yaml.safe_load(REFERENCE.read_text()), [text], "d.yaml")
    except GymError as err:
        assert err.problems and all("\n" not in str(p) for p in err.problems)


@pytest.mark.parametrize(
    "name", ["1e9", "0o17", "0x1F", "2020-12-01", "yes", "null", "true", "1:30"]
)
def test_files_the_gym_writes_load_back_the_same(name: str) -> None:
    """Resolved inputs (--out) and optimize -o are written so that YAML 1.2 reads them
    back as written: a name that looks like a number stays a name."""
    from gym.inputs.strict_yaml import dump_yaml
    from gym.report.files import resolved_yaml

    d = design(name=name)
    assert gym.models.Design.model_validate(parse_yaml_text(resolved_yaml(d))) == d
    assert parse_yaml_text(dump_yaml(unit_space.design_mapping(d)))["name"] == name


def test_estimate_takes_any_valid_scenario_at_its_extremes() -> None:
    """gym estimate refuses absurd options, but never a scenario or design that loads:
    the largest load, the shortest crawl delay, the most hosts."""
    sc = scenario(
        base_rps=1e9,
        load=[{"at_s": 0, "multiplier": 1000}],
        web={"hosts": 10**10, "crawl_delay_s": 0.001},
    )
    assert sc.web.crawl_delay_s == 0.001
    figures = estimate(
        Inputs(
            pages_per_s=sc.base_rps,
            peak_pages_per_s=sc.base_rps * 1000,
            hit_ratio=1.0,
            crawl_delay_s=sc.web.crawl_delay_s,
        )
    )
    assert all(math.isfinite(f.value) for f in figures)
    with pytest.raises(ValidationError):
        scenario(web={"crawl_delay_s": 1e-300})


_time = st.floats(min_value=0, max_value=MAX_DURATION_S, allow_subnormal=True)


@settings(max_examples=60, deadline=None)
@given(
    duration=st.floats(min_value=1, max_value=30),
    base=st.sampled_from([0.001, 1.0, 6000.0, 1e6]),
    starts=st.lists(_time, max_size=4),
    lengths=st.lists(
        st.floats(min_value=5e-324, max_value=MAX_DURATION_S, allow_subnormal=True),
        min_size=4,
        max_size=4,
    ),
    factor=st.floats(min_value=1, max_value=1e6),
)
def test_every_scenario_within_the_bounds_runs(
    duration: float, base: float, starts: list[float], lengths: list[float], factor: float
) -> None:
    """Any scenario the models accept runs to a result that keeps the identity: times at
    the bounds (subnormal for_s, faults to the end of a day) crash nothing."""
    at = sorted({min(s, duration * 0.999) for s in starts})
    faults: list[dict[str, Any]] = []
    for i, a in enumerate(at):
        kind = ("crash", "stall", "slowdown", "crash")[i]
        fault: dict[str, Any] = {"kind": kind, "at_s": a, "for_s": lengths[i]}
        if kind != "crash":
            fault["target"] = ("frontier", "cache", "resolver", "page_store")[i]
        if kind == "slowdown":
            fault["factor"] = factor
        faults.append(fault)
    load = [{"at_s": 0.0, "multiplier": 1.0}] + [
        {"at_s": a, "multiplier": 2.0} for a in at if a > 0
    ]
    sc = scenario(duration_s=duration, base_rps=base, load=load, faults=faults)
    m = gym.simulate(design(), sc).metrics
    assert m.offered == m.served + m.failed + m.in_flight_end + m.skipped


def test_the_readme_states_the_estimate_bounds_the_code_applies() -> None:
    """The README's bounds on `gym estimate` options are the ones enforced: it said
    --pages-per-s 10^12, --page-kb 10^9, --urls 10^15 and --compression 10^6, while the
    gym refuses anything over 10^9, 10^6, 10^13 and 10^3."""
    import re

    from gym.analysis.estimate import _RANGES

    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())
    for key in ("pages_per_s", "page_kb", "urls", "compression"):
        _, high, option = _RANGES[key]
        stated = re.search(rf"`{option}` 10\^(\d+)", readme)
        assert stated, option
        assert 10 ** int(stated.group(1)) == high, (option, stated.group(0), high)
        res = CliRunner().invoke(app, ["estimate", option, f"{high:g}"])
        assert res.exit_code == 0, res.output
        res = CliRunner().invoke(app, ["estimate", option, f"{high * 10:g}"])
        assert res.exit_code == 2 and f"{high:g}" in res.stderr, res.output
