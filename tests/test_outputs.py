"""Output paths (issue 11, class 1): every output is checked before any work, and written
atomically, so a result is never computed and then lost, and nothing the user has is
replaced without --force."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from gym.cli import app
from gym.core import outputs
from gym.core.errors import GymError
from gym.explore import sweep
from gym.explore.parallel import Serial
from tests.conftest import REFERENCE, STARTER, forbid_work

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def _one_line_error(res: Any) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def _bad_paths(tmp: Path) -> dict[str, Path]:
    a_file = tmp / "a-file.txt"
    a_file.write_text("mine")
    a_dir = tmp / "a-dir.png"
    a_dir.mkdir()
    fifo = tmp / "pipe.png"
    os.mkfifo(fifo)
    to_null = tmp / "to-null.png"
    to_null.symlink_to("/dev/null")
    return {
        "under a file": a_file / "x.png",
        "in /proc": Path("/proc/gym-test.png"),
        "a directory": a_dir,
        "a FIFO": fifo,
        "a device": Path("/dev/full"),
        "a link to a device": to_null,
        "an unknown extension": tmp / "x.jpg2",
    }


@pytest.mark.parametrize(
    "case",
    [
        "under a file",
        "in /proc",
        "a directory",
        "a FIFO",
        "a device",
        "a link to a device",
        "an unknown extension",
    ],
)
def test_plot_refuses_a_bad_output_before_running(
    case: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """gym plot -o BAD: exit 2, one line naming the path, nothing simulated (--force or
    not: a device, FIFO or directory is never replaced)."""
    forbid_work(monkeypatch)
    path = _bad_paths(tmp_path)[case]
    for extra in ([], ["--force"]):
        res = runner.invoke(app, ["plot", str(REFERENCE), "-o", str(path), *extra])
        assert str(path) in _one_line_error(res)
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize(
    ("command", "suffix"),
    [
        (["report", str(REFERENCE)], ".html"),
        (["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4"], ".csv"),
        (["optimize"], ".yaml"),
    ],
)
def test_every_file_output_is_checked_first(
    command: list[str], suffix: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """report, sweep and optimize -o: a missing parent under a file, /proc, a directory,
    /dev/full, a wrong extension and an existing file are refused before any work."""
    forbid_work(monkeypatch)
    a_file = tmp_path / f"mine{suffix}"
    a_file.write_text("mine")
    a_dir = tmp_path / f"dir{suffix}"
    a_dir.mkdir()
    for bad in (
        a_file / f"x{suffix}",
        Path(f"/proc/x{suffix}"),
        a_dir,
        Path("/dev/full"),
        tmp_path / "x.txt",
        a_file,
    ):
        res = runner.invoke(app, [*command, "-o", str(bad)])
        assert str(bad) in _one_line_error(res)
    assert a_file.read_text() == "mine"


def test_run_out_is_checked_first(tmp_path: Path, monkeypatch: Any) -> None:
    """gym run --out BAD (a file, under a file, /proc, /dev/full, a FIFO): exit 2 before the
    run, with or without --runs."""
    forbid_work(monkeypatch)
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad in (a_file, a_file / "sub", Path("/proc/gym-out"), Path("/dev/full"), fifo):
        for runs in ("1", "16"):
            res = runner.invoke(app, ["run", str(REFERENCE), "--out", str(bad), "--runs", runs])
            assert str(bad) in _one_line_error(res)
    assert a_file.read_text() == "mine"


def test_missing_parents_are_created(tmp_path: Path) -> None:
    """-o new/sub/x.png and --out new/sub/run: the parents are made at the end."""
    png = tmp_path / "new" / "sub" / "x.png"
    res = runner.invoke(app, ["plot", str(REFERENCE), "-o", str(png)])
    assert res.exit_code == 0, res.output
    assert png.read_bytes().startswith(PNG)
    out = tmp_path / "other" / "sub" / "run"
    assert runner.invoke(app, ["run", str(REFERENCE), "--out", str(out)]).exit_code == 0
    assert (out / "summary.json").exists()


def test_a_name_ending_in_a_dot_is_refused(tmp_path: Path) -> None:
    """`plot -o keep.` wrote `keep..png`; `sweep -o rows.` has no extension to go by."""
    forbid = [("plot", "keep."), ("report", "r."), ("sweep", "rows.")]
    for command, name in forbid:
        args = [command, str(REFERENCE), "-o", str(tmp_path / name)]
        if command == "sweep":
            args += ["--vary", "fetchers.replicas=3,4"]
        assert "ends in a dot" in _one_line_error(runner.invoke(app, args)), command
    assert list(tmp_path.iterdir()) == []


def test_plot_name_without_extension_gets_png_and_is_not_overwritten(tmp_path: Path) -> None:
    """matplotlib adds .png to -o keep: the check looks at keep.png, so it is not replaced
    without --force; .svg and .pdf are written in their own format."""
    keep = tmp_path / "keep.png"
    keep.write_bytes(b"mine")
    res = runner.invoke(app, ["plot", str(REFERENCE), "-o", str(tmp_path / "keep")])
    assert "--force" in _one_line_error(res)
    assert keep.read_bytes() == b"mine"
    res = runner.invoke(app, ["plot", str(REFERENCE), "-o", str(tmp_path / "keep"), "--force"])
    assert res.exit_code == 0 and keep.read_bytes().startswith(PNG)
    assert not (tmp_path / "keep").exists()
    svg = tmp_path / "x.svg"
    assert runner.invoke(app, ["plot", str(REFERENCE), "-o", str(svg)]).exit_code == 0
    assert b"<svg" in svg.read_bytes()


def _temporaries(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(outputs.TEMP_PREFIX)]


def test_a_write_interrupted_midway_leaves_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    """Ctrl-C while the report or the run directory is written: exit 130, no half file, no
    half directory, no temporary left behind."""
    from gym.report import plots

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "save_all", stop)
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", str(REFERENCE), "--out", str(out)])
    assert res.exit_code == 130
    assert not out.exists() and _temporaries(tmp_path) == []

    def half(path: Path, data: Any, option: str) -> Any:
        def write_half(tmp: Path) -> None:
            tmp.write_text("<html>half")
            raise KeyboardInterrupt

        return real_write_file(path, write_half, option)

    real_write_file = outputs.write_file
    monkeypatch.setattr(outputs, "write_file", half)
    report = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(REFERENCE), "-o", str(report)])
    assert res.exit_code == 130
    assert not report.exists() and _temporaries(tmp_path) == []


def test_a_second_ctrl_c_waits_for_the_write(tmp_path: Path) -> None:
    """A Ctrl-C arriving while a file is written is held until the file is complete, then
    raised: the file is whole."""
    path = tmp_path / "rows.csv"

    def write(tmp: Path) -> None:
        tmp.write_text("a,b\n")
        os.kill(os.getpid(), signal.SIGINT)
        with tmp.open("a") as f:
            f.write("1,2\n")

    with pytest.raises(KeyboardInterrupt):
        outputs.write_file(path, write, "-o")
    assert path.read_text() == "a,b\n1,2\n"
    assert _temporaries(tmp_path) == []


def test_concurrent_writers_never_mix_files(tmp_path: Path) -> None:
    """Two writers of one --out: the first to finish gets the directory; the other's files
    stay whole in their own temporary directory, and its error says where."""
    target = tmp_path / "out"

    def fill_second(work: Path) -> list[Path]:
        (work / "summary.json").write_text("second")
        return [work / "summary.json"]

    def fill_first(work: Path) -> list[Path]:
        (work / "summary.json").write_text("first")
        (work / "windows.csv").write_text("first")
        outputs.write_dir(target, fill_second, "--out", force=False)  # finishes meanwhile
        return [work / "summary.json", work / "windows.csv"]

    with pytest.raises(GymError) as err:
        outputs.write_dir(target, fill_first, "--out", force=False)
    assert "results are in" in str(err.value)
    assert sorted(p.name for p in target.iterdir()) == ["summary.json"]
    assert (target / "summary.json").read_text() == "second"
    kept = [p for p in tmp_path.iterdir() if p.name.startswith(outputs.TEMP_PREFIX)]
    assert len(kept) == 1 and (kept[0] / "windows.csv").read_text() == "first"


def test_force_replaces_our_files_and_keeps_the_users(tmp_path: Path) -> None:
    """--out DIR --force over a directory with the user's notes and an old run: the notes
    stay, every file of the run is replaced, nothing temporary is left."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    (out / "summary.json").write_text("old")
    res = runner.invoke(app, ["run", str(STARTER), "--out", str(out), "--force"])
    assert res.exit_code == 1
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "summary.json").read_text() != "old"
    assert _temporaries(out) == [] and _temporaries(tmp_path) == []


