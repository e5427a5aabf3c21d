"""The playground's share links: the design being edited, the scenario and the seed, in
the page's address (``/?scenario=...&seed=...&design=...``), so that opening the link
(or reloading the page) shows the same run.

The design travels as its fields that differ from their defaults, as JSON, compressed
with zlib and written in URL-safe base64: the reference design is about 180 characters.
A link is input like a file: its design is checked as ``gym validate`` checks one (the
same one-line messages), its size is limited before and after decompression, and its
scenario is one of those the page offers (the server's, and the project's
``scenarios/``), never a path the link names.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from gym.core.errors import GymError, Problem
from gym.core.limits import MAX_SEED
from gym.inputs.strict_yaml import MAX_FILE_BYTES

if TYPE_CHECKING:
    from gym.models import Design, Scenario
    from gym.system.graph import GraphDesign

#: What the messages about a link's contents name as their file.
LINK = "the link"
#: The longest encoded design a link may carry (a browser keeps URLs of this size).
MAX_ENCODED = 32_000


def encode(design: Design | GraphDesign) -> str:
    """A design as a link carries it: its non-default fields, compressed."""
    data = design.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    text = json.dumps(data, separators=(",", ":"), sort_keys=False)
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


def decode(text: str) -> bytes:
    """The design file a link's ``design`` carries (JSON, which a design file may be),
    to be read as a file is; GymError if it is not one this page wrote, or is over the
    limits."""
    if len(text) > MAX_ENCODED:
        raise _bad(f"{len(text):,} characters; a link's design takes at most {MAX_ENCODED:,}")
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflate = zlib.decompressobj()
        raw = inflate.decompress(packed, MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES or inflate.unconsumed_tail:
            raise _bad(f"over {MAX_FILE_BYTES:,} bytes once unpacked, a design file's limit")
        if not inflate.eof:
            raise ValueError("truncated")
    except (binascii.Error, ValueError, zlib.error):
        raise _bad("not a design a playground link carries (cut short or altered?)") from None
    return raw


def read_seed(text: str, last: int) -> int:
    """A seed as written (in a link, in the page's box): decimal digits, 0 to ``last``;
    GymError naming what was written (cut to 40 characters) otherwise."""
    digits = text.strip()
    if re.fullmatch(r"[0-9]{1,19}", digits) and int(digits) <= last:
        return int(digits)
    shown = clipped(text)
    why = "a seed is needed" if not digits else f"{shown!r}: a whole number"
    raise GymError.single(None, "seed", f"{why} from 0 to {last:,}")


def clipped(text: str, most: int = 40) -> str:
    """``text`` as a message quotes it: at most ``most`` characters."""
    return text if len(text) <= most else text[:most] + "..."


def _bad(message: str) -> GymError:
    return GymError.single(LINK, "design", message)


@dataclass
class Scenarios:
    """The scenarios the page offers, by the label it shows (a path under the working
    directory, as ``--scenario`` takes it): the server's own first, then the project's
    ``scenarios/*.yaml`` and ``scenarios/*/*.yaml``. A link names one of these labels;
    each is read once, when first chosen."""

    first: str
    loaded: dict[str, Scenario] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def around(cls, label: str, scenario: Scenario, root: Path | None = None) -> Scenarios:
        """The server's scenario (``label``: how the command line named it) and the
        project's, found under ``root`` (the working directory)."""
        base = Path.cwd() if root is None else root
        found = sorted(base.glob("scenarios/*.yaml")) + sorted(base.glob("scenarios/*/*.yaml"))
        paths = {p.relative_to(base).as_posix(): p for p in found if p.is_file()}
        paths.pop(label, None)
        return cls(label, {label: scenario}, paths)

    @property
    def labels(self) -> list[str]:
        return [self.first, *self.paths]

    def get(self, label: str) -> Scenario:
        """The scenario of ``label``, read as ``gym run --scenario`` reads it; GymError
        if the page does not offer it or it does not load."""
        if label in self.loaded:
            return self.loaded[label]
        if label not in self.paths:
            raise GymError.single(
                LINK,
                "scenario",
                f"{clipped(label)!r} is not one of the scenarios this page offers",
            )
        from gym.inputs.loading import load_scenario

        scenario = load_scenario(self.paths[label])
        scenario._source = label  # messages name it as the menu does, not the server's path
        self.loaded[label] = scenario
        return scenario


def query(design: Design | GraphDesign, scenario: str, seed: int) -> str:
    """The query string of a link to ``design`` under ``scenario`` (a label), ``seed``."""
    return urlencode({"scenario": scenario, "seed": seed, "design": encode(design)}, safe="/")


@dataclass(frozen=True)
class Link:
    """What a link asks for (each None when it does not say), and what was wrong with
    it (the parts that were wrong are left out: the page opens without them)."""

    design: bytes | None = None
    scenario: str | None = None
    seed: int | None = None
    problems: tuple[Problem, ...] = ()


def parse(arguments: Mapping[str, list[bytes]]) -> Link:
    """A request's query arguments (as the server gives them: bytes, by name) as a
    :class:`Link`. Unknown arguments are ignored, as a web page does."""
    problems: list[Problem] = []

    def one(name: str) -> str | None:
        values = arguments.get(name) or []
        if not values:
            return None
        try:
            return values[-1].decode("utf-8")
        except UnicodeDecodeError:
            problems.append(Problem(LINK, name, "not UTF-8 text"))
            return None

    design = scenario = seed = None
    text = one("design")
    if text is not None:
        try:
            design = decode(text)
        except GymError as err:
            problems += err.problems
    scenario = one("scenario")
    raw_seed = one("seed")
    if raw_seed is not None:
        try:
            seed = read_seed(raw_seed, MAX_SEED)
        except GymError as err:
            problems += [Problem(LINK, p.field, p.message) for p in err.problems]
    return Link(design, scenario, seed, tuple(problems))
