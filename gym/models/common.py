"""Shared base for every input model: strict, closed, documented."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


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
    )


Rate = Annotated[float, Field(gt=0, le=1e9)]
"""A capacity or a load in units per second: positive, finite, at most 1e9/s."""


class ServiceTime(InputModel):
    """How long one unit of work takes at a component.

    The flow engine uses only ``mean_ms`` (as a fixed delay); the distribution is for
    the per-request engine.
    """

    dist: Literal["deterministic", "exponential", "lognormal"] = Field(
        "deterministic",
        description="Service-time distribution (the flow engine uses the mean as a fixed delay).",
    )
    mean_ms: float = Field(description="Mean service time in milliseconds.", gt=0, le=600_000)
    cv: float = Field(
        0.0,
        description="Coefficient of variation (std/mean); used by lognormal only.",
        ge=0,
        le=100,
    )


class FieldError(ValueError):
    """A cross-field check that knows which field is wrong (the loader reports ``field``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
