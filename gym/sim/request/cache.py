"""The ``cache`` kind: a loss station finishing its hits; its misses go on."""

from __future__ import annotations

from gym.sim.request.base import Run
from gym.sim.request.loss import LossRule, loss_rounding
from gym.system.topology import Node


def rule(run: Run, node: Node, causes: tuple[str, ...]) -> LossRule:
    p = node.params
    return LossRule(run, node, causes, rate=p.rps, service=p.service, finish=p.hit_ratio)


RULE = rule
ROUNDING = loss_rounding
