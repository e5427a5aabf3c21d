"""`gym run` and `gym validate` as a user drives them: exit codes, tables, JSON, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gym.cli import app
from tests.conftest import CHAOS, REFERENCE, ROOT, STARTER

runner = CliRunner()


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_reference_exits_0_with_pass() -> None:
    """The human table ends in a PASS verdict and exit status 0."""
    code, out, _ = _run("run", str(REFERENCE))
    assert code == 0, out
    assert "Verdict: PASS" in out
    for slo in ("throughput_rps", "availability", "peak_saturation", "cost_units"):
        assert slo in out


def test_starter_exits_1_and_says_why() -> None:
    """FAIL, exit 1, and the reasons: overflow in the surge, the crash."""
    code, out, _ = _run("run", str(STARTER))
    assert code == 1, out
    assert "Verdict: FAIL" in out
    assert "Why it fails" in out
    assert "frontier overflow" in out and "deep-crawl surge" in out
    assert "fetchers crash" in out


def test_json_is_one_object_with_the_contract_keys() -> None:
    """--json prints exactly one JSON object; offered = served + failed + in flight."""
    code, out, _ = _run("run", str(STARTER), "--json", "--seed", "4")
    assert code == 1
    data = json.loads(out)
    m = data["metrics"]
    assert m["offered"] == m["served"] + m["failed"] + m["in_flight_end"]
    assert data["seed"] == 4 and data["verdict"] == "fail"
    assert data["scenario"] == "crawler-chaos"


def test_same_seed_prints_identical_json_different_seed_differs() -> None:
    """Two runs with one seed print the same bytes; another seed prints other numbers."""
    a = _run("run", str(REFERENCE), "--json", "--seed", "11")[1]
    b = _run("run", str(REFERENCE), "--json", "--seed", "11")[1]
    c = _run("run", str(REFERENCE), "--json", "--seed", "12")[1]
    assert a == b
    assert json.loads(a)["metrics"] != json.loads(c)["metrics"]


def test_explicit_scenario_option() -> None:
    """--scenario picks the scenario file."""
    code, out, _ = _run("run", str(REFERENCE), "--scenario", str(CHAOS), "--json")
    assert code == 0 and json.loads(out)["scenario_file"] == str(CHAOS)


def test_validate_prints_units() -> None:
    """gym validate checks without running and prints the cost."""
    code, out, _ = _run("validate", str(REFERENCE), "--scenario", str(CHAOS))
    assert code == 0, out
    assert "7 units" in out


def test_unknown_engine_is_a_usage_error() -> None:
    """An engine that does not exist: exit 2 and a one-line message."""
    code, _, err = _run("run", str(REFERENCE), "--engine", "warp")
    assert code == 2
    assert "engine" in err and "warp" in err


def _modules_loaded(*argv: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The top-level modules a `gym` command loads (in a fresh interpreter), and its run."""
    code = (
        "import sys\n"
        "from gym.cli import main\n"
        f"sys.argv = ['gym', *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "top = sorted({m.split('.')[0] for m in sys.modules})\n"
        "sys.stderr.write('\\nMODULES ' + ' '.join(top))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    marker = proc.stderr.rpartition("MODULES ")
    assert marker[1], proc.stderr
    return set(marker[2].split()), proc


def test_gym_run_does_not_import_pandas_or_matplotlib() -> None:
    """The main job stays light: pandas and matplotlib load only on the paths that need them."""
    loaded, proc = _modules_loaded("run", str(REFERENCE), "--json")
    assert '"verdict": "pass"' in proc.stdout
    assert {"numpy", "simpy"} <= loaded  # the run happened
    assert not loaded & {"pandas", "matplotlib"}


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("run", "--help"),
        ("validate", str(REFERENCE)),
        ("schema", "-o", "SCHEMA_DIR"),
        ("slo", "export", str(CHAOS)),
    ],
    ids=["help", "run-help", "validate", "schema", "slo-export"],
)
def test_commands_that_run_nothing_import_no_engine(argv: tuple[str, ...], tmp_path: Path) -> None:
    """`gym --help`, `validate`, `schema` and `slo export` start fast: no numpy, SimPy, pandas or
    matplotlib (the engines and what scores them load only when a run needs them); the
    help loads no rich either."""
    argv = tuple(str(tmp_path / "schemas") if a == "SCHEMA_DIR" else a for a in argv)
    loaded, proc = _modules_loaded(*argv)
    assert "error" not in proc.stderr.split("MODULES")[0], proc.stderr
    assert not loaded & {"numpy", "simpy", "pandas", "matplotlib"}, argv
    if argv[0] == "--help":
        assert "Usage" in proc.stdout
        assert "rich" not in loaded
    if argv[0] == "validate":
        assert "valid design" in proc.stdout
    if argv[0] == "schema":
        assert (tmp_path / "schemas" / "design.schema.json").exists()
    if argv[0] == "slo":
        assert "kind: SLO" in proc.stdout


def test_installed_console_script_exit_codes() -> None:
    """The `gym` entry point as a shell sees it: 0 for the reference, 1 for the starter."""
    gym_exe = Path(sys.executable).with_name("gym")
    if not gym_exe.exists():
        pytest.skip("the gym console script is not installed next to this Python")
    ref = subprocess.run(
        [gym_exe, "run", "designs/reference.yaml"], cwd=ROOT, check=False, capture_output=True
    )
    start = subprocess.run(
        [gym_exe, "run", "designs/starter.yaml"], cwd=ROOT, check=False, capture_output=True
    )
    assert (ref.returncode, start.returncode) == (0, 1)


def test_import_gym_is_light_and_its_api_loads_on_use() -> None:
    """`import gym` loads no numpy or pydantic model; `gym.simulate` is the function even
    after the module that defines it was imported by name."""
    code = (
        "import sys, gym\n"
        "light = not {'numpy', 'simpy', 'pydantic'} & set(sys.modules)\n"
        "import gym.api\n"
        "r = gym.simulate('designs/reference.yaml', seed=0)\n"
        "print(light, r.verdict, gym.Design.__name__, 'simulate' in dir(gym))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.stdout.split() == ["True", "pass", "Design", "True"], proc.stderr


def test_compare_shows_the_inputs_that_differ() -> None:
    """compare lists each design field whose values differ, with every design's value (a
    section one design leaves out is none), beside the outcomes."""
    writer = ROOT / "designs" / "writer-lossless.yaml"
    res = runner.invoke(app, ["compare", str(REFERENCE), str(STARTER), str(writer), "--json"])
    diff = json.loads(res.stdout)["input_differences"]
    assert diff["fetchers.replicas"] == [4, 3, 4]
    assert diff["cache.hit_ratio"] == [0.92, 0.6, 0.92]
    assert diff["async_writer.buffer"] == [None, None, 100000]
    assert "page_store.rps" not in diff and "name" not in diff  # equal, or not an input
    text = runner.invoke(app, ["compare", str(REFERENCE), str(STARTER)]).stdout
    assert "Inputs that differ" in text and "fetchers.replicas" in text


def test_the_command_line_needs_no_click() -> None:
    """typer 0.2x carries its own click and no longer installs it: `pip install -e .` has no
    click, and `gym run` must work there (it did not: gym/cli.py imported click). Here
    click is made unimportable; a bad option still exits 2 through typer's own errors."""
    blocked = "import sys; sys.modules['click'] = None; from gym.cli import main; main()"
    ok = subprocess.run(
        [sys.executable, "-c", blocked, "run", "designs/reference.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(
        [sys.executable, "-c", blocked, "run", "designs/reference.yaml", "--seed", "-1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
