"""Where an export's files go, and what it may replace there.

An export writes into a temporary folder beside ``output``; once complete, each path it wrote
is moved to its place in ``output``. The folder keeps a record, ``.convbank-exports.json``, of
which export wrote each path: dataset, format, parts (config/split), ``where`` and ``as``.
An export replaces a path only when the record says the same export wrote it (re-exporting
the same selection in the same format replaces it); any other export's path, or a file
convbank did not write, makes it refuse with one line, unless ``overwrite``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from convbank._atomic import atomic_write_text
from convbank.errors import ExportError

__all__ = ["RECORD", "check_targets", "describe", "placed"]

RECORD = ".convbank-exports.json"
"""The record of what each export wrote into a folder (relative path -> export)."""

Export = dict[str, Any]
"""One export: ``{"dataset", "format", "parts", "where", "as"}``."""


def describe(export: Export) -> str:
    """``the hf export of casino (default/train, default/test)``, for messages."""
    parts = ", ".join(export.get("parts") or [])
    options = (("where", "--where"), ("as", "--as"))
    extra = "".join(f", {label} {export[key]!r}" for key, label in options if export.get(key))
    return f"the {export.get('format')} export of {export.get('dataset')} ({parts}{extra})"


def _read(output: Path) -> dict[str, Export]:
    try:
        data = json.loads((output / RECORD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ExportError(
            f"{output / RECORD} is unreadable ({exc}); remove it, or export into another folder"
        ) from None
    exports = data.get("exports") if isinstance(data, dict) else None
    if not isinstance(exports, dict):
        raise ExportError(
            f"{output / RECORD} is not convbank's record of exports; remove it, or export elsewhere"
        )
    return {k: v for k, v in exports.items() if isinstance(v, dict)}


def _overlaps(a: str, b: str) -> bool:
    """One path is the other or inside it."""
    pa, pb = PurePosixPath(a), PurePosixPath(b)
    return pa == pb or pa in pb.parents or pb in pa.parents


def check_targets(output: Path, paths: Sequence[str], export: Export, *, overwrite: bool) -> None:
    """Refuse (one line) when a path this export would write in ``output`` holds another
    export's files or files convbank did not write, unless ``overwrite``."""
    if overwrite or not output.is_dir():
        return
    record = _read(output)
    for rel in paths:
        target = output / rel
        for owned, other in record.items():
            if other != export and _overlaps(owned, rel):
                raise ExportError(
                    f"{output / owned} holds {describe(other)}; {describe(export)} would replace it: "
                    "pass --overwrite (overwrite=True), or export into another folder"
                )
        in_the_way = [p for p in target.parents if output in p.parents and p.is_file()]
        if (target.exists() or target.is_symlink()) and rel not in record:
            in_the_way.append(target)
        if in_the_way:
            raise ExportError(
                f"{in_the_way[0]} exists and convbank did not write it there; {describe(export)} would "
                "replace it: pass --overwrite (overwrite=True), or export into another folder"
            )


@contextmanager
def placed(output: Path, export: Export, *, overwrite: bool) -> Iterator[tuple[Path, list[Path]]]:
    """A temporary folder beside ``output`` and a list to put the paths written in it; on
    success each written path is checked (:func:`check_targets`) and moved to its place in
    ``output``, and the record updated; on failure ``output`` is left as it was."""
    if output.exists() and not output.is_dir():
        raise ExportError(f"{output} is a file; the export writes a folder there")
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp"))
    written: list[Path] = []
    try:
        yield tmp, written
        rels = sorted({p.relative_to(tmp).as_posix() for p in written})
        check_targets(output, rels, export, overwrite=overwrite)
        output.mkdir(exist_ok=True)
        record = {k: v for k, v in _read(output).items() if not any(_overlaps(k, r) for r in rels)}
        trash = tmp / ".replaced"
        trash.mkdir()
        for n, rel in enumerate(rels):
            target = output / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                os.replace(target, trash / str(n))  # then the new one takes its name
            os.replace(tmp / rel, target)
            record[rel] = export
        atomic_write_text(output / RECORD, json.dumps({"exports": record}, indent=1, sort_keys=True) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
