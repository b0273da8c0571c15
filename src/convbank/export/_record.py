"""The record of what each export wrote into a folder, ``.convbank-exports.json``: which export
(dataset, format, parts, ``where``, ``as``) wrote each path, and the journal (``moving``) of
an export moving its files in (:mod:`convbank.export._place`). Each step of an export reads
it once and writes it once at most, so that its cost follows the record's size, which is
bounded (:data:`RECORD_LIMIT`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeGuard

from convbank._atomic import atomic_write_text, read_regular
from convbank._wording import counted
from convbank.errors import ExportError

RECORD = ".convbank-exports.json"
"""The record of what each export wrote into a folder (relative path -> export)."""

STAGING = ".convbank-staging."
"""How a staging folder's name starts: then the exporting process's id."""

JOURNAL = ".convbank-exports.moving.json"
"""The journal of an export moving its files in (``moving``: its staging folder, paths,
export and the paths it removes), written before the moves and removed once the record is
written, so that an export writes the record (up to :data:`RECORD_LIMIT`) once."""

RECORD_LIMIT = 8 << 20
"""The largest record read or written (8 MiB: an entry takes some 110 bytes, a folder's more
for the files it lists; every export into the folder parses, checks and writes it whole
once, some 2 to 3 s at this size on a loaded 2-core machine, 0.5 to 1 s with no record)."""

Export = dict[str, Any]
"""One export: ``{"dataset", "format", "parts", "where", "as"}`` (and ``"selection"`` for a corpus
that is a selection: :func:`convbank.export._core._chosen`)."""


def describe(export: Export) -> str:
    """``the hf export of casino (default/train, default/test)``, for messages."""
    parts = ", ".join(export.get("parts") or [])
    options = (("where", "--where"), ("as", "--as"), ("selection", "selection"))
    extra = "".join(f", {label} {export[key]!r}" for key, label in options if export.get(key))
    return f"the {export.get('format')} export of {export.get('dataset')} ({parts}{extra})"


def _load(output: Path) -> dict[str, Any]:
    """The record of ``output`` as JSON holds it, with the journal of an export killed while
    moving in (:data:`JOURNAL`, or the record's own ``moving``, as convbank wrote it before
    the journal had a file of its own) as its ``moving``; a record that is not there is empty."""
    data = _file(output / RECORD, _parsed)
    if data is None:
        data = {"exports": {}}
    if not isinstance(data, dict) or not isinstance(data.get("exports"), dict):
        raise ExportError(
            f"{output / RECORD} is not convbank's record of exports; remove it, or export elsewhere",
            path=output / RECORD,
        )
    journal = _file(output / JOURNAL, lambda raw: json.loads(raw.decode("utf-8")))
    if journal is None:
        return data
    if "moving" in data:  # two unfinished exports at once: neither can be told the later
        raise ExportError(
            f"{output / JOURNAL} and the record's own 'moving' both name an unfinished export; "
            "remove one, or export into another folder",
            path=output / JOURNAL,
        )
    return {**data, "moving": journal, JOURNAL: True}


def _file(path: Path, parse: Callable[[bytes], Any]) -> Any:
    """The JSON value of the record or the journal, None where it is not there: a link, a
    FIFO, a device or a file past :data:`RECORD_LIMIT` there is refused (one line), never
    followed, waited on or read without end."""
    if path.is_symlink():  # another folder's record says nothing of this one's files
        raise ExportError(
            f"{path} is a symbolic link; an export reads only its own folder's record: "
            "remove the link, or export into another folder",
            path=path,
        )
    try:
        return parse(read_regular(path, RECORD_LIMIT))
    except FileNotFoundError:
        return None
    except RecursionError:
        why: object = "nested deeper than Python's JSON reader goes"
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    raise ExportError(f"{path} is unreadable ({why}); remove it, or export into another folder", path=path)


class _Last:
    """The last record read in this process: its bytes, their JSON value and its entries that
    are exports' (:func:`_an_export`, once checked). An export reads the record at each step
    (the check before the work, the staging folder's lock, the move's lock); the same bytes
    again are parsed and checked once, not once a step, so that a record near
    :data:`RECORD_LIMIT` costs one parse and one check an export. The bytes are compared
    whole: another process's record, whatever its size or time, is never taken for this one.
    The three are one tuple, replaced whole: threads exporting into two folders at once
    never read one folder's bytes with the other's value."""

    state: tuple[bytes, Any, dict[str, dict[str, Export]]] | None = None


def _parsed(raw: bytes) -> Any:
    """The JSON value of a record's bytes, parsed once for the same bytes (:class:`_Last`);
    :class:`ValueError` for bytes that are not one JSON value (:class:`RecursionError` for
    a document nested too deep)."""
    last = _Last.state
    if last is not None and last[0] == raw:
        return last[1]
    data = json.loads(raw.decode("utf-8"))
    _Last.state = (raw, data, {})
    return data


def _exports(data: dict[str, Any]) -> dict[str, Export]:
    """The entries of a record (as :func:`_load` gave it) that are exports' (others are not
    convbank's), checked once for the record last read (:class:`_Last`); a new dict."""
    last = _Last.state
    checked = (
        last[2]
        if last is not None and isinstance(last[1], dict) and data["exports"] is last[1].get("exports")
        else None
    )
    if checked is not None and "exports" in checked:
        return dict(checked["exports"])
    exports = {k: v for k, v in data["exports"].items() if _an_export(v)}
    if checked is not None:
        checked["exports"] = exports
    return dict(exports)


