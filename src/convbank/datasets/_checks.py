"""Checks of one conversation: what ``convbank validate`` runs. Pure functions of the unified
model, so that a dataset package can define its own beside its mapper.

A check yields ``(severity, message)`` pairs; it returns ``None`` when it does not apply to
that conversation (a walk-away check on a dialogue that ended in a deal). A conversation
passes a check when the check applies and finds nothing::

    CHECKS = CheckList("casino")

    @CHECKS.check("casino.walk_away")
    def walk_away(conv: Conversation) -> Iterator[Problem] | None:
        \"\"\"A walk-away gives both negotiators 5 points.\"\"\"
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from convbank.model import Conversation

__all__ = ["SEVERITIES", "Check", "CheckFunction", "CheckList", "Problem", "Severity"]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
"""Severities, worst first."""
Problem = tuple[Severity, str]
CheckFunction = Callable[[Conversation], Iterable[Problem] | None]


@dataclass(frozen=True)
class Check:
    """A named check of one conversation, for every dataset (``dataset`` None) or one."""

    name: str
    description: str
    func: CheckFunction
    dataset: str | None = None

    def run(self, conversation: Conversation) -> list[Problem] | None:
        """The problems found (empty when it passes), or None when it does not apply."""
        found = self.func(conversation)
        return None if found is None else list(found)


class CheckList(list[Check]):
    """The checks of one dataset (or, with ``dataset=None``, of every dataset), in order;
    :meth:`check` adds a function as a check. Names are unique within the list (and, once
    registered, across the registry: :data:`convbank.registry.checks`)."""

    def __init__(self, dataset: str | None) -> None:
        super().__init__()
        self.dataset = dataset

    def check(self, name: str) -> Callable[[CheckFunction], CheckFunction]:
        """Add the decorated function as check ``name``; its docstring's first line is the
        description."""

        def add(func: CheckFunction) -> CheckFunction:
            if any(c.name == name for c in self):
                raise ValueError(f"a check named {name!r} is already in this list")
            description = (func.__doc__ or name).strip().splitlines()[0]
            self.append(Check(name, description, func, self.dataset))
            return func

        return add
