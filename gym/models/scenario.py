"""A scenario: the exam a design sits (scenarios/*.yaml)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, model_validator

from gym.models.alerts import Alerts
from gym.models.catalog import Catalog
from gym.models.common import FieldError, InputModel, Rate, ServiceTime

#: The longest scenario, seconds (one day); also the longest a fault can last.
MAX_DURATION_S = 86_400
#: The most load stages and the most faults a scenario may list: each is an event the
#: engines, the explanations and the error budget go through, more than once.
MAX_STAGES = 100
MAX_FAULTS = 100

#: Crawler components a stall or a slowdown can hit (a crash hits fetcher replicas); the
#: seen set only in a design with the link-discovery loop (gym.api.validate).
CRAWLER_TARGETS: tuple[str, ...] = ("frontier", "cache", "resolver", "page_store", "seen_set")

#: A node a fault hits: a crawler component, or a node of a graph design (whose names the
#: scenario checks against the design when the two meet, gym.api.validate).
CapacityTarget = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]  # NodeName


class LoadStage(InputModel):
    """From ``at_s`` on, the offered load is ``multiplier`` x ``base_rps``."""

    at_s: float = Field(
        description="Start of the stage, seconds from the start.", ge=0, le=MAX_DURATION_S
    )
    multiplier: float = Field(description="Multiplier of base_rps.", ge=0, le=1_000)
    label: str | None = Field(
        None, description="Name of the stage in explanations.", max_length=200
    )
    links_per_page: float | None = Field(
        None,
        description=(
            "From at_s on, links a fetched page yields (a deep crawl: more); omit to keep "
            "the stage before's (at first web.links_per_page). Needs a design with discovery."
        ),
        ge=0,
        le=1_000,
    )


class _FaultBase(InputModel):
    at_s: float = Field(
        description="When the fault starts, seconds from the start.", ge=0, le=MAX_DURATION_S
    )
    label: str | None = Field(
        None, description="Name of the fault in explanations.", max_length=200
    )


class CrashFault(_FaultBase):
    """Fetcher replicas crash; without ``for_s`` they stay down."""

    kind: Literal["crash"] = Field(description="Fault type.")
    target: CapacityTarget = Field(
        "fetchers", description="The fleet that loses replicas (the crawler's: fetchers)."
    )
    replicas: int = Field(1, description="How many replicas crash.", gt=0, le=100_000)
    for_s: float | None = Field(
        None,
        description="Seconds until the replicas recover (at most a day); omit: they stay down.",
        gt=0,
        le=MAX_DURATION_S,
    )


class StallFault(_FaultBase):
    """A component's capacity is 0 for ``for_s`` seconds."""

    kind: Literal["stall"] = Field(description="Fault type.")
    target: CapacityTarget = Field(description="The component that stalls.")
    for_s: float = Field(
        description="How long the stall lasts, seconds (at most a day).", gt=0, le=MAX_DURATION_S
    )


class SlowdownFault(_FaultBase):
    """A component's latency is multiplied by ``factor`` and its capacity divided by it."""

    kind: Literal["slowdown"] = Field(description="Fault type.")
    target: CapacityTarget = Field(description="The component that slows down.")
    factor: float = Field(description="Slowdown factor (3 = three times slower).", ge=1, le=1e6)
    for_s: float = Field(
        description="How long the slowdown lasts, seconds (at most a day).",
        gt=0,
        le=MAX_DURATION_S,
    )


Fault = Annotated[CrashFault | StallFault | SlowdownFault, Field(discriminator="kind")]


class ResolverConfig(InputModel):
    """The external DNS resolver (costs no units)."""

    rps: Rate = Field(
        5_000,
        description=(
            "Lookups/s the resolver answers (slots = rps x lookup time); a lookup that finds "
            "every slot busy fails."
        ),
    )
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=20.0),
        description=(
            "Lookup time (default 20 ms). A slowdown by f multiplies it by f; the resolver "
            "is concurrency-limited (slots = rps x mean), so its capacity is divided by f."
        ),
    )


