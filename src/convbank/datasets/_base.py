"""What every dataset module provides: its card, its files, its configs and splits, a reader
from the publisher's files to typed raw records, and a mapper between raw records and the
unified model (both ways)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar

import msgspec
import msgspec.inspect
import pyarrow as pa

from convbank.errors import FormatError, UnknownDatasetError
from convbank.model import Conversation, Part

__all__ = [
    "ConfigSpec",
    "Dataset",
    "Int64",
    "SourceFile",
    "Strict",
    "arrow_type",
    "decode_json",
    "no_records",
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


class Dataset(ABC):
    """A dataset of the catalog. Subclasses set the card attributes and implement the reader
    and the mapper; one instance of each is registered in :mod:`convbank.catalog`."""

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
        known = ", ".join(c.name for c in self.configs)
        raise UnknownDatasetError(f"{self.name} has no config {name!r}; known configs: {known}")

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
            known = ", ".join(dict.fromkeys(s for c in configs for s in c.splits))
            where = f"{self.name}/{configs[0].name}" if len(configs) == 1 else self.name
            raise UnknownDatasetError(f"{where} has no split {split!r}; known splits: {known}")
        return found

    def published_count(self, config: str, split: str) -> int | None:
        """The number of conversations the publisher gives for a stored split (None where
        it gives none)."""
        return self.config(config).splits.get(split)

    def count_problem(self, config: str, split: str, conversations: int) -> str | None:
        """How a split's number of conversations differs from the published one
        (``"default/train has 3 conversations; 900 published"``), or None when it matches or
        none is published: the one comparison the build report, ``validate`` and the
        benchmarks' fixture check make."""
        expected = self.published_count(config, split)
        if expected is None or conversations == expected:
            return None
        return f"{config}/{split} has {conversations:,} conversations; {expected:,} published"

    def file(self, name: str) -> SourceFile:
        """The source file of that published name."""
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(name)

    @abstractmethod
    def files_for(self, config: str, split: str) -> list[SourceFile]:
        """The source files a stored config's split is read from."""

    def required_files(self, config: str | None = None) -> list[SourceFile]:
        """Every source file needed for a config (all stored configs for ``None``)."""
        needed: dict[str, SourceFile] = {}
        for cfg in self.stored_configs(config):
            for split in cfg.splits:
                for f in self.files_for(cfg.name, split):
                    needed[f.name] = f
        return list(needed.values())

    # ------------------------------------------------------------------ reading
    @abstractmethod
    def read(self, paths: SourcePaths, config: str, split: str) -> Iterator[Any]:
        """Yield the raw records of one stored config's split, in source order."""

    def shards(self, paths: SourcePaths, config: str, split: str, count: int) -> list[Shard]:
        """Pieces of a split that can be read independently (for distributed builds), in
        order; by default the whole split is one piece (one task per source file)."""
        return [None]

    def read_shard(self, paths: SourcePaths, config: str, split: str, shard: Shard) -> Iterator[Any]:
        """The raw records of one piece of :meth:`shards`, in source order."""
        if shard is not None:
            raise ValueError(f"{self.name} splits are read whole; got shard {shard!r}")
        return self.read(paths, config, split)

    def count_shard(self, paths: SourcePaths, config: str, split: str, shard: Shard) -> int:
        """The number of records in one piece (by reading it, unless a dataset knows faster)."""
        return sum(1 for _ in self.read_shard(paths, config, split, shard))

    def file_meta(self, paths: SourcePaths, config: str, split: str) -> dict[str, Any]:
        """File-level content beside the records (kept for the source export); none by default."""
        return {}

    def extra_tables(self, paths: SourcePaths, config: str) -> Iterator[tuple[str, pa.Table]]:
        """Side tables of a stored config (name, table), read from its files beside the
        records (PEC's ``persona.txt``) or from optional ones (Curiosity's fact database);
        none by default."""
        return iter(())

    # ------------------------------------------------------------------ mapping
    @abstractmethod
    def conversation_id(self, record: Any, config: str, split: str, index: int) -> str:
        """The conversation id of a raw record (unique within the dataset)."""

    @abstractmethod
    def to_conversation(self, record: Any, config: str, split: str, index: int) -> Conversation:
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

    # ------------------------------------------------------------------ export
    @abstractmethod
    def write_source(
        self,
        records: Iterable[Any],
        config: str,
        split: str,
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
        }


