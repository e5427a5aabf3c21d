"""Pipeline components, one module each, all of one shape (see ``base``)."""

from gym.components.base import Component, Ledger, LossStation, RatedComponent, tick_quota
from gym.components.cache import Cache
from gym.components.client import Client
from gym.components.fetchers import FetcherFleet
from gym.components.frontier import Frontier
from gym.components.resolver import Resolver
from gym.components.store import PageStore
from gym.components.writer import AsyncWriter

__all__ = [
    "AsyncWriter",
    "Cache",
    "Client",
    "Component",
    "FetcherFleet",
    "Frontier",
    "Ledger",
    "LossStation",
    "PageStore",
    "RatedComponent",
    "Resolver",
    "tick_quota",
]
