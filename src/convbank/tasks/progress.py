"""Progress of long benchmark work (folds, fine-tuning steps, embeddings) for whoever
watches: the command line draws a bar with an estimate of the time left on a terminal, and
writes lines (:class:`LineWatcher`) when its output goes to a file; the library reports to
nobody unless :func:`watched` names a watcher."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TextIO, TypeVar

__all__ = ["LineWatcher", "Watcher", "progress", "watched"]

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


class LineWatcher:
    """A watcher for logs (nohup, SLURM): one line when a stage starts, one per step of a
    stage of at most ``every`` steps (the folds) and one per tenth of a longer one, one when it
    ends; each with the seconds since the watcher was made::

        with watched(LineWatcher(sys.stderr)):
            run("casino-strategy")
        # [   0.0 s] finetune: folds: 5 steps
        # [ 412.9 s] finetune: folds: 1/5 (412.9 s)
    """

    def __init__(self, stream: TextIO, every: int = 20) -> None:
        self._stream = stream
        self._every = every
        self._start = time.perf_counter()
        self._stages: dict[int, tuple[str, int, int, float]] = {}

    def _line(self, text: str) -> None:
        self._stream.write(f"[{time.perf_counter() - self._start:8.1f} s] {text}\n")
        self._stream.flush()

    def begin(self, stage: int, description: str, total: int) -> None:
        """A stage of ``total`` steps starts: one line."""
        self._stages[stage] = (description, total, 0, time.perf_counter())
        self._line(f"{description}: {total:,} step{'' if total == 1 else 's'}")

    def advance(self, stage: int) -> None:
        """A step is done: a line for each step of a short stage, each tenth of a long one."""
        description, total, done, began = self._stages[stage]
        done += 1
        self._stages[stage] = (description, total, done, began)
        if total <= self._every or done * 10 // total > (done - 1) * 10 // total:
            self._line(f"{description}: {done:,}/{total:,} ({time.perf_counter() - began:.1f} s)")

    def end(self, stage: int) -> None:
        """The stage is over: one line with its seconds (and its steps, if it stopped short)."""
        description, total, done, began = self._stages.pop(stage)
        short = "" if done == total else f" after {done:,} of {total:,} steps"
        self._line(f"{description}: done{short} in {time.perf_counter() - began:.1f} s")


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
