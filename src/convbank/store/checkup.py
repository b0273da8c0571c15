"""``convbank doctor``: every file of a generation checked against its manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from convbank._atomic import sha256_file
from convbank._lazy import lazy
from convbank._wording import counted
from convbank.store.integrity import (
    STRUCTURE_KEY,
    count_problems,
    first_line,
    read_footer,
    stat_problem,
    structure_problem,
)
from convbank.store.manifest import FileRef
from convbank.store.records import Index, read_index
from convbank.store.snapshot import Snapshot

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")

__all__ = ["Checkup", "checkup"]


@dataclass
class Checkup:
    """What :meth:`convbank.store.Bank.doctor` found."""

    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)


def checkup(snap: Snapshot, *, deep: bool = True) -> Checkup:
    """Check every file of a pinned generation: present, of its size, a readable Parquet
    footer (a record file: index) whose sha256 and row count are the manifest's, and
    (``deep``) the sha256 of all its bytes; then each split's counts in the manifest against
    its files' footers.

    Example::

        with Bank().snapshot() as snap:
            assert checkup(snap, deep=False).problems == []
    """
    found = Checkup()
    footers: dict[str, int] = {}
    root = snap.bank.root

    def settle(ref: FileRef, problem: str | None) -> bool:
        """Count a file checked (``deep``: its sha256 too) as sound or with its problem."""
        if problem is None and deep and ref.sha256 and sha256_file(ref.path) != ref.sha256:
            problem = "corrupt: its sha256 differs from the manifest's"
        if problem:
            found.problems.append(f"{ref.path}: {problem} (rebuild with `convbank build {ref.dataset}`)")
            return False
        found.bytes += ref.path.stat().st_size
        return True

    for ref in snap.refs():
        found.files += 1
        problem = stat_problem(ref)
        if problem is None:
            try:
                meta, footer = read_footer(ref.path)
            except (OSError, ValueError, pa.ArrowException) as exc:
                problem = f"not a readable Parquet file ({first_line(exc)})"
            else:
                if ref.footer is not None and footer != ref.footer:
                    problem = "corrupt: its Parquet footer differs from the manifest's"
                elif ref.rows is not None and meta.num_rows != ref.rows:
                    problem = f"{counted(meta.num_rows, 'row')} where the manifest says {ref.rows:,}"
                elif structure_problem(ref, (meta.metadata or {}).get(STRUCTURE_KEY)) is not None:
                    problem = "its meta structure differs from the one its footer holds"
                else:
                    footers[str(ref.path.relative_to(root))] = meta.num_rows
        settle(ref, problem)
    for ref in snap.record_refs():
        found.files += 1
        if settle(ref, stat_problem(ref) or _record_problem(ref)):
            footers[str(ref.path.relative_to(root))] = ref.rows or 0
    for dataset, problem in count_problems(snap.manifest, footers=footers):
        found.problems.append(
            f"{snap.bank.manifest_path}: {problem} (rebuild with `convbank build {dataset}`)"
        )
    return found


def _record_problem(ref: FileRef) -> str | None:
    """What is wrong with a record file's index: unreadable, another than the manifest's,
    of another row count, other row groups or ids than the manifest's record entry says
    (:mod:`convbank.store.records`)."""
    try:
        with ref.path.open("rb") as f:
            index, digest = read_index(f)
    except (OSError, ValueError) as exc:
        return f"not a readable record file ({first_line(exc)})"
    if ref.footer is not None and digest != ref.footer:
        return "corrupt: its index differs from the manifest's"
    if ref.rows is not None and index.rows != ref.rows:
        return f"{counted(index.rows, 'row')} where the manifest says {ref.rows:,}"
    return _layout_problem(ref, index)


def _layout_problem(ref: FileRef, index: Index) -> str | None:
    """Where a record file's row groups or ids differ from its entry's in the manifest."""
    if ref.groups is not None and index.groups is not None and list(ref.groups) != index.groups:
        return f"row groups of {_counts(index.groups)} rows where the manifest says {_counts(ref.groups)}"
    if ref.id_range is not None and index.groups is not None:
        try:
            held = index.id_range()
        except ValueError as exc:
            return f"unreadable: its ids ({exc})"
        if list(ref.id_range) != held:
            return f"ids {_span(held)} where the manifest says {_span(ref.id_range)}"
    return None


def _span(ids: list[str] | tuple[str, ...]) -> str:
    """An id range as said in a line (``from '1' to '999'``; ``none``)."""
    return f"from {ids[0]!r} to {ids[-1]!r}" if ids else "none"


def _counts(groups: list[int] | tuple[int, ...]) -> str:
    """Row-group sizes as said in a line, at most 4 of them shown (``[450, 450]``)."""
    shown = ", ".join(f"{n:,}" for n in groups[:4])
    return f"[{shown}{', ...' if len(groups) > 4 else ''}]"
