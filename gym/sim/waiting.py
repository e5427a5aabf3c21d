"""Waiting and service times as distributions, for the flow engine's latency estimate
(docs/model.md, *Latency in the flow engine*).

- **Erlang C** from Erlang B (:func:`gym.sim.erlang.erlang_b`): the chance an arrival at
  an M/M/c station waits, C = B / (1 - rho (1 - B)).
- **The stationary wait at a queue** (:func:`stationary_wait`): a queue in front of a
  fleet's slots waits as M/G/c does (Erlang C, with the Allen-Cunneen factor
  (ca^2 + cs^2) / 2 for arrivals and services other than Poisson and exponential: exact
  for M/M/c and M/D/1); a token bucket (the queue's drain, a paced fleet's starts) as an
  M/D/1 queue at its rate less the bucket's tokens. Each is an atom at 0 and, past it, an
  exponential tail: the wait is 0 with chance 1 - P, else exponential with mean m.
- **Service times**: the quantile of a deterministic, exponential or lognormal service
  time at u (:func:`service_ms`), and a grid of quantiles with weights for the latency
  rows (:func:`service_grid`), which picks out p50, p95 and p99 and keeps the mean.
"""

from __future__ import annotations

import math

import numpy as np

from gym.models import ServiceTime
from gym.sim.erlang import erlang_b

# -- a grid of quantiles -----------------------------------------------------------------

#: Edges of the bins of probability the rows' quantile grid has: 5% apart, narrower in
#: the tail, with bins centred on 0.5, 0.95 and 0.99 so that a weighted percentile lands
#: on those quantiles exactly.
_EDGES = np.array(
    [0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.495, 0.505, 0.55, 0.60,
     0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.925, 0.945, 0.955, 0.97, 0.98, 0.985, 0.995,
     0.998, 0.999, 0.9995, 1.0]
)  # fmt: skip
#: The grid: a probability at the middle of each bin, and the bin's width (its weight).
GRID_U = (_EDGES[1:] + _EDGES[:-1]) / 2.0
GRID_W = np.diff(_EDGES)


