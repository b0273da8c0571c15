"""Results that last: a run saved with what makes it comparable (task, model, seed, convbank's
version, the bank's generation and the sha256 of its sources, the metrics), and the saved
runs side by side as a leaderboard.

Saved runs are JSON files under ``$CONVBANK_HOME/bench/results/``, one a run, written
atomically; ``convbank bench --results`` reads them all.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convbank import settings
from convbank.errors import BenchError

if TYPE_CHECKING:
    from convbank.bench._core import Result
    from convbank.query import Corpus

__all__ = ["leaderboard", "results_folder", "save"]


def results_folder() -> Path:
    """Where saved runs are: ``$CONVBANK_HOME/bench/results``."""
    return settings.home() / "bench" / "results"


def sources_of(corpus: Corpus) -> dict[str, str | None]:
    """The sha256 of each source file of the corpus's configs, as the catalog publishes it
    or as convbank recorded it on first use (None where neither is known)."""
    ds = corpus.dataset
    out: dict[str, str | None] = {}
    for config in dict.fromkeys(p.config for p in corpus.parts()):
        for spec in ds.required_files(config):
            out[spec.name] = spec.sha256
    return out


def save(result: Result, corpus: Corpus) -> Path:
    """Save one run (see the module doc); returns its file.

    >>> from convbank.bench import run
    >>> path = save(run("casino-strategy", model="random"), convbank.load("casino"))
    >>> path.name
    '...-casino-strategy-random-seed0.json'
    """
    from convbank._atomic import atomic_write
    from convbank._version import __version__

    if result.partial:
        raise BenchError(
            f"{result.task}: a partial run ({len(result.folds_done or [])} of {result.folds} folds, "
            "stopped by Ctrl-C) is not saved; run it to the end to save it"
        )
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    record = {
        "task": result.task,
        "model": result.model,
        "seed": result.seed,
        "convbank": __version__,
        "saved": stamp,
        "dataset": result.dataset,
        "config": result.config,
        "data": result.data,
        "generation": corpus.snapshot.generation,
        "sources": sources_of(corpus),
        "metrics": result.metrics,
        "seconds": round(result.seconds, 3),
        "protocol": result.protocol,
    }
    folder = results_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{stamp}-{result.task}-{_slug(result.model)}-seed{result.seed}"
        path = folder / f"{name}.json"
        n = 1
        while path.exists():
            n += 1
            path = folder / f"{name}-{n}.json"
        atomic_write(path, json.dumps(record, indent=2).encode("utf-8") + b"\n")
    except OSError as exc:
        raise BenchError(f"{folder}: the run cannot be saved ({exc.strerror or exc})") from exc
    return path


def leaderboard(task: str | None = None) -> list[dict[str, Any]]:
    """Every saved run (of one task, or all), best first within a task by the task's headline
    metric (lowest first for an error such as MAE); a file that cannot be read is skipped
    with its name in ``unreadable``.

    >>> from convbank.bench import run
    >>> _ = save(run("casino-strategy", model="random"), convbank.load("casino"))
    >>> [(r["model"], r["score"]) for r in leaderboard("casino-strategy")]
    [('random', 0.1068)]
    """
    from convbank import registry

    if task is not None:
        registry.tasks.get(task)  # an unknown task is an error naming the closest, not no runs
    rows = []
    folder = results_folder()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = msgspec.json.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError):
            continue
        if not isinstance(record, dict) or (task and record.get("task") != task):
            continue
        try:
            headline = registry.tasks.get(str(record.get("task"))).metric
        except KeyError:
            headline = ""
        metrics = record.get("metrics") or {}
        if headline in metrics or not any(isinstance(v, dict) and headline in v for v in metrics.values()):
            rows.append({**record, "metric": headline, "score": metrics.get(headline), "file": path.name})
            continue
        for config, per_config in metrics.items():  # a run of several configs: a row for each
            if isinstance(per_config, dict) and headline in per_config:
                row = {**record, "config": config, "metric": headline, "score": per_config[headline]}
                rows.append({**row, "file": path.name})

    def order(row: dict[str, Any]) -> tuple[str, float]:
        value = row["score"]
        if not isinstance(value, (int, float)):
            return (row["task"], float("inf"))
        return (row["task"], value if row["metric"] in _LOWER_IS_BETTER else -value)

    return sorted(rows, key=order)


_LOWER_IS_BETTER = frozenset({"mae"})


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:60]
