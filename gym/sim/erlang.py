"""Erlang loss for the flow engine's stations without a queue (cache, service, store).

A station with ``c`` concurrent slots and no waiting room turns away a request that finds
every slot busy. For Poisson arrivals offering ``a`` Erlangs (arrival rate x mean service
time) the fraction turned away is Erlang's B formula, whatever the service-time
distribution::

    B(0, a) = 1,    B(k, a) = a B(k-1, a) / (k + a B(k-1, a))

Load in a run changes over time (a surge, a crash, a stall's end), so each tick uses the
*modified offered load* (Jagerman 1975; Massey and Whitt 1994): the mean number of
requests an unlimited station would have in service during that tick, from the arrivals
of this tick and the ticks before it, weighted by how long a service lasts. At a steady
rate it is exactly rate x mean service time; after a change it follows the station's own
memory, a service time, rather than jumping at once.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from gym.models import ServiceTime

#: Where the recursion starts and stops, in standard deviations of the offered load:
#: outside ``min(c, a) - W sqrt(a) .. a + W sqrt(a)`` it changes nothing a float can hold.
WIDTH = 7.0

#: The smoothest stream Hayward's approximation is asked about; below it the loss moves
#: linearly to the D/D/c loss of a perfectly regular stream (z = 0).
Z_MIN = 0.02


def erlang_b(slots: float | np.ndarray, offered: np.ndarray) -> np.ndarray:
    """Erlang B for ``slots`` servers (a whole number, or one per load) at each offered load
    in ``offered`` (Erlangs)."""
    return _erlang_b_pair(slots, offered)[0]


def erlang_b_peaked(
    slots: int,
    offered: np.ndarray,
    peakedness: np.ndarray,
    regular: np.ndarray | None = None,
) -> np.ndarray:
    """Loss for arrivals smoother (peakedness z < 1) or burstier than Poisson: Hayward's
    approximation B(slots / z, offered / z), with B linear between whole numbers of slots.
    A perfectly regular stream (z = 0) at fixed service times loses as D/D/c does (below);
    ``regular``, where given, is its load from its spacing (rate x service time), which a
    per-tick load built from counts of 0, 1 and 2 only scatters around."""
    a = np.asarray(offered, dtype=np.float64)
    given = np.asarray(peakedness, dtype=np.float64)
    if (
        a.ndim == 1
        and len(a) > 1
        and given.shape == a.shape
        and (regular is None or np.shape(regular) == a.shape)
        and _same(a)
        and _same(given)
        and (regular is None or _same(regular))
    ):
        # A steady stretch: every tick asks about the same load (600 ticks of one load on
        # the starter's service). Each tick's loss is worked out on its own, with the same
        # operations on the same bits, so one tick's is every tick's.
        one = erlang_b_peaked(slots, a[:1], given[:1], None if regular is None else regular[:1])
        return np.full(len(a), one[0])
    z = np.clip(given, Z_MIN, None)
    x = slots / z
    lo = np.floor(x)
    b_lo, b_hi = _erlang_b_pair(lo, a / z)
    frac = x - lo
    b = (1.0 - frac) * b_lo + frac * b_hi
    smooth = given < Z_MIN
    if not smooth.any():
        plain: np.ndarray = b
        return plain
    # Smoother than Z_MIN: toward the loss of a perfectly regular stream (z = 0) at fixed
    # service times, D/D/c: the c slots free in turn, each taking the next arrival, so c of
    # every ceil(a) arrivals get in: nothing is lost up to capacity exactly, 1 - c/a (the
    # fluid loss) when a is whole, and 1/2 for one slot offered 1.4 Erlangs.
    lattice = a if regular is None else np.where(np.isnan(regular), a, regular)
    with np.errstate(divide="ignore", invalid="ignore"):
        ddc = np.where(lattice > 0, np.maximum(1.0 - slots / np.ceil(lattice - 1e-9), 0.0), 0.0)
    share = np.clip(given, 0.0, None) / Z_MIN
    with np.errstate(invalid="ignore"):  # the branch not taken may hold inf - inf
        blended = ddc + share * (b - ddc)
    loss: np.ndarray = np.where(smooth, blended, b)
    return loss


def _same(x: np.ndarray) -> bool:
    """Whether every element of a 1-d float array has the bits of the first."""
    bits = np.asarray(x, dtype=np.float64).view(np.int64)
    return bool((bits == bits[0]).all())


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
    if live.any():
        inv = _inverse_b(c[live], a[live])
        b[live] = 1.0 / inv
        b_next[live] = 1.0 / (1.0 + (c[live] + 1.0) / a[live] * inv)
    return b, b_next


def _inverse_b(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """1/B(c, a) by the recursion 1/B(k) = 1 + (k/a) / B(k-1), over the k that matter.

    Below ``k0 = min(c, a) - W sqrt(a)`` a station is deep in overload, where
    B(k0) = 1 - k0/a to within a relative O(1/(a (1 - k0/a)^2)), and any error there
    shrinks by k/a < 1 at every step up to min(c, a), by exp(-W^2/2) in all. The caller
    keeps away loads with more than ``a + W sqrt(a)`` slots, where B is below 1e-11 (a
    millionth of a URL in a tick of 100,000 arrivals). So each load takes at most
    2 W sqrt(a) + 2 W steps, whatever its size: 2,200 at 25,000 Erlangs. Loads are taken
    longest first, so each step works on the prefix still running.
    """
    if len(c) > 1:
        # A steady stretch asks about the same load tick after tick: work out each
        # distinct (slots, load) once (every one is worked out on its own either way).
        # Each pair as one complex number (the same bits, viewed): np.unique sorts those
        # far faster than rows.
        pairs = np.stack((c, a), axis=1).view(np.complex128).ravel()
        distinct, where = np.unique(pairs, return_inverse=True)
        if len(distinct) < len(c):
            inv = _inverse_b_each(distinct.real.copy(), distinct.imag.copy())
            out: np.ndarray = inv[where.reshape(-1)]
            return out
    return _inverse_b_each(c, a)


#: Up to this many loads the recursion runs on Python floats, one load after another (the
#: same operations in the same order, so the same bits): cheaper than a numpy call a step.
_FEW = 16


def _inverse_b_each(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """:func:`_inverse_b` of each (slots, load)."""
    spread = WIDTH * np.sqrt(a) + WIDTH
    k0 = np.maximum(np.floor(np.minimum(c, a) - spread), 0.0)
    steps = (c - k0).astype(np.int64)
    if len(c) <= _FEW:
        start = np.where(k0 > 0, a / np.maximum(a - k0, 1e-300), 1.0)  # 1/B(k0)
        values = []
        for inv, k, load, n in zip(
            start.tolist(), k0.tolist(), a.tolist(), steps.tolist(), strict=True
        ):
            for _ in range(n):
                k += 1.0
                inv = inv * k / load + 1.0
            values.append(inv)
        return np.array(values, dtype=np.float64)
    order = np.argsort(-steps, kind="stable")
    k = k0[order]
    load = a[order]
    inv = np.where(k > 0, load / np.maximum(load - k, 1e-300), 1.0)  # 1/B(k0)
    remaining = steps[order]
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


def jittered(window_s: np.ndarray, jitter_s: np.ndarray) -> np.ndarray:
    """How Poisson-like a periodic stream looks in windows of ``window_s`` once each URL is
    moved by an independent time of spread ``jitter_s`` (random service or lookup times):
    the dispersion of its counts, 1 - E[(w - |D|)+] / w with D the difference of two such
    moves (normal, variance 2 sigma^2). 0 without jitter, about 2 sigma / (sqrt(pi) w)
    for a small one, and toward 1 (Poisson) once the moves dwarf the window."""
    w = np.asarray(window_s, dtype=np.float64)
    tau = np.sqrt(2.0) * np.asarray(jitter_s, dtype=np.float64)
    out = np.zeros(np.broadcast(w, tau).shape)
    some = (tau > 0) & (w > 0)
    if some.any():
        ww = np.broadcast_to(w, out.shape)[some]
        tt = np.broadcast_to(tau, out.shape)[some]
        x = ww / tt
        pdf0 = 1.0 / math.sqrt(2.0 * math.pi)
        pdf = pdf0 * np.exp(-x * x / 2.0)
        inside = ww * (_std_normal_cdf(x) - 0.5) - tt * (pdf0 - pdf)
        out[some] = np.clip(1.0 - 2.0 * inside / ww, 0.0, 1.0)
    return out


#: Kernels worked out before, by what they depend on (read-only: every run shares them).
_KERNELS: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = {}
_KERNELS_HELD = 256  # entries kept at most; a kernel longer than _KERNEL_KEPT is not kept
_KERNEL_KEPT = 65_536


def station_kernels(
    service: ServiceTime, factor: float, tick_ms: int, max_ticks: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`occupancy_kernel` and :func:`holding_kernel` of a station, remembered across
    runs: they depend on the service time, the slowdown and the grid alone (a few percent
    of a reference run's time when worked out again each run). Read-only."""
    key = (service.dist, service.mean_ms, service.cv_value, factor, tick_ms, max_ticks)
    pair = _KERNELS.get(key)
    if pair is None:
        occupancy = occupancy_kernel(service, factor, tick_ms, max_ticks)
        holding = holding_kernel(service, factor, tick_ms, max_ticks)
        occupancy.flags.writeable = False
        holding.flags.writeable = False
        pair = (occupancy, holding)
        if len(occupancy) + len(holding) <= _KERNEL_KEPT:
            if len(_KERNELS) >= _KERNELS_HELD:
                _KERNELS.clear()
            _KERNELS[key] = pair
    return pair