def _normal_quantile(u: np.ndarray) -> np.ndarray:
    """The standard normal's quantile at u in (0, 1): Acklam's rational approximation
    (relative error below 1.2e-9), vectorized."""
    a = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690,
         -30.66479806614716, 2.506628277459239)  # fmt: skip
    b = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
         -13.28068155288572)  # fmt: skip
    c = (-7.784894002430293e-03, -0.3223964580411365, -2.400758277161838, -2.549732539343734,
         4.374664141464968, 2.938163982698783)  # fmt: skip
    d = (7.784695709041462e-03, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
    u = np.clip(np.asarray(u, dtype=np.float64), 1e-300, 1.0 - 1e-16)
    out = np.empty_like(u)
    low, high = u < 0.02425, u > 1.0 - 0.02425
    mid = ~(low | high)
    q = u[mid] - 0.5
    r = q * q
    num = ((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]
    den = ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0
    out[mid] = q * num / den
    for mask, sign in ((low, 1.0), (high, -1.0)):
        p = u[mask] if sign > 0 else 1.0 - u[mask]
        t = np.sqrt(-2.0 * np.log(p))
        num = ((((c[0] * t + c[1]) * t + c[2]) * t + c[3]) * t + c[4]) * t + c[5]
        den = (((d[0] * t + d[1]) * t + d[2]) * t + d[3]) * t + 1.0
        out[mask] = sign * num / den
    return out


def service_ms(service: ServiceTime, u: np.ndarray) -> np.ndarray:
    """The service time (ms) at quantile ``u``: the mean (deterministic), -mean ln(1 - u)
    (exponential), or exp(mu + sigma z_u) with sigma^2 = ln(1 + cv^2) and mu =
    ln(mean) - sigma^2 / 2 (lognormal, as the request engine draws it)."""
    u = np.asarray(u, dtype=np.float64)
    mean = service.mean_ms
    if service.dist == "deterministic":
        return np.full(u.shape, mean)
    if service.dist == "exponential":
        drawn: np.ndarray = -mean * np.log1p(-np.minimum(u, 1.0 - 1e-16))
        return drawn
    sigma = math.sqrt(math.log1p(service.cv_value**2))
    mu = math.log(mean) - sigma * sigma / 2.0
    return np.exp(mu + sigma * _normal_quantile(u))


def service_grid(service: ServiceTime) -> tuple[np.ndarray, np.ndarray]:
    """The service time as weighted points (ms, weight adding up to 1): one point for a
    fixed time, else the quantiles of :data:`GRID_U`, scaled so that their weighted mean
    is the distribution's (the midpoint of the last bin falls short of its tail)."""
    if service.dist == "deterministic":
        return np.array([service.mean_ms]), np.ones(1)
    values = service_ms(service, GRID_U)
    values *= service.mean_ms / float((values * GRID_W).sum())
    return values, GRID_W.copy()


#: Exp(1) on the grid, its mean 1 exactly: a waiting time's tail, scaled by its mean.
EXP_GRID = service_grid(ServiceTime(dist="exponential", mean_ms=1.0))[0]


def wait_ms(chance: np.ndarray, mean_ms: np.ndarray, u: np.ndarray) -> np.ndarray:
    """A wait at quantile ``u``: 0 with chance 1 - ``chance``, else exponential with mean
    ``mean_ms`` (P(W > x) = chance x exp(-x / mean))."""
    p = np.asarray(chance, dtype=np.float64)
    past = u > 1.0 - p
    out = np.zeros(np.shape(u))
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = mean_ms * np.log(p / np.maximum(1.0 - u, 1e-300))
    out[past] = np.maximum(tail[past], 0.0)
    return out


# -- the stationary wait at a queue ------------------------------------------------------


def erlang_c(slots: np.ndarray, offered: np.ndarray) -> np.ndarray:
    """The chance an arrival waits at an M/M/c station of ``slots`` offered ``offered``
    Erlangs: C = B / (1 - rho (1 - B)), B = Erlang B, rho = offered / slots; 1 at or
    beyond saturation (rho >= 1) and where there are no slots."""
    a = np.asarray(offered, dtype=np.float64)
    c = np.broadcast_to(np.asarray(slots, dtype=np.float64), a.shape)
    out = np.ones(a.shape)
    ok = (c > 0) & (a < c)
    if ok.any():
        b = erlang_b(c[ok], a[ok])
        rho = a[ok] / c[ok]
        out[ok] = b / (1.0 - rho * (1.0 - b))
    out[a <= 0] = 0.0
    return out


def slot_wait(
    rate: np.ndarray, slots: np.ndarray, service: ServiceTime, ca2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """M/G/c at arrival rate ``rate`` (per s), ``slots`` servers of ``service``: (chance
    of waiting, mean wait in ms), by Erlang C and the Allen-Cunneen factor
    (ca^2 + cs^2) / 2; an infinite mean at or beyond saturation."""
    mu = 1000.0 / service.mean_ms
    lam = np.asarray(rate, dtype=np.float64)
    c = np.asarray(slots, dtype=np.float64)
    chance = erlang_c(c, lam / mu)
    factor = (ca2 + service.cv_value**2) / 2.0
    spare = c * mu - lam
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(spare > 0, chance / spare * factor * 1000.0, np.inf)
    mean = np.where(lam > 0, mean, 0.0)
    return np.where(factor > 0, chance, 0.0), np.where(factor > 0, mean, 0.0)


def bucket_wait(
    rate: np.ndarray, bucket: np.ndarray, tokens: np.ndarray, ca2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A token bucket at ``bucket`` per second holding up to ``tokens``, at arrival rate
    ``rate``: (chance of waiting, mean wait in ms). Its wait is the work of an M/D/1 queue
    at the bucket's rate less what the tokens cover, (V - (tokens - 1) / bucket)+, with
    V 0 with chance rho and otherwise exponential, of mean ca^2 / (2 bucket (1 - rho))
    (M/D/1's mean wait over rho, with the Allen-Cunneen factor)."""
    lam = np.asarray(rate, dtype=np.float64)
    r = np.asarray(bucket, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(r > 0, lam / r, np.inf)
        tail = np.where(rho < 1, ca2 / (2.0 * r * (1.0 - rho)), np.inf)  # s
        credit = np.maximum(np.asarray(tokens, dtype=np.float64) - 1.0, 0.0) / r
        chance = np.where(tail > 0, rho * np.exp(-credit / tail), 0.0)
    chance = np.where(rho < 1, chance, 1.0)
    mean = np.where(rho < 1, chance * tail * 1000.0, np.inf)
    ok = (lam > 0) & (ca2 > 0)
    return np.where(ok, np.minimum(chance, 1.0), 0.0), np.where(ok, mean, 0.0)


def capped(
    chance: np.ndarray, mean_ms: np.ndarray, rate: np.ndarray, var: np.ndarray, since_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A stationary wait no longer than a queue can build since its load last changed: a
    driftless reflected random walk of variance ``var`` per second (rate x (ca^2 + cs^2))
    reaches a mean sqrt(2 var t / pi) URLs in t seconds, which at ``rate`` is a wait of
    that over the rate. Near or at saturation (where the stationary mean is long or
    infinite) the cap is what a run of ``since_s`` seconds can build. Returns (chance,
    mean wait), the chance 1 where the stationary one is infinite."""
    lam = np.asarray(rate, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        most = np.where(lam > 0, np.sqrt(2.0 * var * since_s / math.pi) / lam * 1000.0, 0.0)
    mean = np.minimum(mean_ms, most)
    chance = np.where(np.isfinite(mean_ms), chance, 1.0)
    return np.where(mean > 0, chance, 0.0), mean
