"""Shared base for every input model: strict, closed, documented."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


def _whole_float_to_int(value: Any) -> Any:
    """``1e5`` or ``4.0`` -> 100000 or 4, for a count: people write counts as numbers, and a
    float with no fractional part (exactly representable) is the count it says. Anything
    else, 4.5 and true included, is left for strict validation to refuse."""
    if (
        isinstance(value, float)
        and math.isfinite(value)
        and value.is_integer()
        and abs(value) <= 2**53
    ):
        return int(value)
    return value


class InputModel(BaseModel):
    """Base of every YAML-facing model.

    Unknown keys are errors (a typo must not silently mean "default"), numbers must be
    finite, no string-to-number coercion, and models are immutable once validated.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        frozen=True,
        validate_default=True,
        # Validators are built when a model first validates, not when its class is
        # defined: the command line pays only for the models a file uses (a crawler
        # design never builds the graph models), about 0.1 s less per command.
        defer_build=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _counts_written_as_numbers(cls, data: Any) -> Any:
        """A count (URLs, replicas, hosts) is an integer, also when written 1e5 or 4.0."""
        if not isinstance(data, dict):
            return data
        fixed = {
            k: _whole_float_to_int(v)
            for k, v in data.items()
            if k in cls.model_fields and cls.model_fields[k].annotation in (int, int | None)
        }
        return {**data, **fixed} if fixed else data


#: Bounds of every rate: small and large enough for any crawler, and such that any ratio
#: of two rates (units of a component, slots, ticks) stays a finite number.
MIN_RATE = 1e-3
MAX_RATE = 1e9

Rate = Annotated[float, Field(ge=MIN_RATE, le=MAX_RATE)]
"""A capacity or a load in units per second: finite, from 0.001/s to 1e9/s."""


#: Service times less variable than this (coefficient of variation) are nearly fixed: the
#: request engine paces a paced fleet's starts only for them (more variable ones would not
#: stay in step), and a grid rounding their slots up moves what they hold.
NEARLY_FIXED_CV = 0.5


class ServiceTime(InputModel):
    """How long one unit of work takes at a component.

    The request engine draws each service time from this distribution; so does the flow
    engine for a fleet of random times a tick or more long, not paced; elsewhere it uses
    the mean as a fixed delay (fetches) or as the latency estimate (the others).
    A component's concurrent slots are capacity x mean service time (at least 1).
    """

    dist: Literal["deterministic", "exponential", "lognormal"] = Field(
        "deterministic",
        description="Service-time distribution: deterministic, exponential or lognormal.",
    )
    mean_ms: float = Field(
        description="Mean service time in milliseconds (1 microsecond to 10 minutes).",
        ge=0.001,
        le=600_000,
    )
    cv: float | None = Field(
        None,
        description=(
            "Coefficient of variation (std/mean): required for lognormal; 1 for "
            "exponential and 0 for deterministic, which need not give it."
        ),
        ge=0,
        le=100,
    )

    @model_validator(mode="after")
    def _cv_fits_dist(self) -> ServiceTime:
        fixed = {"deterministic": 0.0, "exponential": 1.0}
        if self.dist == "lognormal":
            if not self.cv:
                raise FieldError("cv", "a lognormal service time needs cv > 0 (std / mean)")
        elif self.cv is not None and self.cv != fixed[self.dist]:
            raise FieldError(
                "cv", f"{self.cv:g} does not fit {self.dist}, whose cv is {fixed[self.dist]:g}"
            )
        return self

    @property
    def cv_value(self) -> float:
        """The coefficient of variation this distribution has."""
        if self.dist == "exponential":
            return 1.0
        return self.cv or 0.0

    @property
    def nearly_fixed(self) -> bool:
        """Fixed, or less variable than :data:`NEARLY_FIXED_CV`."""
        return self.cv_value < NEARLY_FIXED_CV


class FieldError(ValueError):
    """A cross-field check that knows which field is wrong (the loader reports ``field``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