def peakedness_factor(service: ServiceTime) -> float:
    """kappa = integral of P(S > t)^2 dt / E[S]: how much of an arrival stream's
    irregularity a station's occupancy keeps. A stream whose counts have variance I x mean
    gives occupancy peakedness z = 1 + (I - 1) kappa (deterministic service: kappa = 1;
    exponential: 1/2)."""
    return _kappa(service.dist, service.cv_value)


@functools.lru_cache(maxsize=256)
def _kappa(dist: str, cv: float) -> float:
    """:func:`peakedness_factor` by the service time's shape alone (remembered: a
    lognormal's is an integral)."""
    if dist == "deterministic":
        return 1.0
    if dist == "exponential":
        return 0.5
    # E[min(S1, S2)] / E[S] for two independent draws: integrate P(S > t)^2 numerically.
    mean = 1.0
    sigma = math.sqrt(math.log1p(cv**2))
    mu = math.log(mean) - sigma * sigma / 2
    t = np.exp(np.linspace(mu - 9 * sigma, mu + 9 * sigma, 4001))
    tail = 1.0 - _std_normal_cdf((np.log(t) - mu) / sigma)
    f = tail * tail
    integral = float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(t))) + float(t[0])  # P = 1 below t0
    return integral / mean


def occupancy_kernel(
    service: ServiceTime, factor: float, tick_ms: int, max_ticks: int | None = None
) -> np.ndarray:
    """Weights w[d]: the mean number of requests still in service during a tick, per request
    that arrived ``d`` ticks earlier (arrivals spread evenly within their tick; service times
    from ``service`` stretched by ``factor``). The weights add up to mean service / tick, so
    a steady rate r per tick offers r x mean service / tick Erlangs. At most ``max_ticks``
    weights (a run's length: older arrivals do not exist).

    With G(t) = E[min(S, t)] and T the tick, the chance that a request arriving at a uniform
    instant of one tick is in service at a uniform instant of the tick d later is
    ``w[d] = (1/T^2) x integral over x in [0, T] of G(dT + x) - G((d-1)T + x)`` (G = 0 below
    0): for fixed times in closed form, otherwise by Gauss-Legendre quadrature of first
    differences of G, which stay accurate where the second differences of its integral
    lose every digit (a 60 s lognormal service on 10 ms ticks).
    """
    tick = tick_ms / 1000.0
    mean = service.mean_ms / 1000.0 * factor
    cv = service.cv_value
    horizon = _horizon(service.dist, mean, cv)
    n = max(2, math.ceil(horizon / tick) + 2)
    whole = max_ticks is None or n <= max_ticks
    if not whole:
        n = max(2, int(max_ticks or 2))
    if service.dist == "deterministic":
        t = np.arange(-1, n + 1, dtype=np.float64) * tick
        h = np.where(t > 0, np.where(t <= mean, t * t / 2, mean * t - mean * mean / 2), 0.0)
        weights = (h[2:] - 2.0 * h[1:-1] + h[:-2]) / (tick * tick)
    else:
        nodes, gl_weights = np.polynomial.legendre.leggauss(16)
        x = (nodes + 1.0) / 2.0 * tick  # on [0, T]
        weights = np.empty(n)
        for start in range(0, n, 65_536):  # in blocks: a day's run has 1.7 million ticks
            d = np.arange(start, min(n, start + 65_536), dtype=np.float64)[:, None] * tick
            g = _g(service.dist, mean, cv, d + x) - _g(service.dist, mean, cv, d - tick + x)
            weights[start : start + len(d)] = (g * (gl_weights / 2.0)).sum(axis=1) / tick
    w: np.ndarray = np.maximum(weights, 0.0)
    total = float(w.sum())
    if whole and total > 0:
        w *= (mean / tick) / total  # the tail beyond the horizon, put back (< 1e-6)
    return w


