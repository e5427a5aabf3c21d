"""Erlang loss for the flow engine's stations without a queue (cache, resolver, store).

A station with ``c`` concurrent slots and no waiting room turns away a request that finds
every slot busy. For Poisson arrivals offering ``a`` Erlangs (arrival rate x mean service
time) the fraction turned away is Erlang's B formula, whatever the service-time
distribution::

    B(0, a) = 1,    B(k, a) = a B(k-1, a) / (k + a B(k-1, a))

Load in a crawl changes over time (a surge, a crash, a stall's end), so each tick uses the
*modified offered load* (Jagerman 1975; Massey and Whitt 1994): the mean number of
requests an unlimited station would have in service during that tick, from the arrivals
of this tick and the ticks before it, weighted by how long a service lasts. At a steady
rate it is exactly rate x mean service time; after a change it follows the station's own
memory, a service time, rather than jumping at once.
"""

from __future__ import annotations

import math

import numpy as np

from gym.models import ServiceTime

#: Offered loads above this use the normal approximation to the Poisson distribution
#: (``B = pmf(c) / cdf(c)``); below it, the exact recursion, run only where it matters.
EXACT_UP_TO = 25_000.0

#: Where the recursion starts and stops, in standard deviations of the offered load:
#: outside ``min(c, a) - W sqrt(a) .. a + W sqrt(a)`` it changes nothing a float can hold.
WIDTH = 12.0

#: The smoothest stream Hayward's approximation is asked about; below it the loss moves
#: linearly to the fluid loss of a perfectly regular stream (z = 0).
Z_MIN = 0.02


def erlang_b(slots: float | np.ndarray, offered: np.ndarray) -> np.ndarray:
    """Erlang B for ``slots`` servers (a whole number, or one per load) at each offered load
    in ``offered`` (Erlangs)."""
    return _erlang_b_pair(slots, offered)[0]


def erlang_b_peaked(slots: int, offered: np.ndarray, peakedness: np.ndarray) -> np.ndarray:
    """Loss for arrivals smoother (peakedness z < 1) or burstier than Poisson: Hayward's
    approximation B(slots / z, offered / z), with B linear between whole numbers of slots.
    A paced stream (z near 0) tends to the fluid loss, max(0, 1 - slots / offered)."""
    a = np.asarray(offered, dtype=np.float64)
    given = np.asarray(peakedness, dtype=np.float64)
    z = np.clip(given, Z_MIN, None)
    x = slots / z
    lo = np.floor(x)
    b_lo, b_hi = _erlang_b_pair(lo, a / z)
    frac = x - lo
    b = (1.0 - frac) * b_lo + frac * b_hi
    # Smoother than Z_MIN: toward the fluid loss, which a perfectly regular stream has
    # (nothing lost up to capacity exactly).
    with np.errstate(divide="ignore", invalid="ignore"):
        fluid = np.where(a > 0, np.maximum(1.0 - slots / a, 0.0), 0.0)
    smooth = given < Z_MIN
    share = np.clip(given, 0.0, None) / Z_MIN
    loss: np.ndarray = np.where(smooth, fluid + share * (b - fluid), b)
    return loss


