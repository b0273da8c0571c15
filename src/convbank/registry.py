"""One registry: datasets, engines, checks and benchmark tasks, each a :class:`Registry` of
named things, filled the same way and on first use.

- :data:`datasets`: the built-in datasets (:data:`convbank.datasets.BUILTIN`, imported
  directly: they load even where the package's metadata is stale), then every entry point of
  the group ``convbank.datasets`` (another package's datasets: install it, and ``convbank
  list`` shows them).
- :data:`engines`: every entry point of the group ``convbank.engines``, convbank's own
  (``local``, ``spark``, declared in its ``pyproject.toml``) first: the registry names no
  engine module, so nothing here reaches up into :mod:`convbank.engines`.
- :data:`checks`: the generic checks, then each dataset's own (``dataset.presentation.checks()``).
- :data:`tasks`: each dataset's benchmark tasks (``dataset.presentation.tasks()``).

An entry point names a class or an instance (``mydataset = my_package:MyDataset``); a class
is instantiated (datasets) or kept as the factory it is (engines). A name registered twice,
an entry point that cannot be imported or that is not of its group's kind, or a dataset
written against an older Dataset contract (:func:`convbank.datasets.contract_problem`), is a
:class:`~convbank.errors.PluginError` naming the entry point and its package.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from convbank._names import name_problem
from convbank._wording import article, shown
from convbank.datasets import BUILTIN, Check, Dataset, contract_problem
from convbank.datasets._imported import NAME as NAME_PATTERN
from convbank.errors import PluginError, UnknownDatasetError, did_you_mean
from convbank.store._imported import imported, imported_names

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from convbank.tasks import Task

__all__ = [
    "DATASET_GROUP",
    "ENGINE_GROUP",
    "Entry",
    "Registry",
    "checks",
    "datasets",
    "engines",
    "load_entry_points",
    "tasks",
]

T = TypeVar("T")

DATASET_GROUP = "convbank.datasets"
"""The entry-point group through which packages add datasets."""
ENGINE_GROUP = "convbank.engines"
"""The entry-point group through which packages add engines."""

_OWN = "convbank"
"""The origin of what convbank itself registers (its datasets, its engines' entry points)."""


class Entry(Generic[T]):
    """A registered thing and where it came from (``convbank``, or an entry point)."""

    __slots__ = ("origin", "value")

    def __init__(self, value: T, origin: str) -> None:
        self.value = value
        self.origin = origin


class Registry(Generic[T]):
    """Named things of one kind, in registration order; ``load`` yields ``(thing, origin)``
    pairs the first time the registry is used. A name registered twice is a
    :class:`PluginError` naming both origins; an unknown name an
    :class:`UnknownDatasetError` listing the known ones."""

    def __init__(
        self,
        kind: str,
        *,
        load: Callable[[], Iterable[tuple[T, str]]] | None = None,
        derived_from: Registry[Any] | None = None,
        quick: Callable[[str], T | None] | None = None,
        accept: Callable[[T, str], T] | None = None,
        fallback: Callable[[str], tuple[T, str] | None] | None = None,
        fallback_names: Callable[[], list[str]] | None = None,
    ) -> None:
        self.kind = kind
        self._fallback = fallback
        self._fallback_names = fallback_names
        self._load = load
        self._accept = accept
        self._quick = quick
        self._quick_found: dict[str, T] = {}
        self._derived_from = derived_from
        self._entries: dict[str, Entry[T]] | None = None
        self._added: list[Entry[T]] = []
        self._basis = -1
        self.version = 0
        """Counts registrations: a registry derived from this one reloads when it changes."""

    def _loaded(self) -> dict[str, Entry[T]]:
        basis = self._derived_from.version if self._derived_from is not None else 0
        if self._derived_from is not None:
            self._derived_from._loaded()
            basis = self._derived_from.version
        if self._entries is None or basis != self._basis:
            entries: dict[str, Entry[T]] = {}
            for thing, origin in self._load() if self._load else ():
                name = str(thing.name)  # type: ignore[attr-defined]
                quick = self._quick_found.get(name)
                self._add(
                    entries,
                    Entry(quick if quick is not None and type(quick) is type(thing) else thing, origin),
                )
            for entry in self._added:
                self._add(entries, entry)
            self._entries, self._basis = entries, basis
        return self._entries

    def _add(self, entries: dict[str, Entry[T]], entry: Entry[T]) -> None:
        name = str(entry.value.name)  # type: ignore[attr-defined]
        if name in entries:
            raise PluginError(
                f"{article(self.kind)} named {name!r} is already registered (from {entries[name].origin}); "
                f"{entry.origin} registers another — uninstall one of them or rename it",
                origin=entry.origin,
                name=name,
            )
        entries[name] = entry
        self.version += 1

    def register(self, thing: T, *, origin: str = "convbank.registry") -> T:
        """Add a thing under its ``name``; a name already registered, or a thing its kind does
        not accept (a dataset of an older contract), is a :class:`PluginError` (also a
        ``ValueError``)."""
        if self._accept is not None:
            thing = self._accept(thing, origin)
        entry = Entry(thing, origin)
        self._add(self._loaded(), entry)
        self._added.append(entry)
        return thing

    def get(self, name: str) -> T:
        """The thing of that name, or :class:`UnknownDatasetError` listing the known ones.
        A built-in is found without loading the rest (plugins included) until something
        needs them all (listing, an unknown name), which is when clashes are reported."""
        if not isinstance(name, str):
            raise UnknownDatasetError(
                f"{article(self.kind)} is named by one string, not {article(type(name).__name__)} ({name!r})",
                kind=self.kind,
                name=name,
            )
        if self._entries is None and not self._added and self._quick is not None:
            found = self._quick_found.get(name)
            if found is None and (found := self._quick(name)) is not None:
                self._quick_found[name] = found
            if found is not None:
                return found
        entries = self._loaded()
        try:
            return entries[name].value
        except KeyError:
            other = self._fallback(name) if self._fallback is not None else None
            if other is not None:
                return other[0]
            others = self._fallback_names() if self._fallback_names is not None else []  # imported ones
            names = [*entries, *(n for n in others if n not in entries)]
            raise UnknownDatasetError(
                f"unknown {self.kind} {name!r}; {did_you_mean(name, names)}known {self.kind}s: "
                f"{', '.join(names) or 'none'}",
                kind=self.kind,
                name=name,
                known=names,
            ) from None

    def origin(self, name: str) -> str:
        """Where a registered thing came from: ``convbank`` or ``entry point NAME (package P)``."""
        self.get(name)
        entry = self._loaded().get(name)
        if entry is not None:
            return entry.origin
        found = self._fallback(name) if self._fallback is not None else None
        assert found is not None  # get() found it
        return found[1]

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._loaded())

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __iter__(self) -> Iterator[T]:
        return iter([e.value for e in self._loaded().values()])

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()

    def __repr__(self) -> str:
        return f"<Registry of {self.kind}s: {', '.join(self.names())}>"


