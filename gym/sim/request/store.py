"""The ``store`` kind: a loss station; what it writes is served at the end of a chain.
Behind a write buffer it takes the writes the buffer took its slots for."""

from __future__ import annotations

from gym.sim.request.base import Run
from gym.sim.request.loss import LossRule, loss_rounding
from gym.system.topology import Node


def rule(run: Run, node: Node, causes: tuple[str, ...]) -> LossRule:
    return LossRule(run, node, causes, rate=node.params.rps, service=node.params.service)


RULE = rule
ROUNDING = loss_rounding
