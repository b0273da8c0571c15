"""Results that last: a run saved with what makes it comparable (task, model, seed, convbank's
version, the bank's generation and the sha256 of its sources, the metrics), and the saved
runs side by side as a leaderboard.

Saved runs are JSON files under ``$CONVBANK_HOME/bench/results/``, one a run, each written
whole to a temporary file and then linked under a name no other run holds (runs saved at
once, even in the same second, each keep their own file); ``convbank bench --results`` reads
them all, each checked against :class:`SavedRun` (a file that is not one is skipped with a
warning naming it). A metric that is not a finite number (an overflow: ``Infinity``) is
saved as null, with a note saying so in ``notes``: a saved file is strict JSON.
"""

from __future__ import annotations

import errno
import os
import re
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import msgspec

from convbank import settings
from convbank._atomic import read_regular, temporary_beside
from convbank._textio import utf8_text
from convbank.errors import BenchError, DiskFullError

if TYPE_CHECKING:
    from convbank.bench._core import Result
    from convbank.query import Corpus

__all__ = ["SAVED_LIMIT", "SavedRun", "leaderboard", "read_saved", "results_folder", "save"]

SAVED_LIMIT = 16 << 20
"""The largest file :func:`read_saved` reads (16 MiB; a saved run takes a few KiB)."""

Value = Union[float, None]  # noqa: UP007 - msgspec reads the alias at run time
Metrics = dict[str, Union[Value, dict[str, Union[Value, dict[str, Value]]]]]  # noqa: UP007
"""A run's metrics: numbers (or null) by name, nested up to two levels (per label or type,
per config)."""


class SavedRun(msgspec.Struct, kw_only=True):
    """One saved run, as its file holds it: what :func:`save` writes and
    :func:`leaderboard` accepts (anything else in the folder is skipped with a warning).

    >>> msgspec.json.decode(b'{"task": "casino-strategy", "model": "random", "seed": 0, '
    ...                     b'"metrics": {"mean_f1": 0.1068}}', type=SavedRun).metrics
    {'mean_f1': 0.1068}
    """

    task: str
    model: str
    seed: int
    metrics: Metrics
    convbank: str = ""
    saved: str = ""
    dataset: str = ""
    config: str = ""
    data: str = ""
    generation: str | None = None
    sources: dict[str, str | None] = msgspec.field(default_factory=dict)
    seconds: float | None = None
    protocol: str = ""
    notes: list[str] = msgspec.field(default_factory=list)


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
    """Save one run (see the module doc); returns its file. A full disk is a
    :class:`~convbank.errors.DiskFullError` (exit 1), an unwritable home a
    :class:`~convbank.errors.SetupError` (exit 5).

    >>> from convbank.bench import run
    >>> path = save(run("casino-strategy", model="random"), convbank.load("casino"))
    >>> path.name
    '...-casino-strategy-random-seed0.json'
    """
    from convbank._version import __version__
    from convbank.bench._core import finite_metrics

    if result.partial:
        raise BenchError(
            f"{result.task}: a partial run ({len(result.folds_done or [])} of {result.folds} folds, "
            "stopped by Ctrl-C) is not saved; run it to the end to save it",
            task=result.task,
            model=result.model,
        )
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    metrics, notes = finite_metrics(result.metrics)
    record = SavedRun(
        task=result.task,
        model=utf8_text(result.model),  # a name made from a file name that is not UTF-8 too
        seed=result.seed,
        convbank=__version__,
        saved=stamp,
        dataset=result.dataset,
        config=result.config,
        data=result.data,
        generation=corpus.snapshot.generation,
        sources=sources_of(corpus),
        metrics=metrics,
        seconds=round(result.seconds, 3),
        protocol=result.protocol,
        notes=[utf8_text(n) for n in dict.fromkeys([*result.notes, *notes])],
    )
    data = msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n"
    folder = results_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return _claim(folder, _stem(stamp, result.task, _slug(result.model), f"seed{result.seed}"), data)
    except OSError as exc:
        from convbank._homefiles import home_error

        named = exc if exc.filename else OSError(exc.errno, exc.strerror, str(folder))
        error = home_error(named, settings.home())
        if error is None and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            error = DiskFullError(
                f"{folder}: no space left on the device to save the run; free some space", path=folder
            )
        if error is None:
            raise BenchError(
                f"{folder}: the run cannot be saved ({exc.strerror or exc})", path=folder
            ) from exc
        raise error from exc


_SAVING = "saved-run"
"""What the temporary files of saves are named after (:func:`~convbank._atomic.temporary_beside`):
one name for every run, so that any later save finds a killed one's file, whatever its run."""

_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS})


def _claim(folder: Path, stem: str, data: bytes) -> Path:
    """Write ``data`` whole to a temporary file, then give it the first of ``stem.json``,
    ``stem-2.json``... that no other file holds: ``os.link`` fails rather than replace, so
    runs saved at once never take each other's name. Where the filesystem has no hard
    links, the name is taken with ``O_EXCL`` and the whole file renamed onto it. Every save's
    temporary file has one name but for its process and a random part
    (``.saved-run.<pid>.<random>.tmp``), so each save removes those of saves killed before."""
    try:
        fd, tmp = temporary_beside(folder / _SAVING)
    except OSError as exc:  # named as the folder: no file is named saved-run
        raise type(exc)(exc.errno, exc.strerror, str(folder)) from exc
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        n = 1
        while True:
            path = folder / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
            try:
                try:
                    os.link(tmp, path)
                except OSError as exc:
                    if isinstance(exc, FileExistsError) or exc.errno not in _NO_LINKS:
                        raise
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                    os.replace(tmp, path)
                return path
            except FileExistsError:
                n += 1
    finally:
        Path(tmp).unlink(missing_ok=True)