class WebConfig(InputModel):
    """The web being crawled, as politeness sees it."""

    hosts: int = Field(1_000_000, description="Distinct hosts with URLs to crawl.", gt=0, le=10**10)
    crawl_delay_s: float = Field(
        1.0,
        description="Seconds between two fetches of one host (politeness), 1 ms to an hour.",
        ge=0.001,
        le=3600,
    )
    host_zipf: float = Field(
        1.0,
        description=(
            "How URLs spread over hosts: the host of rank r gets a share proportional to "
            "1 / r^host_zipf (0: every host alike; 1: a few hosts hold most URLs)."
        ),
        ge=0,
        le=3,
    )
    js_render_share: float = Field(
        0.0,
        description=(
            "Share of pages that need JavaScript rendering (a headless browser) before "
            "their links and text can be read."
        ),
        ge=0,
        le=1,
    )
    js_render_cost: float = Field(
        10.0,
        description=(
            "CPU a rendered page costs a fetcher, as a multiple of a plain page's: a "
            "replica fetches rps_per_replica / (1 - share + share x cost) pages/s."
        ),
        ge=1,
        le=1000,
    )
    high_priority_share: float = Field(
        0.1,
        description="Share of URLs in the high priority band (the rest are low).",
        ge=0,
        le=1,
    )
    links_per_page: float = Field(
        0.0,
        description=(
            "Links a fetched page yields (Poisson per page), each looked up in the seen-URL "
            "set and, when new, crawled: the link-discovery loop of a design with "
            "discovery (ignored without it). A load stage may change it."
        ),
        ge=0,
        le=1_000,
    )
    links_seen_fraction: float = Field(
        0.9,
        description=(
            "Share of the links found that point to URLs already seen (a page links "
            "mostly to known pages): the seen-URL set skips them (seen_url)."
        ),
        ge=0,
        le=1,
    )
    hot_key_share: float = Field(
        0.0,
        description=(
            "Share of seen-set lookups for one hot URL (a link on every page): they all "
            "land on one shard, so the busiest shard takes hot_key_share + (1 - "
            "hot_key_share) / shards of the lookups."
        ),
        ge=0,
        le=1,
    )


class DedupWorld(InputModel):
    """How much of what the crawler meets it has seen before."""

    seen_url_fraction: float = Field(
        0.0,
        description=(
            "Fraction of offered URLs already crawled: the seen set drops them before the "
            "frontier (outcome: skipped), except those a recrawl fetches again (the "
            "design's dedup.recrawl, changed_fraction)."
        ),
        ge=0,
        lt=1,
    )
    changed_fraction: float = Field(
        0.0,
        description=(
            "Fraction of the URLs seen before whose page changed since its last crawl: a "
            "recrawl by change rate fetches them again and skips the rest."
        ),
        ge=0,
        le=1,
    )
    variant_fraction: float = Field(
        0.0,
        description=(
            "Fraction of the new URLs that are syntactic variants of a URL already known "
            "(another case, a tracking parameter): only a canonicalizing crawler recognizes "
            "them (skipped, url_variant); otherwise they are fetched again."
        ),
        ge=0,
        lt=1,
    )
    duplicate_body_fraction: float = Field(
        0.0,
        description="Fraction of new pages whose body duplicates one already stored.",
        ge=0,
        le=1,
    )
    urls: float = Field(
        1e9, description="URLs the seen set must remember (for its memory).", gt=0, le=1e13
    )
    page_kb: float = Field(100, description="Size of a page on the wire, KB.", gt=0, le=1e6)


class MinSLO(InputModel):
    """An SLO met when the measured value is at least ``min``."""

    min: float = Field(description="Lowest acceptable value.", ge=0)


class MaxSLO(InputModel):
    """An SLO met when the measured value is at most ``max``."""

    max: float = Field(description="Highest acceptable value.", ge=0)


class AvailabilitySLO(InputModel):
    """Served / (served + failed) must be at least ``min``."""

    min: float = Field(description="Lowest acceptable availability (0 to 1).", ge=0, le=1)


class SLOs(InputModel):
    """The scenario's SLOs; any subset."""

    throughput_rps: MinSLO | None = Field(None, description="Served URLs per second, at least.")
    availability: AvailabilitySLO | None = Field(
        None, description="Served / (served + failed), at least."
    )
    peak_saturation: MaxSLO | None = Field(
        None, description="Highest demand/capacity of any component in any 1 s window, at most."
    )
    cost_units: MaxSLO | None = Field(None, description="Provisioned units, at most.")

    def count(self) -> int:
        """How many SLOs the scenario sets."""
        return sum(1 for v in self.model_dump().values() if v is not None)


