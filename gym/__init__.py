"""The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos.

>>> import gym
>>> result = gym.simulate(gym.load_design("designs/reference.yaml"),
...                       gym.load_scenario("scenarios/crawler-chaos.yaml"), seed=0)
>>> result.verdict, result.metrics.availability, result.windows()  # doctest: +SKIP
"""

from gym.errors import GymError, Problem
from gym.loading import load_design, load_scenario
from gym.models import Design, GraphDesign, Scenario
from gym.result import Result
from gym.simulate import simulate, validate

__all__ = [
    "Design",
    "GraphDesign",
    "GymError",
    "Problem",
    "Result",
    "Scenario",
    "load_design",
    "load_scenario",
    "simulate",
    "validate",
]
__version__ = "0.1.0"
