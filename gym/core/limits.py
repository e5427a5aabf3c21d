"""Names and limits the command line shows before any work is done: kept free of heavy
imports, so ``gym --help`` and ``gym validate`` load no numpy or SimPy."""

from __future__ import annotations

#: The engines, by the name ``--engine`` takes, and the module whose ``run`` each is.
ENGINE_MODULES: dict[str, str] = {
    "flow": "gym.sim.flow.engine",
    "request": "gym.sim.request.engine",
}
ENGINES: tuple[str, ...] = tuple(ENGINE_MODULES)

#: The request engine refuses runs that would simulate more URLs than this, unless asked.
DEFAULT_MAX_URLS = 2_000_000

#: The verdict rule over many runs: PASS when the Wilson lower bound of the pass
#: probability is at least this.
DEFAULT_CONFIDENCE = 0.8

#: The most seeds of one design a command runs (memory and time stay bounded).
MAX_RUNS = 100_000

#: The most simulations a sweep or an optimization takes on unless asked for more
#: (--max-runs): one default for both, checked before any run.
DEFAULT_MAX_RUNS = 500_000

#: The largest seed (with --runs N, seeds go up to seed + N - 1): a 64-bit signed integer,
#: so every tool that reads the JSON or CSV output holds it.
MAX_SEED = 2**63 - 1