# ---------------------------------------------------------------------- loading
def _import(spec: str) -> Any:
    """``module:attribute`` (the attribute may be dotted), imported."""
    module, _, attribute = spec.partition(":")
    value: Any = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        value = getattr(value, part)
    return value


def _package(ep: EntryPoint) -> str:
    """The name of the distribution declaring an entry point (``""`` when unknown)."""
    return str(getattr(getattr(ep, "dist", None), "name", "") or "")


def _where(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    package = f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
    return f"entry point {ep.name} = {ep.value} of group {ep.group} (package {package})"


def _others_declared(group: str, skip: set[str]) -> bool:
    """Whether an installed distribution may declare an entry point of ``group`` whose value
    is not in ``skip``: the ``entry_points.txt`` files that :mod:`importlib.metadata` finds on
    ``sys.path`` (``*.dist-info`` and ``*.egg-info`` folders in any letter case, an unzipped
    egg's ``EGG-INFO``) are read as text and split into sections as it splits them, which
    costs a few milliseconds where importing :mod:`importlib.metadata` costs tens (felt by
    every ``convbank list``). It only ever answers too often: a zip on the path, a finder of
    distributions other than the path's, or a line without ``=`` is a yes, and then
    :func:`importlib.metadata.entry_points` decides."""
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    for entry in sys.path:
        egg = os.path.basename(entry).lower().endswith(".egg")
        try:
            with os.scandir(entry or ".") as found:
                folders = [
                    d.path
                    for d in found
                    if d.name.lower().endswith((".dist-info", ".egg-info"))
                    or (egg and d.name.lower() == "egg-info")
                ]
        except NotADirectoryError:
            return True  # a zip or a zipped egg: its metadata is inside
        except OSError:
            continue  # a path entry that does not exist holds nothing
        for folder in folders:
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            if group in text and _declares_others(text, group, skip):
                return True
    return False


def _declares_others(text: str, group: str, skip: set[str]) -> bool:
    """Whether ``entry_points.txt`` text has a line in section ``group`` whose value is not in
    ``skip``, read as :mod:`importlib.metadata` reads it: stripped lines, ``#`` comments
    only, a section is a line that starts with ``[`` and ends with ``]`` less every bracket
    at its ends (``[[g]]`` is ``g``), any other line is ``name = value``."""
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            _, eq, value = line.partition("=")
            if not eq or value.strip() not in skip:
                return True
    return False


def load_entry_points(group: str, skip: Iterable[str] = ()) -> Iterator[tuple[Any, str]]:
    """``(object, origin)`` for each entry point of ``group`` whose value is not in ``skip``,
    in a stable order (convbank's own first, with the origin ``convbank``; then by package
    and name); one that cannot be imported is a :class:`PluginError`.

    Example::

        for engine, origin in load_entry_points("convbank.engines"):
            print(engine.__name__, "from", origin)
    """
    skipped = set(skip)
    if not _others_declared(group, skipped):
        return
    found = sorted(
        (ep for ep in _entry_points(group) if ep.value not in skipped),
        key=lambda ep: (_package(ep) != _OWN, _package(ep), ep.name),
    )
    seen: set[tuple[str, str]] = set()
    for ep in found:
        if (ep.name, ep.value) in seen:  # the same distribution on sys.path twice
            continue
        seen.add((ep.name, ep.value))
        try:
            value = ep.load()
        except SystemExit as exc:  # a plugin must not end the process it is loaded into
            raise PluginError(
                f"{_where(ep)} cannot be loaded: it calls sys.exit({exc.code!r}) when imported",
                origin=_where(ep),
                name=ep.name,
            ) from exc
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # GeneratorExit, a BaseException of its own: its fault too
            raise PluginError(
                f"{_where(ep)} cannot be loaded: {type(exc).__name__}: {exc}", origin=_where(ep), name=ep.name
            ) from exc
        yield value, _OWN if _package(ep) == _OWN else _where(ep)


def _entry_points(group: str) -> Iterator[EntryPoint]:
    """The entry points of ``group`` of each installed distribution (the first of a name); one whose
    ``entry_points.txt`` names the group but cannot be read (a line without ``=``) is a
    :class:`PluginError` naming it (one that does not name it is not convbank's to judge)."""
    from importlib.metadata import distributions

    seen: set[str] = set()
    for dist in distributions():
        name = re.sub(r"[-_.]+", "-", str(dist.name or "")).lower()
        if name and name in seen:  # a distribution on sys.path twice: the first, as importlib takes it
            continue
        seen.add(name)
        try:
            yield from (ep for ep in dist.entry_points if ep.group == group)
        except Exception as exc:
            if group not in (dist.read_text("entry_points.txt") or ""):
                continue
            where = f"package {dist.name} {dist.version}"
            raise PluginError(
                f"{where}: its entry points cannot be read ({type(exc).__name__}: {exc}); reinstall or "
                "uninstall it",
                origin=where,
            ) from exc


def _dataset(value: Any, origin: str) -> Dataset:
    """A registered dataset: a :class:`Dataset` instance, or a subclass instantiated, that
    follows the contract of this version (else a :class:`PluginError` saying what to change)."""
    cls = value if isinstance(value, type) else type(value)
    if not (isinstance(cls, type) and issubclass(cls, Dataset)):
        raise PluginError(
            f"{origin} is not a convbank.datasets.Dataset (class or instance): {value!r}", origin=origin
        )
    from convbank.datasets._declared import declared_problem

    problem = contract_problem(cls) or declared_problem(cls)
    if problem is not None:
        raise PluginError(f"{origin}: {problem}", origin=origin)
    if not isinstance(value, type):
        return value  # type: ignore[no-any-return]
    try:
        return value()  # type: ignore[no-any-return]
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # its __init__ (sys.exit() too): its fault, as an import that fails
        raise PluginError(f"{origin} cannot be loaded: {type(exc).__name__}: {exc}", origin=origin) from exc


def _load_datasets() -> Iterator[tuple[Dataset, str]]:
    for spec in BUILTIN:
        yield _dataset(_import(spec), "convbank"), "convbank"
    for value, origin in load_entry_points(DATASET_GROUP, skip=BUILTIN):
        yield _dataset(value, origin), origin


def _engine(value: Any, origin: str) -> type[Any]:
    if not (isinstance(value, type) and hasattr(value, "config_batches") and hasattr(value, "from_options")):
        raise PluginError(
            f"{origin} is not a convbank engine class (with config_batches and from_options)", origin=origin
        )
    problem = name_problem(getattr(value, "name", None))
    if problem is not None:  # the name --engine takes and messages show, as a dataset's is checked
        said = f"{shown(getattr(value, 'name', None), 60)}"
        raise PluginError(f"{origin}: its name {said} cannot name an engine: {problem}", origin=origin)
    options = getattr(value, "options", ())
    if not (isinstance(options, (tuple, list)) and all(isinstance(o, str) for o in options)):
        said = f"{shown(options, 60)}"
        raise PluginError(f"{origin}: its options {said} are not a tuple of option names", origin=origin)
    return value


def _load_engines() -> Iterator[tuple[type[Any], str]]:
    for value, origin in load_entry_points(ENGINE_GROUP):
        yield _engine(value, origin), origin


def _load_checks() -> Iterator[tuple[Check, str]]:
    from convbank.datasets._generic import CHECKS as GENERIC

    for check in GENERIC:
        yield check, "convbank"
    for entry in datasets._loaded().values():
        for check in entry.value.presentation.checks():
            yield check, f"the {entry.value.name} dataset ({entry.origin})"


def _load_tasks() -> Iterator[tuple[Task, str]]:
    for entry in datasets._loaded().values():
        for task in entry.value.presentation.tasks():
            yield task, f"the {entry.value.name} dataset ({entry.origin})"


def _builtin_dataset(name: str) -> Dataset | None:
    """A built-in dataset by name, importing its package only (None if it is no built-in)."""
    for spec in BUILTIN:
        if spec.partition(":")[0].rsplit(".", 1)[-1] == name:
            return _dataset(_import(spec), "convbank")
    return None


def _imported_entry(name: str) -> tuple[Dataset, str] | None:
    found = imported(name) if NAME_PATTERN.fullmatch(name) else None
    return None if found is None else (found, found.origin)  # type: ignore[attr-defined]


datasets: Registry[Dataset] = Registry(
    "dataset", load=_load_datasets, quick=_builtin_dataset, accept=_dataset, fallback=_imported_entry,
    fallback_names=imported_names,
)  # fmt: skip
"""Every dataset, the built-in ones first, in catalog order (also :data:`convbank.catalog.catalog`);
a name it does not list is looked for among the datasets imported into the bank
(:func:`convbank.store._imported.imported`), which it does not list, but names with its own
where a name is unknown."""
engines: Registry[type[Any]] = Registry("engine", load=_load_engines)
"""Engine classes by name (``local``, ``spark``, plugins'): :class:`convbank.engines.Engine`
subclasses, every one loaded through its entry point (the registry sits below the engines,
which read the catalog)."""
checks: Registry[Check] = Registry("check", load=_load_checks, derived_from=datasets)
"""Every check: the generic ones, then each dataset's (reloaded when a dataset is registered)."""
tasks: Registry[Task] = Registry("task", load=_load_tasks, derived_from=datasets)
"""Every benchmark task, dataset after dataset (reloaded when a dataset is registered)."""