def _erlang_b_pair(slots: float | np.ndarray, offered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """B(c, a) and B(c + 1, a) for each load (the second costs one more step)."""
    a = np.asarray(offered, dtype=np.float64)
    c = np.broadcast_to(np.asarray(slots, dtype=np.float64), a.shape)
    b = np.zeros(a.shape)
    b_next = np.zeros(a.shape)
    busy = a > 0
    none = busy & (c <= 0)
    b[none] = 1.0
    b_next[none] = 1.0 / (1.0 + a[none])
    # Beyond a + W sqrt(a) slots nothing is lost that a float can hold: most ticks of a
    # healthy design stop here.
    live = busy & (c > 0) & (c < np.ceil(a + WIDTH * np.sqrt(a) + WIDTH) + 1)
    exact = live & (a <= EXACT_UP_TO)
    if exact.any():
        inv = _inverse_b(c[exact], a[exact])
        b[exact] = 1.0 / inv
        b_next[exact] = 1.0 / (1.0 + (c[exact] + 1.0) / a[exact] * inv)
    normal = live & (a > EXACT_UP_TO)
    if normal.any():
        b[normal] = _normal(c[normal], a[normal])
        b_next[normal] = _normal(c[normal] + 1.0, a[normal])
    return b, b_next


def _inverse_b(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """1/B(c, a) by the recursion 1/B(k) = 1 + (k/a) / B(k-1), over the k that matter.

    Below ``k0 = min(c, a) - W sqrt(a)`` a station is deep in overload, where
    B(k0) = 1 - k0/a to many digits, and any error there shrinks by k/a < 1 at every step
    up to min(c, a) (by exp(-W^2/2) in all). The caller keeps away loads with more than
    ``a + W sqrt(a)`` slots, where B is below 1e-30. Loads are taken longest first, so
    each step works on the prefix still running.
    """
    spread = WIDTH * np.sqrt(a) + WIDTH
    k0 = np.maximum(np.floor(np.minimum(c, a) - spread), 0.0)
    steps = (c - k0).astype(np.int64)
    order = np.argsort(-steps, kind="stable")
    k = k0[order]
    load = a[order]
    inv = np.where(k > 0, load / np.maximum(load - k, 1e-300), 1.0)  # 1/B(k0)
    remaining = steps[order]
    # How many loads still run at step j: those needing more than j steps.
    longest = int(remaining[0]) if len(k) else 0
    running = len(k) - np.searchsorted(remaining[::-1], np.arange(longest), "right")
    for m in running.tolist():
        kk = k[:m]
        kk += 1.0
        part = inv[:m]
        part *= kk
        part /= load[:m]
        part += 1.0
    out = np.empty_like(inv)
    out[order] = inv
    return out


def _normal(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """B = pmf(c) / cdf(c) of Poisson(a), with the cdf from the normal approximation (with a
    continuity correction), for loads so large that its relative error, of order
    1/sqrt(a) < 0.7%, is far below what a run's randomness moves."""
    lgamma = np.array([math.lgamma(float(k) + 1.0) for k in c])
    log_pmf = c * np.log(a) - a - lgamma
    cdf = _std_normal_cdf((c + 0.5 - a) / np.sqrt(a))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        b = np.exp(log_pmf) / cdf
    # Deep in overload the cdf underflows: B is then 1 - c/a to many digits.
    fluid = np.maximum(1.0 - c / a, 0.0)
    b = np.where(np.isfinite(b) & (cdf > 1e-200), b, fluid)
    clipped: np.ndarray = np.clip(b, 0.0, 1.0)
    return clipped


def peakedness_factor(service: ServiceTime) -> float:
    """kappa = integral of P(S > t)^2 dt / E[S]: how much of an arrival stream's
    irregularity a station's occupancy keeps. A stream whose counts have variance I x mean
    gives occupancy peakedness z = 1 + (I - 1) kappa (deterministic service: kappa = 1;
    exponential: 1/2)."""
    if service.dist == "deterministic":
        return 1.0
    if service.dist == "exponential":
        return 0.5
    # E[min(S1, S2)] / E[S] for two independent draws: integrate P(S > t)^2 numerically.
    mean = 1.0
    sigma = math.sqrt(math.log1p(service.cv_value**2))
    mu = math.log(mean) - sigma * sigma / 2
    t = np.exp(np.linspace(mu - 9 * sigma, mu + 9 * sigma, 4001))
    tail = 1.0 - _std_normal_cdf((np.log(t) - mu) / sigma)
    f = tail * tail
    integral = float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(t))) + float(t[0])  # P = 1 below t0
    return integral / mean


def occupancy_kernel(service: ServiceTime, factor: float, tick_ms: int) -> np.ndarray:
    """Weights w[d]: the mean number of requests still in service during a tick, per request
    that arrived ``d`` ticks earlier (arrivals spread evenly within their tick; service times
    from ``service`` stretched by ``factor``). The weights add up to mean service / tick, so
    a steady rate r per tick offers r x mean service / tick Erlangs.

    With H(t) = integral over [0, t] of E[min(S, u)] du and T the tick, the chance that a
    request arriving at a uniform instant of one tick is in service at a uniform instant of
    the tick d later is ``w[d] = (H((d+1)T) - 2 H(dT) + H((d-1)T)) / T^2`` (H = 0 below 0).
    """
    tick = tick_ms / 1000.0
    mean = service.mean_ms / 1000.0 * factor
    cv = service.cv_value
    horizon = _horizon(service.dist, mean, cv)
    n = max(2, math.ceil(horizon / tick) + 2)
    t = np.arange(-1, n + 1, dtype=np.float64) * tick
    h = _integrated_residual(service.dist, mean, cv, t)
    weights = (h[2:] - 2.0 * h[1:-1] + h[:-2]) / (tick * tick)
    w: np.ndarray = np.maximum(weights, 0.0)
    total = float(w.sum())
    if total > 0:
        w *= (mean / tick) / total  # the tail beyond the horizon, put back (< 1e-6)
    return w


def offered_load(
    arrivals: np.ndarray, factors: np.ndarray, kernels: dict[float, np.ndarray]
) -> np.ndarray:
    """The modified offered load per tick: arrivals convolved with the kernel of the factor
    in force when each arrived (a slowdown stretches the services that start under it)."""
    n = len(arrivals)
    load = np.zeros(n)
    for factor, kernel in kernels.items():
        mine = np.where(factors == factor, arrivals, 0).astype(np.float64)
        if mine.any():
            load += _convolve(mine, kernel)[:n]
    return load


def _convolve(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """np.convolve, through the FFT when both are long (a service of minutes on 10 ms
    ticks has a kernel of tens of thousands of ticks)."""
    if len(x) * len(kernel) <= 4_000_000:
        return np.convolve(x, kernel)
    size = len(x) + len(kernel) - 1
    nfft = 1 << (size - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(kernel, nfft), nfft)[:size]
    return np.maximum(out, 0.0)


def _horizon(dist: str, mean: float, cv: float) -> float:
    """A time after which fewer than about one in a million services are still running."""
    if dist == "deterministic":
        return mean
    if dist == "exponential":
        return mean * 14.0
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    return math.exp(mu + 4.75 * sigma)


def _integrated_residual(dist: str, mean: float, cv: float, t: np.ndarray) -> np.ndarray:
    """H(t) = integral over [0, t] of E[min(S, u)] du, which is
    t E[S; S <= t] - E[S^2; S <= t] / 2 + t^2 P(S > t) / 2, and 0 for t <= 0."""
    pos = np.maximum(t, 0.0)
    if dist == "deterministic":
        m1 = np.where(pos >= mean, mean, 0.0)
        m2 = np.where(pos >= mean, mean * mean, 0.0)
        tail = np.where(pos >= mean, 0.0, 1.0)
    elif dist == "exponential":
        e = np.exp(-pos / mean)
        m1 = mean - (pos + mean) * e
        m2 = 2 * mean * mean - (pos * pos + 2 * mean * pos + 2 * mean * mean) * e
        tail = e
    else:
        sigma = math.sqrt(math.log1p(cv * cv))
        mu = math.log(mean) - sigma * sigma / 2
        with np.errstate(divide="ignore"):
            z = (np.log(pos) - mu) / sigma
        phi = _std_normal_cdf
        m1 = math.exp(mu + sigma**2 / 2) * phi(z - sigma)
        m2 = math.exp(2 * mu + 2 * sigma**2) * phi(z - 2 * sigma)
        tail = 1.0 - phi(z)
    h = pos * m1 - m2 / 2 + pos * pos * tail / 2
    return np.where(t > 0, h, 0.0)


def _std_normal_cdf(z: np.ndarray) -> np.ndarray:
    return np.array([0.5 * math.erfc(-float(x) / math.sqrt(2.0)) for x in np.ravel(z)]).reshape(
        np.shape(z)
    )
