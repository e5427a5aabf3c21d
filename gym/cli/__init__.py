"""The ``gym`` command: parse the options, call the gym's API, print. No model logic here.
One module per group of commands; the console, the exit contract and progress apart."""

from __future__ import annotations

# Importing the command modules registers their commands, in the order ``gym --help``
# lists them. Everything else loads inside the command that needs it: ``gym --help``
# imports no numpy, SimPy, pydantic model or rich, and ``gym validate`` no numpy or SimPy.
# isort: off
from gym.cli import run, results, explore, diff, info, slo, serve  # noqa: F401

# isort: on
from gym.cli.program import app, main

__all__ = ["app", "main"]
