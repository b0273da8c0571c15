"""What every dataset provides: its card, its files, its configs and splits, a reader from
the publisher's files to typed raw records, a mapper between raw records and the unified
model (both ways) and a writer of the publisher's files, each taking the stored config and
split it is about as one :class:`~convbank.model.Part`. What the other layers need to present
it is an object the dataset holds, :attr:`Dataset.presentation` (a
:class:`convbank.datasets._present.Presentation`, with defaults)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import msgspec

from convbank._lazy import lazy
from convbank._wording import counted, shown
from convbank.datasets._arrow import arrow_type
from convbank.datasets._present import Presentation, hook_names
from convbank.errors import ConvbankError, FormatError, UnknownDatasetError, did_you_mean
from convbank.model import Conversation, Part, conversations_to_tables

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


__all__ = [
    "ConfigSpec",
    "Dataset",
    "Int64",
    "Shard",
    "SideTable",
    "SourceFile",
    "SourcePaths",
    "Strict",
    "contract_problem",
]

Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
"""An integer of the raw tables (Arrow int64): a larger one in a source is a format error
with its JSON path, not an overflow when the batch is converted."""


class Strict(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Base of the raw record types: an unknown key is an error, never silently dropped, and
    an absent key (a field defaulting to ``UNSET``) stays absent when encoded."""


class SourceFile(msgspec.Struct, frozen=True, kw_only=True):
    """One file as its publisher distributes it."""

    name: str
    """The published file name (local sources are searched for this name)."""
    url: str
    sha256: str | None
    """``None`` where the publisher gives no checksum: trust on first use."""
    size: int | None = None
    extract_to: str | None = None
    """For a zip archive: the folder inside it that readers use (extracted once into the
    cache; a local source may also hold that folder already extracted)."""


class ConfigSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A config: its splits with their published conversation counts."""

    name: str
    description: str
    splits: dict[str, int | None]
    union_of: tuple[str, ...] = ()
    """For a config that is the union of others (PEC ``all``): their names. It is not stored
    twice: reading it reads its parts."""


Shard = tuple[int, int] | None
"""A piece of a split: a byte range ``[start, end)`` of its file, or None for all of it."""

SourcePaths = Mapping[str, Path]
"""Local paths of the source files, by published file name."""

SideTable = Callable[[str], "pa.Table | None"]
"""Reads one side table of a config from the bank by name (None when the bank has none)."""


class UndeclaredError(ValueError):
    """A dataset's code gave what the dataset does not declare (a source file :meth:`Dataset.files_for`
    names that is not in its ``files``): a fault of its code, as an exception it raised is,
    blamed on the dataset named ``dataset``."""

    def __init__(self, message: str, *, dataset: str) -> None:
        super().__init__(message)
        self.dataset = dataset


class Dataset(ABC):
    """A dataset of the catalog: one package, ``convbank.datasets.<name>`` for the built-in
    ones, any importable package for a plugin (entry-point group ``convbank.datasets``).

    A subclass must set the card (``name``, ``title``, ``description``, ``license``,
    ``citation``, ``homepage``, ``version``), ``files``, ``configs`` and ``raw_type``, and
    implement :meth:`files_for`, :meth:`read`, :meth:`conversation_id`,
    :meth:`to_conversation`, :meth:`from_conversation` and :meth:`write_source`; a method
    about one stored config's split takes it as one :class:`~convbank.model.Part`
    (``part.config``, ``part.split``). Everything else is optional: the reading hooks below
    (shards, file-level content, side tables) have generic defaults, and so has the
    :attr:`presentation` (chat, Hugging Face, ParlAI, ConvoKit, statistics, the viewer, the
    terminal, checks and benchmark tasks), which a dataset changes by naming its own
    :attr:`presentation_class`. ``docs/adding-a-dataset.md`` is the guide.

    >>> casino = convbank.catalog.get("casino")
    >>> casino.published_count(convbank.datasets.Part("default", "train"))
    900
    """

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    license: ClassVar[str]
    citation: ClassVar[str]
    homepage: ClassVar[str]
    version: ClassVar[str]
    files: ClassVar[tuple[SourceFile, ...]]
    configs: ClassVar[tuple[ConfigSpec, ...]]
    raw_type: ClassVar[type[msgspec.Struct]]
    """The msgspec type of one raw record."""
    optional_files: ClassVar[tuple[str, ...]] = ()
    """Files used when present (Curiosity's fact database) and never required."""
    side_tables: ClassVar[tuple[str, ...]] = ()
    """Names of the side tables :meth:`extra_tables` writes (one partition per config)."""
    samples: ClassVar[Path | None] = None
    """A folder of real records in the publisher's format, under their published names,
    shipped with the dataset's package (TensorFlow Datasets' dummy data): the catalog-wide
    tests build, validate, export and view every dataset from it or from the shared data."""
    presentation_class: ClassVar[type[Presentation]] = Presentation
    """The class of :attr:`presentation` (a dataset's own subclass of
    :class:`~convbank.datasets.Presentation`, in its package's ``present.py``)."""

    @cached_property
    def presentation(self) -> Presentation:
        """How the other layers present the dataset: its :attr:`presentation_class`, made
        for it on first use (then kept, and pickled with it)."""
        return self.presentation_class(self)

    # ------------------------------------------------------------------ configs and splits
    @property
    def default_config(self) -> str:
        """The config the card names first (what a Hugging Face loader loads by default).
        It selects nothing: everywhere convbank takes a config name, ``None`` means every
        config (see :meth:`parts`)."""
        return self.configs[0].name

    def config(self, name: str) -> ConfigSpec:
        """The config of that name, or :class:`UnknownDatasetError` listing the known ones."""
        for cfg in self.configs:
            if cfg.name == name:
                return cfg
        names = [c.name for c in self.configs]
        raise UnknownDatasetError(
            f"{self.name} has no config {name!r}; {did_you_mean(name, names)}known configs: {', '.join(names)}",
            kind="config",
            name=name,
            known=names,
        )

    def stored_configs(self, name: str | None = None) -> list[ConfigSpec]:
        """The stored configs a config name stands for: itself, or the parts of a union
        (PEC's ``all``); with ``None``, every stored config of the dataset."""
        if name is None:
            return [c for c in self.configs if not c.union_of]
        cfg = self.config(name)
        return [self.config(n) for n in cfg.union_of] if cfg.union_of else [cfg]

    def parts(self, config: str | None = None, split: str | None = None) -> list[Part]:
        """The stored (config, split) parts that a config and a split name select, in catalog
        order: the one rule of every function and command that takes them (``load``,
        ``build``, ``read_raw``, ``convbank raw``, ``export``, ``show``...).

        - ``config=None`` selects every stored config; a name selects that config, or the
          configs a union stands for. An unknown name is an :class:`UnknownDatasetError`
          listing the known configs.
        - ``split=None`` selects every split of the selected configs; a name selects that
          split of each selected config that has it. A name that none of them has is an
          :class:`UnknownDatasetError` listing their splits.
        """
        configs = self.stored_configs(config)
        if split is None:
            return [Part(c.name, s) for c in configs for s in c.splits]
        found = [Part(c.name, split) for c in configs if split in c.splits]
        if not found:
            known = list(dict.fromkeys(s for c in configs for s in c.splits))
            where = f"{self.name}/{configs[0].name}" if len(configs) == 1 else self.name
            raise UnknownDatasetError(
                f"{where} has no split {split!r}; {did_you_mean(split, known)}known splits: {', '.join(known)}",
                kind="split",
                name=split,
                known=known,
            )
        return found

    def published_count(self, part: Part) -> int | None:
        """The number of conversations the publisher gives for a stored split (None where
        it gives none)."""
        return self.config(part.config).splits.get(part.split)

    def count_problem(self, part: Part, conversations: int) -> str | None:
        """How a split's number of conversations differs from the published one
        (``"default/train has 3 conversations; 900 published"``), or None when it matches or
        none is published: the one comparison the build report, ``validate`` and the
        benchmarks' fixture check make."""
        expected = self.published_count(part)
        if expected is None or conversations == expected:
            return None
        return (
            f"{part.config}/{part.split} has {counted(conversations, 'conversation')}; {expected:,} published"
        )

    def file(self, name: str) -> SourceFile:
        """The source file of that published name."""
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(name)

    @abstractmethod
    def files_for(self, part: Part) -> list[SourceFile]:
        """The source files a stored config's split is read from."""

    def sources_for(self, part: Part) -> list[SourceFile]:
        """:meth:`files_for`, each file one the dataset declares in :attr:`files` (whose names
        and fields were checked as it was loaded): what convbank fetches, reads and names. A
        file it does not declare (a name such as ``../../x``) is a ``ValueError`` of the
        dataset's code, never a path made of its name."""
        given = self.files_for(part)
        try:
            files = list(given)
        except TypeError:  # no iterable (None, a number): the dataset's fault, said as its
            raise UndeclaredError(
                f"files_for({part.config}/{part.split}) gave {shown(given)}, not a list of source files",
                dataset=self.name,
            ) from None
        for f in files:
            if f not in self.files:
                named = f"the source file {shown(f.name)}" if isinstance(f, SourceFile) else f"{shown(f)}"
                raise UndeclaredError(
                    f"files_for({part.config}/{part.split}) gave {named}, which {self.name} does not "
                    "declare in its files",
                    dataset=self.name,
                )
        return files

    def without_sources(self) -> ConvbankError | None:
        """Why this dataset has no publisher's files to fetch, build or read from (a corpus
        imported from the researcher's own files says so), or None: fetching, building and
        ``raw --from-source`` raise it before anything else. Example:
        ``catalog.get("casino").without_sources() is None``."""
        return None

    def required_files(self, config: str | None = None) -> list[SourceFile]:
        """Every source file needed for a config (all stored configs for ``None``)."""
        needed: dict[str, SourceFile] = {}
        for part in self.parts(config):
            for f in self.sources_for(part):
                needed[f.name] = f
        return list(needed.values())

    # ------------------------------------------------------------------ reading
    @abstractmethod
    def read(self, paths: SourcePaths, part: Part) -> Iterator[Any]:
        """Yield the raw records of one stored config's split, in source order."""

    def split_bytes(self, paths: SourcePaths, part: Part) -> int:
        """The size of a split's sources in bytes (engines size their pieces by it); by
        default the sizes of the files :meth:`files_for` names."""
        return sum(
            path.stat().st_size
            for f in self.sources_for(part)
            if (path := paths.get(f.name)) is not None and path.is_file()
        )

    def shards(self, paths: SourcePaths, part: Part, count: int) -> list[Shard]:
        """Pieces of a split that can be read independently (for distributed builds), in
        order; by default the whole split is one piece (one task per source file)."""
        return [None]

    def read_shard(self, paths: SourcePaths, part: Part, shard: Shard) -> Iterator[Any]:
        """The raw records of one piece of :meth:`shards`, in source order."""
        if shard is not None:
            raise ValueError(f"{self.name} splits are read whole; got shard {shard!r}")
        return self.read(paths, part)

    def count_shard(self, paths: SourcePaths, part: Part, shard: Shard) -> int:
        """The number of records in one piece (by reading it, unless a dataset knows faster)."""
        return sum(1 for _ in self.read_shard(paths, part, shard))

    def file_meta(self, paths: SourcePaths, part: Part) -> dict[str, Any]:
        """File-level content beside the records (kept for the source export); none by default."""
        return {}

    def extra_tables(self, paths: SourcePaths, config: str) -> Iterator[tuple[str, pa.Table]]:
        """Side tables of a stored config (name, table), read from its files beside the
        records (PEC's ``persona.txt``) or from optional ones (Curiosity's fact database);
        none by default."""
        return iter(())

    # ------------------------------------------------------------------ mapping
    @abstractmethod
    def conversation_id(self, record: Any, part: Part, index: int) -> str:
        """The conversation id of a raw record (unique within the dataset)."""

    @abstractmethod
    def to_conversation(self, record: Any, part: Part, index: int) -> Conversation:
        """Map a raw record onto the unified model."""

    @abstractmethod
    def from_conversation(self, conversation: Conversation) -> Any:
        """Rebuild the raw record exactly from its unified conversation."""

    # ------------------------------------------------------------------ raw table
    @property
    def raw_schema(self) -> pa.Schema:
        """Arrow schema of the ``<dataset>_raw`` table: keys, then the record typed like the source."""
        record = arrow_type(self.raw_type)
        return pa.schema(
            [
                pa.field("conversation_id", pa.string(), nullable=False),
                pa.field("source_index", pa.int64(), nullable=False),
                *record,
            ]
        )

    def raw_row(self, record: Any) -> dict[str, Any]:
        """One record as a row of the raw table (without the key columns)."""
        row: dict[str, Any] = msgspec.to_builtins(record)
        return row

    def map_batch(self, records: list[Any], part: Part, start: int) -> dict[str, pa.Table]:
        """A batch of raw records (the first at source position ``start``) as the four
        unified tables and the ``<dataset>_raw`` table. By default through
        :meth:`to_conversation` and :meth:`raw_row`; a dataset may build the same tables
        column by column, faster (they must be equal: ``convbank.testing`` checks it)."""
        try:
            convs = [self.to_conversation(r, part, start + i) for i, r in enumerate(records)]
        except FormatError as exc:  # a record its reader took that cannot be mapped: name its file
            if exc.path is not None:
                raise
            names = [f.name for f in self.sources_for(part)]
            said = f"{', '.join(names)}: {exc}"
            raise FormatError(said, path=names[0] if len(names) == 1 else None, record=exc.record) from exc
        try:
            tables = conversations_to_tables(convs)
        except FormatError as exc:
            said = f"{self.name}/{part.config}/{part.split}: {exc}, given by its to_conversation"
            raise FormatError(said, record=exc.record) from exc
        tables[f"{self.name}_raw"] = pa.Table.from_pylist(
            [
                {"conversation_id": c.conversation_id, "source_index": c.source_index, **self.raw_row(r)}
                for c, r in zip(convs, records, strict=True)
            ],
            schema=self.raw_schema,
        )
        return tables

    # ------------------------------------------------------------------ export
    @abstractmethod
    def write_source(
        self,
        records: Iterable[Any],
        part: Part,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write records in the publisher's format and file names; return the files written."""

    def write_side(self, side: SideTable, config: str, directory: Path) -> list[Path]:
        """Write the publisher's files that a config's side tables hold (PEC's
        ``persona.txt``, read with ``side("pec_personas")``), after its splits; return the
        files written. None by default."""
        return []

    def describe(self) -> dict[str, Any]:
        """The card as JSON-ready data (what ``convbank info --json`` prints)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "license": self.license,
            "homepage": self.homepage,
            "citation": self.citation,
            "version": self.version,
            "default_config": self.default_config,
            "configs": {
                c.name: {
                    "description": c.description,
                    "splits": dict(c.splits),
                    **({"union_of": list(c.union_of)} if c.union_of else {}),
                }
                for c in self.configs
            },
            "files": [{"name": f.name, "url": f.url, "sha256": f.sha256, "size": f.size} for f in self.files],
            "examples": {
                "views": list(self.presentation.example_views),
                "targets": list(self.presentation.target_names),
            },
        }


# ---------------------------------------------------------------------- the contract, checked
_PART_METHODS: dict[str, tuple[str, ...]] = {
    "files_for": ("part",),
    "read": ("paths", "part"),
    "split_bytes": ("paths", "part"),
    "shards": ("paths", "part", "count"),
    "read_shard": ("paths", "part", "shard"),
    "count_shard": ("paths", "part", "shard"),
    "file_meta": ("paths", "part"),
    "conversation_id": ("record", "part", "index"),
    "to_conversation": ("record", "part", "index"),
    "map_batch": ("records", "part", "start"),
    "published_count": ("part",),
    "count_problem": ("part", "conversations"),
    "write_source": ("records", "part", "file_meta", "directory"),
    "source_name": ("part",),
}
"""The methods about one stored split and the positional parameters they take (after
``self``)."""

_VARARGS = 0x04
"""``inspect.CO_VARARGS`` (a code flag), without importing :mod:`inspect` at start-up."""


def contract_problem(cls: type[Dataset]) -> str | None:
    """What makes a dataset class written against an older Dataset contract fail, in one
    line (the registry refuses it with this, naming its entry point), or None when it
    follows this one: presentation hooks inherited from or defined on the dataset class
    (they are asked of :attr:`Dataset.presentation`, so they would be silently ignored), or
    a method about a split that takes ``config, split`` as two strings, not one ``part``.

    >>> from convbank.datasets import contract_problem
    >>> contract_problem(type(convbank.catalog.get("casino"))) is None
    True
    """
    where = f"{cls.__module__}.{cls.__qualname__}"
    guide = "see docs/adding-a-dataset.md"
    if issubclass(cls, Presentation):
        return (
            f"{where} inherits its presentation ({_presentation_base(cls)}); a dataset holds it "
            f"instead: drop that base class and set presentation_class = it on {cls.__name__} ({guide})"
        )
    hooks = hook_names()
    for klass in cls.__mro__:
        if klass is Dataset or klass.__module__.startswith("convbank.datasets._"):
            continue
        own = sorted(hooks & vars(klass).keys())
        if own:
            return (
                f"{where} defines the presentation hook{'s' if len(own) > 1 else ''} {', '.join(own)} on "
                f"the dataset (in {klass.__qualname__}), where nothing asks for {'them' if len(own) > 1 else 'it'}; "
                f"move {'them' if len(own) > 1 else 'it'} to a convbank.datasets.Presentation subclass and set "
                f"presentation_class to it ({guide})"
            )
    for name, expected in _PART_METHODS.items():
        code = getattr(_defined(cls, name), "__code__", None)
        if code is None or code.co_flags & _VARARGS:
            continue
        given = code.co_varnames[1 : code.co_argcount]
        if len(given) != len(expected):
            old = (
                " (config and split as two strings: the older contract)"
                if len(given) == len(expected) + 1
                else ""
            )
            return (
                f"{where}.{name} takes ({', '.join(given)}){old}; a dataset's {name} takes "
                f"({', '.join(expected)}), part being one convbank.datasets.Part "
                f"(part.config, part.split) ({guide})"
            )
    return None


def _defined(cls: type, name: str) -> Any:
    """The attribute as the class body defined it (not bound, not a descriptor's result)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _presentation_base(cls: type) -> str:
    bases = [b for b in cls.__mro__ if issubclass(b, Presentation) and not issubclass(b, Dataset)]
    return ", ".join(f"{b.__module__}.{b.__qualname__}" for b in bases[:1])