def read_saved(path: Path) -> SavedRun:
    """One saved run from its file, checked against :class:`SavedRun`; a file that is not
    one is a :class:`BenchError` saying what is wrong (truncated, not JSON, a field missing
    or of the wrong type, a number out of range, nested more than 64 deep; not a regular
    file, or larger than :data:`SAVED_LIMIT`).

    >>> _ = Path("empty.json").write_text("{}")
    >>> read_saved(Path("empty.json"))
    Traceback (most recent call last):
    convbank.errors.BenchError: empty.json: not a saved run (Object missing required field `task`)
    """
    try:  # a FIFO, a device or a huge file here is refused, never waited on or read whole
        data = read_regular(path, SAVED_LIMIT)
    except OSError as exc:
        raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})", path=path) from exc
    from convbank.bench.files import MAX_DEPTH, _too_deep

    if _too_deep(data):  # found by scanning: the decoder would recurse into it (RecursionError)
        raise BenchError(f"{path}: not a saved run (nested more than {MAX_DEPTH} deep)", path=path)
    try:
        return msgspec.json.decode(data, type=SavedRun)
    except msgspec.DecodeError as exc:
        found = _MALFORMED.fullmatch(str(exc))
        at = int(found.group(1)) if found else -1
        token = next((t for t in (b"NaN", b"Infinity", b"-Infinity") if data.startswith(t, at)), None)
        why = f"{token.decode()} at byte {at} is not a JSON number" if found and token else str(exc)
        raise BenchError(f"{path}: not a saved run ({why})", path=path) from exc


_MALFORMED = re.compile(r"JSON is malformed: invalid character \(byte (\d+)\)")


def leaderboard(task: str | None = None) -> list[dict[str, Any]]:
    """Every saved run (of one task, or all), best first within a task by the task's headline
    metric (lowest first for an error such as MAE; a run whose figure is null last); a file
    that is not a saved run (:func:`read_saved`) is skipped with a warning naming it and what
    is wrong (``convbank bench --results`` prints it as one line on stderr).

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
    for path in _saved_files(folder):
        try:
            saved = read_saved(path)
        except BenchError as exc:
            warnings.warn(f"skipped {exc}", UserWarning, stacklevel=2)
            continue
        if task and saved.task != task:
            continue
        record = msgspec.structs.asdict(saved)
        try:
            headline = registry.tasks.get(saved.task).metric
        except KeyError:
            headline = ""
        scores = _headline_scores(saved.metrics, headline)
        if any(v is not None and not isinstance(v, (int, float)) for v in scores.values()):
            why = f"skipped {path}: not a saved run (its {headline} is not a number)"
            warnings.warn(why, UserWarning, stacklevel=2)
            continue
        for config, score in scores.items():
            row = {**record, "config": config} if config is not None else record
            rows.append({**row, "metric": headline, "score": score, "file": path.name})

    def order(row: dict[str, Any]) -> tuple[str, float]:
        value = row["score"]
        if not isinstance(value, (int, float)):
            return (row["task"], float("inf"))
        return (row["task"], value if row["metric"] in _LOWER_IS_BETTER else -value)

    return sorted(rows, key=order)


_LOWER_IS_BETTER = frozenset({"mae"})


def _headline_scores(metrics: Metrics, headline: str) -> dict[str | None, Any]:
    """A run's figures of the headline metric: ``{None: figure}`` (null if it has none), or
    one per config for a run of several (``{"volunteers": 0.3, "intermediate": 0.2}``)."""
    if headline in metrics or not any(isinstance(v, dict) and headline in v for v in metrics.values()):
        return {None: metrics.get(headline)}
    return {c: v[headline] for c, v in metrics.items() if isinstance(v, dict) and headline in v}


def _saved_files(folder: Path) -> list[Path]:
    """The ``*.json`` files of the results folder (none where it does not exist yet); a file
    or a dangling link in the place of the folder or of a folder above it is the one line
    ``--save`` says,
    :class:`~convbank.errors.SetupError` (exit 5), not "no saved runs"."""
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.name.endswith(".json") and not e.name.startswith(".")]
    except OSError as exc:
        from convbank._homefiles import home_error

        if isinstance(exc, FileNotFoundError) and not os.path.lexists(folder):
            return []  # not made yet (a dangling link in its place is said as --save says it)

        named = exc if exc.filename else OSError(exc.errno, exc.strerror, str(folder))
        error = home_error(named, settings.home())
        if error is None:
            raise BenchError(
                f"{folder}: the saved runs cannot be read ({exc.strerror or exc})", path=folder
            ) from exc
        raise error from exc
    return [folder / name for name in sorted(names)]


_STEM_BYTES = 200
"""The most bytes of a saved run's file name before its ``-N.json``: a file name holds 255."""


def _stem(*parts: str) -> str:
    """``parts`` joined by ``-`` and cut to :data:`_STEM_BYTES` of UTF-8 at a character's
    end, so that every run's file name fits whatever its name and seed (before: a name of 60
    letters of four bytes, ``U+1D538``, or a seed of 250 digits, made a name the system refused,
    and the run was not saved, exit 5). The file itself says the run's name and seed whole.

    >>> len(_stem("20260101T000000", "casino-strategy", "\U0001d538" * 60, "seed0").encode())
    200
    """
    return "-".join(parts).encode("utf-8")[:_STEM_BYTES].decode("utf-8", "ignore")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:60]
