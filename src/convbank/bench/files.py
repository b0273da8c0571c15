"""A task's data out (examples and gold, per fold, JSONL and Parquet) and predictions in.

``convbank bench TASK --export DIR`` writes::

    DIR/<task>/task.json                      the protocol, the prediction's form, the folds
    DIR/<task>/<fold>/train.jsonl             what a model sees (example_id, group, inputs)
    DIR/<task>/<fold>/train.gold.jsonl        {example_id, gold}
    DIR/<task>/<fold>/test.jsonl, test.gold.jsonl
    ... and the same four as .parquet

and ``--predictions FILE`` reads ``{example_id, prediction}`` rows from JSONL or Parquet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from convbank.errors import BenchError
from convbank.tasks import Task, TaskData

__all__ = ["export_task", "read_predictions", "write_predictions"]


def export_task(
    task: Task, data: TaskData, directory: Path, *, seed: int = 0, overwrite: bool = False
) -> list[Path]:
    """Write every fold's train and test examples and gold answers under
    ``directory/<task>/`` (JSONL and Parquet) and ``task.json``; returns the files. Written
    in a temporary folder and moved into place whole; like every export it replaces only
    what the same export wrote there before, unless ``overwrite``.

    >>> from pathlib import Path
    >>> from convbank.bench import task_named
    >>> task = task_named("casino-strategy")
    >>> files = export_task(task, task.data(convbank.load("casino")), Path("out"))
    >>> len(files), str(files[0])
    (41, 'out/casino-strategy/task.json')
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from convbank.export._place import placed

    target = directory / task.name
    written: list[Path] = []
    record = {"dataset": task.dataset, "format": f"bench task {task.name}", "parts": [f"seed {seed}"]}
    with placed(directory, record, overwrite=overwrite) as (top, moved):
        tmp = top / task.name
        tmp.mkdir()
        describe = {
            **task.describe(),
            "seed": seed,
            "folds": [{"name": f.name, "train": len(f.train), "test": len(f.test)} for f in data.folds],
            "details": data.details,
            "files": "per fold: train.jsonl, train.gold.jsonl, test.jsonl, test.gold.jsonl (and .parquet)",
            "predictions": "one {example_id, prediction} row per test example of every fold",
        }
        (tmp / "task.json").write_text(json.dumps(describe, indent=2, default=str) + "\n", encoding="utf-8")
        written.append(target / "task.json")
        for fold in data.folds:
            (tmp / fold.name).mkdir()
            for part, rows in (("train", fold.train), ("test", fold.test)):
                inputs = [data.examples[i].to_dict() for i in rows]
                gold = [{"example_id": data.examples[i].id, "gold": data.gold[i]} for i in rows]
                for stem, records in ((part, inputs), (f"{part}.gold", gold)):
                    plain = msgspec.to_builtins(records)
                    jsonl = tmp / fold.name / f"{stem}.jsonl"
                    jsonl.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in plain))
                    table = (
                        pa.Table.from_pylist(plain)
                        if plain
                        else pa.table({"example_id": pa.array([], pa.string())})
                    )
                    pq.write_table(table, tmp / fold.name / f"{stem}.parquet")
                    written += [target / fold.name / f"{stem}.{ext}" for ext in ("jsonl", "parquet")]
        moved.append(tmp)
    return written


def read_predictions(path: Path) -> dict[str, Any]:
    """``{example_id: prediction}`` from a JSONL or Parquet file of ``{example_id,
    prediction}`` rows; a duplicate id, a row without either field or a line that is not
    JSON is a :class:`BenchError` naming the first few (and their count)."""
    rows: list[tuple[int, Any]] = []
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise BenchError(f"{path}: not a readable Parquet file ({exc})") from exc
        rows = list(enumerate(table.to_pylist(), 1))
    else:
        try:
            lines = path.read_bytes().splitlines()
        except OSError as exc:
            raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
        bad = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rows.append((number, msgspec.json.decode(line)))
            except msgspec.DecodeError:
                bad.append(number)
        if bad:
            raise BenchError(
                f"{path}: {len(bad):,} line(s) are not JSON (line {', '.join(map(str, bad[:3]))}"
                f'{", ..." if len(bad) > 3 else ""}); each line is {{"example_id": ..., "prediction": ...}}'
            )
    out: dict[str, Any] = {}
    malformed, duplicates = [], []
    for number, row in rows:
        if not isinstance(row, Mapping) or "example_id" not in row or "prediction" not in row:
            malformed.append(number)
            continue
        key = str(row["example_id"])
        if key in out:
            duplicates.append(key)
        out[key] = row["prediction"]
    problems = []
    if malformed:
        where = ", ".join(map(str, malformed[:3])) + (", ..." if len(malformed) > 3 else "")
        problems.append(f"{len(malformed):,} row(s) without example_id and prediction (row {where})")
    if duplicates:
        shown = ", ".join(repr(d) for d in duplicates[:3]) + (", ..." if len(duplicates) > 3 else "")
        problems.append(f"{len(duplicates):,} duplicate example id(s) ({shown})")
    if problems:
        raise BenchError(f"{path}: {'; '.join(problems)}")
    return out


def write_predictions(path: Path, predictions: Mapping[str, Any]) -> Path:
    """Write ``{example_id, prediction}`` rows (JSONL, or Parquet for a ``.parquet`` name),
    atomically; what :func:`read_predictions` and ``--predictions`` read back."""
    from convbank._atomic import atomic_write

    rows = [{"example_id": k, "prediction": v} for k, v in predictions.items()]
    if path.suffix == ".parquet":
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), buffer)
        atomic_write(path, buffer.getvalue())
    else:
        atomic_write(path, b"".join(msgspec.json.encode(r) + b"\n" for r in rows))
    return path
