"""Writing a run to a directory: the per-window table, the summary, the resolved inputs and
the plots. Nothing is written over a directory that holds other files unless asked."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym.analysis.result import Result
from gym.inputs.strict_yaml import dump_yaml

if TYPE_CHECKING:
    from gym.explore.fix import Fix, NoFix
    from gym.explore.headroom import Headroom
    from gym.models import Scenario


#: Floats in CSV files to 12 significant digits (2.2825125, not 2.2825124999999997).
CSV_FLOAT = "%.12g"


def resolved_yaml(model: object, scenario: Scenario | None = None) -> str:
    """A model with every default filled in, as YAML that loads back to a model that runs
    the same: a crawler's back queues as the run used them (the frontier units' own,
    under ``scenario``'s catalog)."""
    from pydantic import BaseModel

    from gym.system.compiled import addons

    assert isinstance(model, BaseModel)
    header = (
        "# Resolved by the crawler SLO gym: every default the run used, written out\n"
        "# (null: a section or field not in use).\n"
    )
    data = model.model_dump(mode="json", by_alias=True)
    crawler = addons(model)
    if crawler is not None and scenario is not None:
        data["frontier"]["back_queues"] = crawler.politeness(scenario).back_queues
    if data.get("system") == "graph":  # a graph scenario has no crawler world
        for key in ("resolver", "web", "dedup"):
            data.pop(key, None)
    return header + dump_yaml(data)


def fixed_yaml(fix: Fix) -> str:
    """The design a suggested fix makes, as a design file (defaults left out)."""
    from gym.core.text import printable

    header = "".join(
        f"# {printable(line)}\n"
        for line in ("The suggested fix, found by the crawler SLO gym:", fix.summary())
    )
    return header + dump_yaml(fix.design_mapping())


def write_run(
    result: Result,
    directory: Path,
    force: bool = False,
    fix: Fix | NoFix | None = None,
    headroom: Headroom | None = None,
) -> list[Path]:
    """Write ``result`` into ``directory``, all files at once (built in a temporary
    directory, then renamed into place); returns the files written. With a suggested
    ``fix`` (:mod:`gym.explore.fix`), the summary carries it and ``fixed-design.yaml`` is the
    design it makes (it loads with ``gym run``)."""
    from gym.core.outputs import write_dir

    def fill(work: Path) -> list[Path]:
        from gym.report import plots

        df = result.windows()
        written = []
        path = work / "windows.csv"
        df.to_csv(path, index=False, float_format=CSV_FLOAT)
        written.append(path)
        path = work / "summary.json"
        summary = result.to_dict()
        summary["fix"] = None if fix is None else fix.to_dict()
        summary["headroom"] = None if headroom is None else headroom.to_dict()
        path.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        written.append(path)
        from gym.explore.fix import Fix

        if isinstance(fix, Fix):
            path = work / "fixed-design.yaml"
            path.write_text(fixed_yaml(fix))
            written.append(path)
        for name, model in (("design", result.design), ("scenario", result.scenario)):
            path = work / f"{name}.resolved.yaml"
            path.write_text(resolved_yaml(model, result.scenario))
            written.append(path)
        return written + plots.save_all(result, work, df)

    written = write_dir(directory, fill, "--out", force=force)
    stale = directory / "fixed-design.yaml"
    if stale not in written and stale.is_file():  # an earlier run's fix (with --force)
        stale.unlink()
    return written


def write_runs(
    summary: dict[str, Any], runs: list[dict[str, Any]], directory: Path, force: bool = False
) -> list[Path]:
    """Write a many-run summary (``summary.json``, what ``--json`` prints) and one CSV row
    per run (``runs.csv``: seed, verdict, the measured SLOs, failed URLs) into
    ``directory``, all files at once."""
    from gym.analysis.scoring import SLO_NAMES
    from gym.core.outputs import write_dir

    def fill(work: Path) -> list[Path]:
        summary_path = work / "summary.json"
        summary_path.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        names = [n for n in SLO_NAMES if any(n in r["slos"] for r in runs)]
        rows_path = work / "runs.csv"
        with rows_path.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["seed", "verdict", *names, "failed"])
            for r in runs:
                measured = [
                    CSV_FLOAT % v if isinstance(v, float) else ("" if v is None else v)
                    for n in names
                    for v in [r["slos"][n]["measured"] if n in r["slos"] else None]
                ]
                out.writerow([r["seed"], r["verdict"], *measured, r["failed"]])
        return [summary_path, rows_path]

    return write_dir(directory, fill, "--out", force=force)