def _moving(output: Path, data: dict[str, Any]) -> tuple[Path, list[str], Export, list[str]] | None:
    """The staging folder, paths and export of an export killed while moving in, and the
    paths of the exports it replaces whole (``removing``: :func:`replaced_whole`), or None."""
    moving = data.get("moving")
    if moving is None:
        return None
    paths = moving.get("paths") if isinstance(moving, dict) else None
    removing = moving.get("removing", []) if isinstance(moving, dict) else None
    export = moving.get("export") if isinstance(moving, dict) else None
    name = moving.get("staging") if isinstance(moving, dict) else None
    if not (
        _paths_inside(paths) and _paths_inside(removing) and _an_export(export) and _a_staging_name(name)
    ):
        where = output / (JOURNAL if data.get(JOURNAL) else RECORD)
        raise ExportError(
            f"{where} is not convbank's record of exports; remove it, or export elsewhere", path=where
        )
    staging = output / str(name)
    if staging.is_symlink():  # its files would be moved in from wherever it leads
        raise ExportError(
            f"{staging} is a symbolic link (to {os.readlink(staging)}); an export moves in only what it "
            f"staged inside {output}: remove the link, or export into another folder",
            path=staging,
        )
    return staging, paths, export, list(removing or ())


def _paths_inside(value: object) -> TypeGuard[list[str]]:
    """Whether ``value`` is a list of paths inside a folder, as an export writes them
    (``a/b``): never ``..``, ``/x`` or empty, which a damaged journal would have an export
    move or remove outside it, or fail on for every later export."""
    return isinstance(value, list) and all(isinstance(p, str) and _inside(_parts(p)) for p in value)


def _inside(parts: tuple[str, ...]) -> bool:
    """Whether a path of these parts (:func:`_parts`) lies inside its folder."""
    return bool(parts) and parts[0] not in ("/", "//") and ".." not in parts


def _an_export(value: object) -> TypeGuard[Export]:
    """Whether ``value`` is an export as convbank records it (:data:`Export`): its dataset
    and format text, its parts (and a folder's ``files``, where listed) a list of text,
    ``where``, ``as`` and ``selection`` text or absent (a damaged entry is no export's, never
    a traceback in a message)."""
    if not isinstance(value, dict):
        return False
    get = value.get  # a look-up each, no generator: each entry of a record is checked once
    files = get("files")
    where, as_, selection = get("where"), get("as"), get("selection")
    return (
        isinstance(get("dataset"), str)
        and isinstance(get("format"), str)
        and _texts(get("parts"))
        and (_texts(files) if "files" in value else True)
        and (where is None or isinstance(where, str))
        and (as_ is None or isinstance(as_, str))
        and (selection is None or isinstance(selection, str))
    )


