"""The ``service`` kind: an external service, a loss station finishing ``finish_share``
of what it answers (counted as ``writes_saved``)."""

from __future__ import annotations

from gym.sim.request.base import Run
from gym.sim.request.loss import LossRule, loss_rounding
from gym.system.topology import Node


def rule(run: Run, node: Node, causes: tuple[str, ...]) -> LossRule:
    p = node.params
    return LossRule(
        run,
        node,
        causes,
        rate=p.rps,
        service=p.service,
        finish=p.finish_share,
        saved="writes_saved",
    )


RULE = rule
ROUNDING = loss_rounding