# ---------------------------------------------------------------------- helpers
def decode_json(path: Path, typ: Any, what: str, data: bytes | None = None) -> Any:
    """Decode a JSON file (or its bytes, ``data``) into ``typ``; any problem becomes a
    one-line :class:`FormatError` naming the file and the JSON path or position."""
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FormatError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        return msgspec.json.decode(data, type=typ)
    except msgspec.ValidationError as exc:
        raise FormatError(
            f"{path}: {_validation_message(exc, data)}; not the {what} format as published — "
            "re-fetch the file or check that it is the right one"
        ) from exc
    except msgspec.DecodeError as exc:
        raise FormatError(
            f"{path}: {_decode_message(exc, data)}; expected well-formed JSON — "
            "re-fetch the file (it may be truncated or corrupted)"
        ) from exc
    except RecursionError as exc:
        raise FormatError(
            f"{path}: {_depth_message(data)}; not the {what} format as published — "
            "re-fetch the file or check that it is the right one"
        ) from exc


def no_records(path: Path, what: str) -> FormatError:
    """The error for a source that parses but holds no record."""
    return FormatError(
        f"{path}: no records; expected the {what} file as published, which is never empty — "
        "re-fetch the file or check that it is the right one"
    )


_DEPTH = 1000
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _depth_message(data: bytes) -> str:
    """Where a JSON text first nests deeper than the decoder can go."""
    depth = 0
    for m in _BRACKETS.finditer(data):
        token = m.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > _DEPTH:
                offset = m.start()
                line = data.count(b"\n", 0, offset) + 1
                column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
                return (
                    f"JSON nested more than {_DEPTH:,} levels deep at line {line}, column {column} "
                    f"(byte {offset}), deeper than a decoder can follow"
                )
        elif token in (b"]", b"}"):
            depth -= 1
    return "JSON nested deeper than a decoder can follow"


def _validation_message(exc: msgspec.ValidationError, data: bytes | None = None) -> str:
    # msgspec says "Expected `int`, got `str` - at `$[0].dialogue_id`"
    message = str(exc)
    if " - at " in message:
        what, where = message.rsplit(" - at ", 1)
        where = where.strip("`")
        if "[...]" in where and data is not None:
            where = _name_map_keys(where, what, data)
        return f"at {where}: {what[0].lower()}{what[1:]}"
    return message[0].lower() + message[1:]


_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_JSON_TYPES = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def _step(key: str) -> str:
    """A map key as a JSON-path step."""
    return f".{key}" if re.fullmatch(r"[A-Za-z_][\w-]*", key) else f"[{msgspec.json.encode(key).decode()}]"


def _name_map_keys(where: str, what: str, data: bytes) -> str:
    """A JSON path with the keys of the maps it crosses (msgspec writes ``[...]`` for a map
    value): the key whose value has the problem the message describes, found in the source."""
    try:
        root = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return where
    segments = [(m.group(1), m.group(2)) for m in _SEGMENT.finditer(where, 1)]
    got = re.search(r"got `(\w+)`", what)
    missing = re.search(r"missing required field `([^`]+)`", what)

    def complaint(value: Any) -> bool:
        if got:
            kind = _JSON_TYPES.get(got.group(1))
            return kind is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
        if missing:
            return isinstance(value, dict) and missing.group(1) not in value
        return True

    def walk(node: Any, rest: list[tuple[str | None, str | None]]) -> str | None:
        if not rest:
            return "" if complaint(node) else None
        (key, index), *tail = rest
        if index == "...":  # a map value: try each key
            items = node.items() if isinstance(node, dict) else ()
            tries = ((_step(k), walk(v, tail)) for k, v in items)
            return next((step + f for step, f in tries if f is not None), None)
        if key is not None:
            child, step = (
                (node.get(key), f".{key}") if isinstance(node, dict) and key in node else (None, None)
            )
        else:
            i = int(index or 0)
            child, step = (node[i], f"[{i}]") if isinstance(node, list) and i < len(node) else (None, None)
        found = None if step is None else walk(child, tail)
        return None if found is None or step is None else step + found

    resolved = walk(root, segments)
    return where if resolved is None else "$" + resolved


