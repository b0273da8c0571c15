"""The machinery of validation: findings, results, and the run over a bank.

Checks are defined where their knowledge is: the generic ones in
:mod:`convbank.datasets._generic`, each dataset's in its package (:meth:`Presentation.checks`); they
are found through :data:`convbank.registry.checks` (see :mod:`convbank.datasets._checks` for
what a check is). Split-level checks (ids unique, published counts) run once per split over
SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from convbank import registry
from convbank.datasets import SEVERITIES, Check, Problem, Severity
from convbank.model import Conversation

__all__ = [
    "Check",
    "CheckResult",
    "Finding",
    "Problem",
    "Recorder",
    "Severity",
    "ValidationReport",
    "checks_for",
]


def checks_for(dataset: str) -> list[Check]:
    """The generic checks, then the dataset's own (from :data:`convbank.registry.checks`; an
    imported dataset's, which the registry does not list, from its presentation)."""
    every = list(registry.checks)
    own = [c for c in every if c.dataset == dataset]
    if dataset not in registry.datasets:
        own = list(registry.datasets.get(dataset).presentation.checks())
    return [c for c in every if c.dataset is None] + own


@dataclass(frozen=True)
class Finding:
    """One thing a check found."""

    dataset: str
    check: str
    severity: Severity
    conversation_id: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "dataset": self.dataset,
            "check": self.check,
            "severity": self.severity,
            "conversation_id": self.conversation_id,
            "message": self.message,
        }


@dataclass
class CheckResult:
    """How many conversations (or splits, for split-level checks) passed and failed."""

    dataset: str
    name: str
    description: str
    passed: int = 0
    failed: int = 0
    severity: Severity | None = None
    """The worst severity found, None when nothing was."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "dataset": self.dataset,
            "name": self.name,
            "description": self.description,
            "passed": self.passed,
            "failed": self.failed,
            "severity": self.severity,
        }


@dataclass
class ValidationReport:
    """Every check's counts and every finding, over one or more datasets."""

    checks: list[CheckResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> int:
        """The number of error findings."""
        return sum(f.severity == "error" for f in self.findings)

    @property
    def ok(self) -> bool:
        """True when nothing of severity ``error`` was found."""
        return self.errors == 0

    def result(self, dataset: str, name: str) -> CheckResult:
        """The result of one check."""
        for r in self.checks:
            if r.dataset == dataset and r.name == name:
                return r
        raise KeyError(f"{dataset}/{name}")

    def of(self, name: str, severity: Severity | None = None) -> list[Finding]:
        """The findings of one check (optionally of one severity)."""
        return [f for f in self.findings if f.check == name and severity in (None, f.severity)]

    def to_dict(self) -> dict[str, Any]:
        """``{"checks": [...], "findings": [...]}``."""
        return {
            "checks": [c.to_dict() for c in self.checks],
            "findings": [f.to_dict() for f in self.findings],
        }


class Recorder:
    """Collects the results of the checks of one dataset into a report."""

    def __init__(self, report: ValidationReport, dataset: str) -> None:
        self.report = report
        self.dataset = dataset
        self._results: dict[str, CheckResult] = {}

    def result(self, name: str, description: str) -> CheckResult:
        """The (new or running) result of a check."""
        if name not in self._results:
            self._results[name] = CheckResult(self.dataset, name, description)
            self.report.checks.append(self._results[name])
        return self._results[name]

    def record(
        self, name: str, description: str, conversation_id: str | None, problems: list[Problem] | None
    ) -> None:
        """Count one unit (conversation or split) and keep its problems."""
        result = self.result(name, description)
        if problems is None:
            return
        if not problems:
            result.passed += 1
            return
        result.failed += 1
        for severity, message in problems:
            if result.severity is None or SEVERITIES.index(severity) < SEVERITIES.index(result.severity):
                result.severity = severity
            self.report.findings.append(Finding(self.dataset, name, severity, conversation_id, message))

    def run(self, checks: list[Check], conversations: Iterable[Conversation]) -> None:
        """Run every check over every conversation."""
        for c in checks:
            self.result(c.name, c.description)
        for conv in conversations:
            for c in checks:
                self.record(c.name, c.description, conv.conversation_id, c.run(conv))