def holding_kernel(
    service: ServiceTime, factor: float, tick_ms: int, max_ticks: int | None = None
) -> np.ndarray:
    """Weights v[d]: the chance that a request taken at a uniform instant of a tick still
    holds its slot at the end of the tick d later, ``(G((d+1)T) - G(dT)) / T`` with
    G(t) = E[min(S, t)]. A station never holds more than its slots, so the requests it
    takes in a tick are at most (slots - what earlier ticks still hold) / v[0]: for
    services much shorter than a tick that is rate x tick, and for long ones the free
    slots (:class:`gym.sim.flow.loss.LossStation`)."""
    tick = tick_ms / 1000.0
    mean = service.mean_ms / 1000.0 * factor
    cv = service.cv_value
    n = max(2, math.ceil(_horizon(service.dist, mean, cv) / tick) + 2)
    if max_ticks is not None:
        n = min(n, max(2, max_ticks))
    t = np.arange(n + 1, dtype=np.float64) * tick
    fixed = service.dist == "deterministic"
    g = np.minimum(t, mean) if fixed else _g(service.dist, mean, cv, t)
    v: np.ndarray = np.maximum(np.diff(g) / tick, 0.0)
    return v


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
            load += convolve(mine, kernel)[:n]
    return load


def convolve(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
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


def mean_held(service: ServiceTime, t: float) -> float:
    """E[min(S, t)]: the mean time a service of ``service`` holds its slot within ``t`` s.
    Over the mean, it is the chance that a slot busy at a random instant frees within t
    (the stationary residual service time is at most t)."""
    mean = service.mean_ms / 1000.0
    if service.dist == "deterministic":
        return min(t, mean)
    return float(_g(service.dist, mean, service.cv_value, np.array([t]))[0])


def _g(dist: str, mean: float, cv: float, t: np.ndarray) -> np.ndarray:
    """G(t) = E[min(S, t)] = t P(S > t) + E[S; S <= t], 0 for t <= 0 (random services)."""
    pos = np.maximum(t, 0.0)
    if dist == "exponential":
        g = mean * -np.expm1(-pos / mean)
    else:
        sigma = math.sqrt(math.log1p(cv * cv))
        mu = math.log(mean) - sigma * sigma / 2
        with np.errstate(divide="ignore"):
            z = (np.log(pos) - mu) / sigma
        g = pos * (1.0 - _std_normal_cdf(z)) + mean * _std_normal_cdf(z - sigma)
    result: np.ndarray = np.where(t > 0, g, 0.0)
    return result


#: Numerical Recipes' erfc fit, highest power first (Horner).
_ERFC_FIT = (
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
)


def _std_normal_cdf(z: np.ndarray) -> np.ndarray:
    """Phi(z) = erfc(-z / sqrt 2) / 2, with erfc to a relative 1.2e-7 (the Chebyshev fit of
    Numerical Recipes, section 6.2), vectorized."""
    x = -np.asarray(z, dtype=np.float64) / math.sqrt(2.0)
    ax = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * ax)
    poly = np.zeros_like(t)
    for coefficient in _ERFC_FIT:
        poly = coefficient + t * poly
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        tail = t * np.exp(-ax * ax + poly)
    erfc = np.where(x >= 0, tail, 2.0 - tail)
    phi: np.ndarray = np.where(np.isnan(x), 0.5, erfc / 2.0)
    return phi


