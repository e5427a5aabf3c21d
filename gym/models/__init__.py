"""Validated input models: designs, scenarios and the unit catalog."""

from gym.models.catalog import Catalog
from gym.models.common import FieldError, InputModel, ServiceTime
from gym.models.design import (
    AsyncWriterConfig,
    CacheConfig,
    DedupConfig,
    Design,
    DiscoveryConfig,
    FetchersConfig,
    FrontierConfig,
    PageStoreConfig,
    RetryPolicy,
)
from gym.models.scenario import (
    CrashFault,
    DedupWorld,
    Fault,
    LoadStage,
    ResolverConfig,
    Scenario,
    SLOs,
    SlowdownFault,
    StallFault,
    WebConfig,
)

__all__ = [
    "AsyncWriterConfig",
    "CacheConfig",
    "Catalog",
    "CrashFault",
    "DedupConfig",
    "DedupWorld",
    "Design",
    "DiscoveryConfig",
    "Fault",
    "FetchersConfig",
    "FieldError",
    "FrontierConfig",
    "InputModel",
    "LoadStage",
    "PageStoreConfig",
    "ResolverConfig",
    "RetryPolicy",
    "SLOs",
    "Scenario",
    "ServiceTime",
    "SlowdownFault",
    "StallFault",
    "WebConfig",
]