class Scenario(InputModel):
    """Duration, load, faults, SLOs, prices and the outside world."""

    _source: str | None = PrivateAttr(None)  # the file it was loaded from
    _slos_file: str | None = PrivateAttr(None)  # the OpenSLO file its SLOs came from
    _slos_notes: list[str] = PrivateAttr(default_factory=list)  # what that file's reading noted

    name: str | None = Field(
        None, description="Name shown in results; defaults to the file name.", max_length=200
    )
    system: Literal["crawler", "graph"] = Field(
        "crawler",
        description=(
            "What the scenario is for: the crawler (faults hit its components by role), or "
            "graph designs (faults hit the nodes they name)."
        ),
    )
    duration_s: float = Field(
        description="Length of the run, seconds: at least 1 (one window), at most a day.",
        ge=1,
        le=MAX_DURATION_S,
    )
    base_rps: Rate = Field(description="Offered load at multiplier 1.0, URLs per second.")
    arrivals: Literal["poisson", "deterministic"] = Field(
        "poisson",
        description=(
            "poisson: random arrivals per tick from the seeded generator; deterministic: "
            "exactly rate x tick per tick, evenly spaced (for hand-checkable studies)."
        ),
    )
    load: list[LoadStage] = Field(
        default_factory=lambda: [LoadStage(at_s=0, multiplier=1.0)],
        description="Piecewise-constant load multiplier; the first stage starts at 0.",
        min_length=1,
        max_length=MAX_STAGES,
    )
    faults: list[Fault] = Field(
        default_factory=list, description="Chaos events.", max_length=MAX_FAULTS
    )
    resolver: ResolverConfig = Field(
        default_factory=ResolverConfig, description="The external DNS resolver."
    )
    web: WebConfig = Field(default_factory=WebConfig, description="Hosts and crawl delay.")
    dedup: DedupWorld = Field(
        default_factory=DedupWorld, description="Seen URLs and duplicate bodies."
    )
    slos: SLOs = Field(default_factory=SLOs, description="What the design must meet.")
    slos_from: str | None = Field(
        None,
        description=(
            "An OpenSLO v1 file (relative to this one) to take the SLOs from, in place of "
            "slos: its SLO and SLI documents (gym slo export writes one; docs/slos.md)."
        ),
        min_length=1,
        max_length=4096,
    )
    catalog: Catalog = Field(default_factory=Catalog, description="Unit prices.")
    alerts: Alerts = Field(
        default_factory=Alerts,
        description=(
            "Burn-rate alerts replayed on the availability SLO's error budget "
            "(docs/alerts.md); the SRE Workbook's by default."
        ),
    )

    @model_validator(mode="after")
    def _timeline_fits(self) -> Scenario:
        self._stages_in_order()
        if self.system == "graph":
            self._no_crawler_world()
        else:
            self._crawler_targets()
        self._within_duration()
        if self.slos_from is not None and "slos" in self.model_fields_set:
            raise FieldError("slos_from", "give slos or slos_from, not both")
        listed = isinstance(self.alerts.conditions, list)
        if listed and self.slos.availability is None and self.slos_from is None:
            raise FieldError(
                "alerts.conditions",
                "burn-rate alerts watch the availability SLO's error budget; set "
                "slos.availability (or leave the alerts out)",
            )
        return self

    def _stages_in_order(self) -> None:
        """The load stages start at 0 and are listed in time order."""
        if self.load[0].at_s != 0:
            raise FieldError(
                "load[0].at_s", f"the first load stage must start at 0, not {self.load[0].at_s:g}"
            )
        for i in range(1, len(self.load)):
            if self.load[i].at_s <= self.load[i - 1].at_s:
                raise FieldError(
                    f"load[{i}].at_s",
                    f"{self.load[i].at_s:g} must come after load[{i - 1}].at_s "
                    f"({self.load[i - 1].at_s:g}); stages are listed in time order",
                )

    def _no_crawler_world(self) -> None:
        """A graph scenario leaves the crawler's world (resolver, web, dedup) alone."""
        defaults = {"resolver": ResolverConfig(), "web": WebConfig(), "dedup": DedupWorld()}
        for key, default in defaults.items():
            if getattr(self, key) != default:
                raise FieldError(
                    key,
                    "a graph scenario has no crawler world; the design's nodes are the "
                    "whole system (put an external service in the graph as a service node)",
                )

    def _crawler_targets(self) -> None:
        """A crawler scenario's faults name the crawler's components (a crash, its fleet)."""
        for i, fault in enumerate(self.faults):
            allowed = ("fetchers",) if isinstance(fault, CrashFault) else CRAWLER_TARGETS
            if fault.target not in allowed:
                names = [f"'{a}'" for a in allowed]
                choice = names[0] if len(names) == 1 else ", ".join(names[:-1])
                if len(names) > 1:
                    choice += f" or {names[-1]}"
                raise FieldError(f"faults[{i}].target", f"must be {choice} (got {fault.target!r})")

    def _within_duration(self) -> None:
        """Every load stage and fault starts before the scenario ends."""
        starts = [(f"load[{i}].at_s", x.at_s) for i, x in enumerate(self.load)]
        starts += [(f"faults[{i}].at_s", x.at_s) for i, x in enumerate(self.faults)]
        for field, at_s in starts:
            if at_s >= self.duration_s:
                raise FieldError(
                    field,
                    f"{at_s:g} is at or after the end of the scenario "
                    f"(duration_s {self.duration_s:g})",
                )
