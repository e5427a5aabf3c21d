"""Fuzzing the loaders: any input gives a validated model or one-line errors, nothing else."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gym
from gym.core.errors import GymError
from gym.inputs.loading import parse
from gym.inputs.strict_yaml import parse_yaml_text
from gym.models import Design, Scenario
from tests.conftest import CHAOS, REFERENCE

REF = yaml.safe_load(REFERENCE.read_text())
CHAOS_DATA = yaml.safe_load(CHAOS.read_text())

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


def _load(text: str, model: type[Design] | type[Scenario]) -> None:
    try:
        parse(model, parse_yaml_text(text, "fuzz.yaml"), "fuzz.yaml", "design")
    except GymError as err:
        assert err.problems
        for problem in err.problems:
            line = str(problem)
            assert "\n" not in line and line.startswith("fuzz.yaml")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    """Arbitrary text: a design or GymError with one-line problems; no other exception."""
    _load(text, Design)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_through_the_file_loader(tmp_path_factory: Any, data: bytes) -> None:
    """Arbitrary bytes in a file: load_design gives a model or a GymError naming the file."""
    path = tmp_path_factory.mktemp("fuzz") / "d.yaml"
    path.write_bytes(data)
    try:
        gym.load_design(path)
    except GymError as err:
        assert all(p.file == str(path) for p in err.problems)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _replace(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("model", "base", "what"),
    [(Design, REF, "design"), (Scenario, CHAOS_DATA, "scenario")],
    ids=["design", "scenario"],
)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_junk_anywhere(
    model: type[Design] | type[Scenario], base: Any, what: str, data: st.DataObject
) -> None:
    """A valid file with any one value swapped for junk: a model, or errors that are one
    line each and name a field (or the whole file when the junk replaced it)."""
    path = data.draw(st.sampled_from(_paths(base)))
    doc = _replace(base, path, data.draw(junk))
    try:
        parse(model, doc, "fuzz.yaml", what)
    except GymError as err:
        for problem in err.problems:
            assert "\n" not in str(problem)
            assert problem.field is not None or not path