def _decode_message(exc: msgspec.DecodeError, data: bytes) -> str:
    message = str(exc)
    if "truncated" in message:
        return f"malformed JSON: the input ends early (at byte {len(data)})"
    if "(byte " in message:
        detail, _, pos = message.rpartition("(byte ")
        offset = int(pos.rstrip(")"))
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        detail = detail.replace("JSON is malformed: ", "").strip()
        return f"malformed JSON at line {line}, column {column} (byte {offset}): {detail}"
    return message


_NONE = msgspec.inspect.NoneType


def arrow_type(typ: Any) -> list[pa.Field]:
    """The Arrow fields of a msgspec Struct type, derived from its annotations.

    Optional and omittable fields become nullable; a union of ``int`` with the literal
    ``""`` (ConvAI2's ``profile_match``) becomes a nullable int64 whose null stands for ``""``.
    """
    info = msgspec.inspect.type_info(typ)
    if not isinstance(info, msgspec.inspect.StructType):
        raise TypeError(f"{typ!r} is not a msgspec Struct")
    return _fields(info)


def _fields(info: msgspec.inspect.StructType) -> list[pa.Field]:
    return [
        pa.field(f.encode_name, _arrow(f.type), nullable=not f.required or _nullable(f.type))
        for f in info.fields
    ]


def _nullable(info: msgspec.inspect.Type) -> bool:
    if isinstance(info, msgspec.inspect.UnionType):  # None, or "" stored as null
        return any(
            isinstance(t, _NONE) or (isinstance(t, msgspec.inspect.LiteralType) and "" in t.values)
            for t in info.types
        )
    return isinstance(info, (msgspec.inspect.AnyType, _NONE))


def _arrow(info: msgspec.inspect.Type) -> pa.DataType:  # noqa: PLR0911 - one case per type
    mi = msgspec.inspect
    if isinstance(info, mi.UnionType):
        types = [t for t in info.types if not isinstance(t, _NONE)]
        if len(types) == 1:
            return _arrow(types[0])
        kinds = {type(t) for t in types}
        if kinds == {mi.IntType, mi.LiteralType}:
            return pa.int64()
        raise TypeError(f"no Arrow type for the union {info!r}")
    if isinstance(info, mi.BoolType):
        return pa.bool_()
    if isinstance(info, mi.IntType):
        return pa.int64()
    if isinstance(info, mi.FloatType):
        return pa.float64()
    if isinstance(info, mi.StrType):
        return pa.string()
    if isinstance(info, mi.LiteralType):
        return pa.int64() if all(isinstance(v, int) for v in info.values) else pa.string()
    if isinstance(info, (mi.ListType, mi.VarTupleType)):
        return pa.list_(_arrow(info.item_type))
    if isinstance(info, mi.TupleType):
        item = {str(_arrow(t)) for t in info.item_types}
        if len(item) != 1:
            raise TypeError(f"no Arrow type for the mixed tuple {info!r}")
        return pa.list_(_arrow(info.item_types[0]))
    if isinstance(info, mi.DictType):
        return pa.map_(_arrow(info.key_type), _arrow(info.value_type))
    if isinstance(info, mi.StructType):
        return pa.struct(_fields(info))
    raise TypeError(f"no Arrow type for {info!r}")