def walk_overshoot(arrivals: int, ends: int, free: int, u: float | None = None) -> float:
    """The arrivals turned away in one tick by a station with ``free`` free slots at the
    tick's start and ``ends`` of its services ending within the tick, the two in a random
    order (each order of the ``arrivals + ends`` events alike: Poisson arrivals, and ends
    of services begun at random instants): their expected number, or with ``u`` (a
    uniform draw in [0, 1)) one draw of that number.

    The free slots move as a walk: an end frees one, an arrival takes one or, finding none,
    is turned away. So the arrivals turned away are ``(M - free)+`` with ``M`` the highest
    point of the walk of +1 for an arrival and -1 for an end (Lindley). For a random order
    of ``k`` ups and ``r`` downs, the reflection principle gives ``P(M >= h) = 1`` for
    ``h <= k - r`` and ``C(k + r, k - h) / C(k + r, k)`` for ``k - r < h <= k``;
    the mean is the sum of ``P(M >= h)`` over ``h > free``, and a draw counts the levels
    ``h > free`` with ``P(M >= h) > u``. A station already over its slots (``free``
    below 0, which the walk never reaches: its takes keep it within them) gives its first
    ends to that excess and takes the rest as in a random order: an approximation, below
    the exact law (one arrival, two ends and one slot too many: 1/2, not 2/3)."""
    if free < 0:
        ends = max(0, ends + free)
        free = 0
    k, r = arrivals, ends
    if free >= k:
        return 0.0
    sure = max(0, k - r - free)  # levels up to k - r: reached by every order
    h = max(free + 1, k - r + 1)
    if h > k:
        return float(sure)
    # P(M >= h) = k! r! / ((k - h)! (r + h)!), then times (k - h) / (r + h + 1) a level.
    term = math.exp(
        math.lgamma(k + 1) + math.lgamma(r + 1) - math.lgamma(k - h + 1) - math.lgamma(r + h + 1)
    )
    total = 0.0
    if u is None:
        while h <= k and term > 1e-16:
            total += term
            term *= (k - h) / (r + h + 1)
            h += 1
    else:
        while h <= k and term > u:
            total += 1.0
            term *= (k - h) / (r + h + 1)
            h += 1
    return sure + total
