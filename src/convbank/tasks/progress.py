"""Progress of long benchmark work (folds, fine-tuning steps, embeddings) for whoever
watches: the command line draws a bar with an estimate of the time left; the library
reports to nobody unless :func:`watched` names a watcher."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar

__all__ = ["Watcher", "progress", "watched"]

T = TypeVar("T")


class Watcher(Protocol):
    """Receives the stages of a run: each one begins with its number of steps, advances,
    and ends."""

    def begin(self, stage: int, description: str, total: int) -> None:
        """A stage of ``total`` steps starts."""

    def advance(self, stage: int) -> None:
        """One step of a stage is done."""

    def end(self, stage: int) -> None:
        """A stage is over (finished or abandoned)."""


_watcher: ContextVar[Watcher | None] = ContextVar("convbank_bench_watcher", default=None)
_stages: ContextVar[int] = ContextVar("convbank_bench_stages", default=0)


@contextmanager
def watched(watcher: Watcher) -> Iterator[None]:
    """Report the stages of the benchmark work run inside to ``watcher``, numbered from 1."""
    token = _watcher.set(watcher)
    stages = _stages.set(0)
    try:
        yield
    finally:
        _stages.reset(stages)
        _watcher.reset(token)


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Yield ``items``, reporting one step per item to the watcher (if any)."""
    watcher = _watcher.get()
    if watcher is None:
        yield from items
        return
    listed = items if total is not None else list(items)
    stage = _stages.get() + 1
    _stages.set(stage)
    watcher.begin(stage, description, total if total is not None else len(listed))  # type: ignore[arg-type]
    try:
        for item in listed:
            yield item
            watcher.advance(stage)
    finally:
        watcher.end(stage)
