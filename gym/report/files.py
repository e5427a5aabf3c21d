"""Writing a run to a directory: the per-window table, the summary, the resolved inputs and
the plots. Nothing is written over a directory that holds other files unless asked."""

from __future__ import annotations

import json
from pathlib import Path

from gym.errors import GymError
from gym.loading import dump_yaml
from gym.result import Result


def check_target(path: Path, force: bool, option: str, is_dir: bool) -> None:
    """Refuse to write over what a user has, unless ``force``."""
    if force or not path.exists():
        return
    if is_dir:
        if not path.is_dir():
            raise GymError.single(str(path), None, f"{option}: exists and is not a directory")
        if any(path.iterdir()):
            raise GymError.single(
                str(path),
                None,
                f"{option}: the directory holds files; pass --force to write into it",
            )
        return
    raise GymError.single(str(path), None, f"{option}: the file exists; pass --force to replace it")


def resolved_yaml(model: object) -> str:
    """A model with every default filled in, as YAML that loads back to the same model."""
    from pydantic import BaseModel

    assert isinstance(model, BaseModel)
    header = "# Resolved by the crawler SLO gym: every default the run used, written out.\n"
    return header + dump_yaml(model.model_dump(mode="json"))


def write_run(result: Result, directory: Path, force: bool = False) -> list[Path]:
    """Write ``result`` into ``directory``; returns the files written."""
    from gym.report import plots

    check_target(directory, force, "--out", is_dir=True)
    directory.mkdir(parents=True, exist_ok=True)
    df = result.windows()
    written = []
    path = directory / "windows.csv"
    df.to_csv(path, index=False)
    written.append(path)
    path = directory / "summary.json"
    path.write_text(json.dumps(result.to_json(), indent=2, allow_nan=False) + "\n")
    written.append(path)
    for name, model in (("design", result.design), ("scenario", result.scenario)):
        path = directory / f"{name}.resolved.yaml"
        path.write_text(resolved_yaml(model))
        written.append(path)
    written += plots.save_all(result, directory, df)
    return written