def _texts(value: object) -> bool:
    """Whether ``value`` is a list of text."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _a_staging_name(name: object) -> bool:
    """Whether ``name`` is a staging folder's own name (``.convbank-staging.<pid>.*``, one
    path component): never a path that leads out of the folder (``../x``, ``/x``)."""
    return (
        isinstance(name, str)
        and name.startswith(STAGING)
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and name[len(STAGING) :].partition(".")[0].isdigit()
    )


def _read(output: Path, data: dict[str, Any] | None = None) -> dict[str, Export]:
    """Which export wrote each path, an export still moving in counted as done (as
    :func:`recover` will make it); ``data``: the record as :func:`_load` read it, if read."""
    data = _load(output) if data is None else data
    record = _exports(data)
    moving = _moving(output, data)
    if moving is None:
        return record
    _, paths, export, removing = moving
    replaced = set(_overlapping(record, paths)) | set(removing)
    kept = {k: v for k, v in record.items() if k not in replaced}
    return {**kept, **dict.fromkeys(paths, export)}


def _write(output: Path, record: dict[str, Export], moving: dict[str, Any] | None = None) -> None:
    atomic_write_text(output / RECORD, _text(output, record, moving))


def _text(output: Path, record: dict[str, Export], moving: dict[str, Any] | None = None) -> str:
    """The record's text: refused (:class:`ExportError`) past :data:`RECORD_LIMIT`, which no
    later export could read. No indent: json's C encoder writes it (Python's, which indents,
    took 15 s for 250,000 entries)."""
    data: dict[str, Any] = {"exports": record}
    if moving is not None:
        data["moving"] = moving
    text = json.dumps(data, sort_keys=True) + "\n"
    if len(text) > RECORD_LIMIT:  # ASCII (ensure_ascii): its length is its size
        raise ExportError(
            f"{output / RECORD} would hold {counted(len(record), 'path')} in {counted(len(text), 'byte')}, "
            f"more than the {RECORD_LIMIT:,} a folder's record of exports may; export into another folder",
            path=output / RECORD,
        )
    return text


def _parts(path: str) -> tuple[str, ...]:
    """``path``'s parts as :class:`~pathlib.PurePosixPath` takes them (``a//./b`` is
    ``a/b``, a leading ``/`` or ``//`` a part of its own), by splitting text: many times faster."""
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if not path.startswith("/"):
        return parts
    return ("//" if path.startswith("//") and path[2:3] != "/" else "/", *parts)  # POSIX keeps //


def _overlapping(keys: Iterable[str], rels: Iterable[str]) -> list[str]:
    """The paths of ``keys`` that are a path of ``rels``, inside one or hold one, in their
    order: a look-up per part of each key, so that a record of many entries costs in
    proportion to its size, never to its size times the paths written."""
    wanted = {_parts(r) for r in rels}
    # the folders that hold them: "" (".") holds every relative path, as in pathlib
    holding = {w[:n] for w in wanted for n in range(int(w[:1] in (("/",), ("//",))), len(w))}
    firsts = {w[0] for w in wanted if w}
    found = []
    for key in keys:
        head = key.partition("/")[0]  # its first part, where it is a plain name: no look-up more
        if head not in firsts and head not in ("", ".", ".."):
            continue
        parts = _parts(key)
        if parts in holding or any(parts[:n] in wanted for n in range(1, len(parts) + 1)):
            found.append(key)
    return found


def _same(recorded: Export, export: Export) -> bool:
    """Whether a recorded entry is of ``export`` (the files it lists aside)."""
    return _bare(recorded) == export


def replaced_whole(record: dict[str, Export], rels: Iterable[str], export: Export) -> list[str]:
    """The paths of ``record`` of the exports ``export`` replaces (another export's files at
    a path of ``rels``: ``--overwrite``) that it does not write itself: an export replaced is
    replaced whole, never left in part beside the new one (a wider ``--where`` before a
    narrower one left the older export's other files)."""
    rels = list(rels)
    hit = set(_overlapping(record, rels))
    others = {_key(record[k]) for k in hit if not _same(record[k], export)}  # each export once
    if not others:
        return []
    kinds = {(record[k]["dataset"], record[k]["format"]) for k in hit}
    return [
        k
        for k, v in record.items()
        if k not in hit and (v["dataset"], v["format"]) in kinds and _key(v) in others
    ]


def _key(entry: Export) -> str:
    """An entry's export (:func:`_bare`) as text, to be looked up in a set."""
    return json.dumps(_bare(entry), sort_keys=True)


def _bare(entry: Export) -> Export:
    """An entry without the files it lists: the export alone."""
    return {k: v for k, v in entry.items() if k != "files"}
