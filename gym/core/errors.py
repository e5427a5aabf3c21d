"""The one error type users see: what is wrong, in which file, at which field."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where it is and what is wrong with it."""

    file: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        """One line, whatever the message held. The file and the field are shown as
        written (a newline or tab as an escape, two spaces as two), since they name
        something; the message's line breaks and runs of spaces become one space."""
        from gym.core.text import printable

        parts = [printable(p) for p in (self.file, self.field) if p]
        return ": ".join([*parts, " ".join(self.message.split())])


@dataclass
class GymError(Exception):
    """Invalid input (a design, a scenario, an option). Carries one or more problems.

    The CLI prints each problem on one line (``file: field: message``) and exits 2.
    """

    problems: list[Problem] = field(default_factory=list)

    @classmethod
    def single(cls, file: str | None, field_: str | None, message: str) -> GymError:
        return cls([Problem(file, field_, message)])

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
