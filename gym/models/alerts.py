"""Burn-rate alerts on the availability SLO's error budget (a scenario's ``alerts``).

A burn rate is the share of finished URLs that failed in a window, over the share the
SLO allows (1 - its target): 1 spends the budget exactly as fast as it accrues. A
multiwindow alert fires while the burn rate over both its long and its short window is
at least its threshold (the SRE Workbook's "multiwindow, multi-burn-rate alerts"). The
windows are production durations: a run of a few seconds stands for a compressed span of
time (``time_scale``), see gym.analysis.alerts.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from gym.models.common import FieldError, InputModel

#: Units of a duration: OpenSLO's shorthand (m, h, d, w) and seconds. Months, quarters
#: and years (M, Q, Y) have no fixed length and are not read.
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
Duration = Annotated[
    str,
    Field(
        pattern=r"^[1-9][0-9]{0,6}[smhdw]$",
        description="A duration: a whole number and a unit, s, m, h, d or w (5m, 1h, 3d).",
    ),
]


def seconds(duration: str) -> float:
    """``5m`` -> 300.0."""
    match = re.fullmatch(r"([0-9]+)([smhdw])", duration)
    if match is None:
        raise ValueError(duration)
    return float(int(match.group(1)) * UNITS[match.group(2)])


class BurnRateAlert(InputModel):
    """Fires while the error budget burns at ``burn_rate`` or faster over ``long_window``
    and over ``short_window`` (if given), for ``alert_after`` (if given)."""

    name: str = Field(
        description="What the alert is called in results.", min_length=1, max_length=100
    )
    severity: str = Field(
        "page", description="page, ticket, or any word your on-call uses.", max_length=50
    )
    burn_rate: float = Field(description="Threshold: the budget's burn rate, x.", gt=0, le=1e6)
    long_window: Duration
    short_window: Duration | None = Field(
        None, description="The second, shorter window (the Workbook's: 1/12 of the long)."
    )
    alert_after: Duration | None = Field(
        None, description="How long the condition must hold before the alert fires."
    )

    @field_validator("long_window", "short_window", "alert_after", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if value is not None and not (
            isinstance(value, str) and re.fullmatch(r"[1-9][0-9]{0,6}[smhdw]", value)
        ):
            raise ValueError(
                "not a duration: a whole number from 1 (at most 7 digits) and s, m, h, d "
                "or w, e.g. 5m, 1h, 3d"
            )
        return value

    @model_validator(mode="after")
    def _short_is_shorter(self) -> BurnRateAlert:
        if self.short_window is not None and seconds(self.short_window) >= seconds(
            self.long_window
        ):
            raise FieldError(
                "short_window",
                f"{self.short_window} must be shorter than long_window ({self.long_window})",
            )
        return self


#: The SRE Workbook's multiwindow, multi-burn-rate alerts for a 30-day budget (ch. 5,
#: table 5-8): 2% of the budget in an hour, 5% in six hours, 10% in three days.
_WORKBOOK = (
    ("page-1h", "page", 14.4, "1h", "5m"),
    ("page-6h", "page", 6, "6h", "30m"),
    ("ticket-3d", "ticket", 1, "3d", "6h"),
)


@cache
def workbook() -> tuple[BurnRateAlert, ...]:
    """The Workbook's three alerts (built on first use: models validate lazily)."""
    return tuple(
        BurnRateAlert.model_validate(
            {"name": n, "severity": s, "burn_rate": r, "long_window": lw, "short_window": sw}
        )
        for n, s, r, lw, sw in _WORKBOOK
    )


def _form(value: Any) -> str:
    return "alert-list" if isinstance(value, list) else "alert-word"


#: A word or a list of alerts: checked as the one the value is (an error names its field,
#: not both forms' internals).
Conditions = Annotated[
    Annotated[Literal["workbook", "none"], Tag("alert-word")]
    | Annotated[list[BurnRateAlert], Field(max_length=20), Tag("alert-list")],
    Discriminator(_form),
]


class Alerts(InputModel):
    """Which burn-rate alerts watch the availability SLO during the run."""

    conditions: Conditions = Field(
        "workbook",
        description=(
            "workbook: the SRE Workbook's three (page 14.4x over 1h and 5m, page 6x over 6h "
            "and 30m, ticket 1x over 3d and 6h); none; or a list of your own (at most 20)."
        ),
    )
    time_scale: float | None = Field(
        None,
        description=(
            "Production seconds one second of the run stands for. Default: the longest "
            "window over the run's duration (a 40 s run stands for the 3 days of the "
            "Workbook's ticket window), or 1 when every window fits in the run."
        ),
        ge=1,
        le=1e9,
    )

    def resolved(self) -> tuple[BurnRateAlert, ...]:
        """The conditions, the Workbook's named by the word."""
        if self.conditions == "workbook":
            return workbook()
        if self.conditions == "none":
            return ()
        names = [a.name for a in self.conditions]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise FieldError(f"conditions[{i}].name", f"{name!r} names two alerts")
        return tuple(self.conditions)

    @model_validator(mode="after")
    def _names_once(self) -> Alerts:
        self.resolved()
        return self