def test_runs_with_out_writes_the_summary_and_a_row_per_run(tmp_path: Path) -> None:
    """--runs N --out DIR is honoured: summary.json (what --json prints) and runs.csv."""
    out = tmp_path / "many"
    res = runner.invoke(
        app,
        [
            "run",
            str(REFERENCE),
            "--runs",
            "3",
            "--confidence",
            "0.3",
            "--workers",
            "1",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output  # 3 passing runs show 0.3: 3 / (3 + 1.96^2) = 0.44
    df = pd.read_csv(out / "runs.csv")
    assert list(df["seed"]) == [0, 1, 2] and set(df["verdict"]) == {"pass"}
    assert (out / "summary.json").exists()


def test_sigterm_during_a_sweep_writes_the_finished_rows(tmp_path: Path, monkeypatch: Any) -> None:
    """SIGTERM ends a sweep like Ctrl-C: exit 130, and -o gets the rows that finished."""
    out = tmp_path / "rows.csv"
    real_run = sweep.run

    class TermAfter:
        def __init__(self, n: int) -> None:
            self.left = n

        def __call__(self, done: int) -> None:
            self.left -= done
            if self.left <= 0:
                os.kill(os.getpid(), signal.SIGTERM)

    def terminated_run(*args: Any, **kwargs: Any) -> Any:
        kwargs["progress"] = TermAfter(2)
        kwargs["executor"] = Serial()
        return real_run(*args, **kwargs)

    monkeypatch.setattr(sweep, "run", terminated_run)
    before = signal.getsignal(signal.SIGTERM)
    res = runner.invoke(
        app, ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..5", "-o", str(out)]
    )
    assert res.exit_code == 130, res.output
    assert list(pd.read_csv(out)["status"]) == ["ok", "ok", "not run"]
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is put back


def test_schema_outputs_are_checked(tmp_path: Path) -> None:
    """gym schema -o and --docs: a file, a device or /proc where a directory is wanted is
    one line, exit 2; a generated directory is rewritten without temporaries left."""
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    for args in (
        ["-o", str(a_file)],
        ["-o", "/dev/full"],
        ["-o", "/proc/gym-schemas"],
        ["-o", str(tmp_path / "s"), "--docs", str(a_file / "sub")],
    ):
        _one_line_error(runner.invoke(app, ["schema", *args]))
    assert a_file.read_text() == "mine"
    out = tmp_path / "s"
    for _ in range(2):
        assert runner.invoke(app, ["schema", "-o", str(out)]).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["design.schema.json", "scenario.schema.json"]


def test_long_names_are_checked_first_and_written_when_they_fit(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A name longer than the file system allows is refused before any work; one just
    under the limit is written (the temporary name is short whatever the target's)."""
    out = tmp_path / ("b" * 250)
    assert runner.invoke(app, ["run", str(REFERENCE), "--out", str(out)]).exit_code == 0
    assert (out / "summary.json").exists()
    forbid_work(monkeypatch)
    for args in (
        ["run", str(REFERENCE), "--out", str(tmp_path / ("a" * 300))],
        ["plot", str(REFERENCE), "-o", str(tmp_path / ("a" * 300 + ".png"))],
    ):
        assert "too long" in _one_line_error(runner.invoke(app, args))


def test_a_second_ctrl_c_while_saving_is_ignored(tmp_path: Path, monkeypatch: Any) -> None:
    """Ctrl-C stops a sweep; a second Ctrl-C as the finished rows are being saved is
    ignored (with a note), so the rows are still written; exit 130."""
    out = tmp_path / "rows.csv"
    real_run, real_write = sweep.run, sweep.write

    def interrupted_run(*args: Any, **kwargs: Any) -> Any:
        kwargs["progress"] = _SignalAfter(2, signal.SIGINT)
        kwargs["executor"] = Serial()
        return real_run(*args, **kwargs)

    def impatient_write(rows: Any, path: Path) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C
        real_write(rows, path)

    monkeypatch.setattr(sweep, "run", interrupted_run)
    monkeypatch.setattr(sweep, "write", impatient_write)
    res = runner.invoke(
        app, ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..5", "-o", str(out)]
    )
    assert res.exit_code == 130, res.output
    assert "still saving" in res.stderr
    assert list(pd.read_csv(out)["status"]) == ["ok", "ok", "not run"]


class _SignalAfter:
    """A progress callback that sends ``signum`` to this process after ``n`` runs."""

    def __init__(self, n: int, signum: int) -> None:
        self.left, self.signum = n, signum

    def __call__(self, done: int) -> None:
        self.left -= done
        if self.left <= 0:
            self.left = 1 << 30
            os.kill(os.getpid(), self.signum)


def test_an_existing_directory_is_filled_not_replaced(tmp_path: Path, monkeypatch: Any) -> None:
    """--out . in an empty working directory, and --out through a link to an empty
    directory: the files go into the directory itself (it is never renamed over, so the
    shell's working directory and the link survive)."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert runner.invoke(app, ["run", str(REFERENCE), "--out", "."]).exit_code == 0
    assert (here / "summary.json").exists() and Path.cwd() == here
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert runner.invoke(app, ["run", str(REFERENCE), "--out", str(link)]).exit_code == 0
    assert link.is_symlink() and (real / "windows.csv").exists()
    assert _temporaries(real) == [] and _temporaries(tmp_path) == []


def test_a_writer_in_progress_is_not_mixed_with(tmp_path: Path) -> None:
    """Another gym writing into the same existing directory (its lock is there): this
    writer's files stay whole in their temporary directory, and the error says where."""
    target = tmp_path / "out"
    target.mkdir()
    (target / outputs.LOCK_NAME).write_text("")

    def fill(work: Path) -> list[Path]:
        (work / "summary.json").write_text("mine")
        return [work / "summary.json"]

    with pytest.raises(GymError) as err:
        outputs.write_dir(target, fill, "--out", force=True)
    assert "another gym is writing" in str(err.value)
    kept = _temporaries(target)
    assert len(kept) == 1 and (target / kept[0] / "summary.json").read_text() == "mine"
    assert not (target / "summary.json").exists()


def test_a_write_that_fails_at_the_end_loses_no_result(tmp_path: Path, monkeypatch: Any) -> None:
    """A disk that fills up while the file is written: exit 2 in one line naming the file,
    and the sweep's rows and the optimizer's design were printed before, so nothing is
    lost."""

    def full(path: Path, data: Any, option: str) -> Path:
        raise GymError.single(str(path), None, f"{option}: cannot write: no space left")

    monkeypatch.setattr(outputs, "write_file", full)
    rows = tmp_path / "rows.csv"
    res = runner.invoke(
        app,
        ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--json", "-o", str(rows)],
    )
    assert "no space left" in _one_line_error(res)
    assert len(json.loads(res.stdout)) == 2
    best = tmp_path / "best.yaml"
    res = runner.invoke(app, ["optimize", "--runs", "1", "-o", str(best)])
    assert "no space left" in _one_line_error(res)
    assert "Cheapest passing design" in res.stdout and "frontier:" in res.stdout


def test_links_are_replaced_never_written_through(tmp_path: Path) -> None:
    """-o a dangling link or a link loop: refused without --force; with it, the link
    itself is replaced by the file (a link planted in a shared directory cannot make gym
    write somewhere else)."""
    elsewhere = tmp_path / "elsewhere.png"
    dangling = tmp_path / "dangling.png"
    dangling.symlink_to(elsewhere)
    loop = tmp_path / "loop.png"
    loop.symlink_to(loop)
    for link in (dangling, loop):
        res = runner.invoke(app, ["plot", str(REFERENCE), "-o", str(link)])
        assert "--force" in _one_line_error(res)
        res = runner.invoke(app, ["plot", str(REFERENCE), "-o", str(link), "--force"])
        assert res.exit_code == 0, res.output
        assert not link.is_symlink() and link.read_bytes().startswith(PNG)
    assert not elsewhere.exists()
