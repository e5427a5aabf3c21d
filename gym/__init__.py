"""The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos.

>>> import gym
>>> result = gym.simulate(gym.load_design("designs/reference.yaml"),
...                       gym.load_scenario("scenarios/crawler-chaos.yaml"), seed=0)
>>> result.verdict, result.metrics.availability, result.windows()  # doctest: +SKIP

The names below load on first use, so ``import gym`` (and the ``gym`` command's help,
``validate`` and ``schema``) do not pay for numpy, SimPy or the engines.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gym.core.errors import GymError, Problem

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.api import simulate, simulate_many, validate
    from gym.inputs.loading import load_design, load_scenario
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign
    from gym.verbs import optimize, plot, suggest_fix, sweep

#: Where each lazily loaded name of the API lives.
_LAZY = {
    "Design": "gym.models",
    "GraphDesign": "gym.system.graph",
    "Scenario": "gym.models",
    "load_design": "gym.inputs.loading",
    "load_scenario": "gym.inputs.loading",
    "Result": "gym.analysis.result",
    "simulate": "gym.api",
    "simulate_many": "gym.api",
    "validate": "gym.api",
    "sweep": "gym.verbs",
    "optimize": "gym.verbs",
    "suggest_fix": "gym.verbs",
    "plot": "gym.verbs",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The API's names (not the module's own imports: ``importlib``, ``Any``)."""
    return sorted(__all__)


__all__ = [
    "Design",
    "GraphDesign",
    "GymError",
    "Problem",
    "Result",
    "Scenario",
    "__version__",
    "load_design",
    "load_scenario",
    "optimize",
    "plot",
    "simulate",
    "simulate_many",
    "suggest_fix",
    "sweep",
    "validate",
]
__version__ = "0.1.0"
