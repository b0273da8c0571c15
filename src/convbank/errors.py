"""The one error tree of convbank.

Every error convbank raises on purpose derives from :class:`ConvbankError`, so
``except ConvbankError`` catches them all. The CLI turns them into one line on
stderr and an exit code; the library lets them propagate::

    ConvbankError
    ├── UnknownDatasetError (also KeyError)  unknown dataset, config, split, task or engine name
    ├── UnknownFieldError (also KeyError)    a filter names an annotation layer, label or meta
    │                                        key the dataset does not have
    ├── SourceError                          a source file cannot be found or fetched
    │   ├── OfflineError                     offline mode and the file is not present
    │   └── DownloadError                    HTTP error or interrupted transfer
    ├── ChecksumError                        sha256 of a file differs from the catalog's
    ├── FormatError (also ValueError)        a source file does not have the published format
    ├── NotBuiltError                        the bank has no tables for what was asked
    ├── DamagedBankError                     a bank file is missing, truncated or corrupt
    │   └── SchemaVersionError               the bank was built with another unified schema
    ├── ConversationNotFoundError (KeyError) no conversation with that id
    ├── QueryError                           a SQL statement failed or is not read-only
    ├── BuildError                           a build could not complete (the old bank is kept)
    ├── ExportError                          an export cannot be written as asked
    ├── ServeError                           the viewer cannot listen where asked
    ├── ScaffoldError                        a new dataset cannot be scaffolded as asked
    ├── BenchError                           a benchmark cannot run or score as asked (unknown
    │                                        model, too little data, a bad predictions file)
    ├── MissingExtraError (also ImportError) an optional library is not installed
    └── SetupError                           CONVBANK_HOME cannot be created or written, or a
        │                                    CONVBANK_* setting has a bad value
        ├── DiskFullError                    no space left where convbank writes (exit 1)
        └── PluginError (also ValueError)    an installed plugin cannot be loaded, or its
                                             name is taken

Exit codes of the CLI: 1 build or other failure, 2 bad input (format, checksum, unknown name,
refused SQL, export, a busy port), 3 sources unavailable, 4 not built, not found or damaged
(see `convbank doctor`), 5 setup (CONVBANK_HOME or a setting).

Each error also holds what its message states as attributes, its *facts* (the file, the
line, the name asked for and the known ones, the SQL and its limit...; ``facts`` names a
class's own, a fact not given is None), so a program acts on them instead of parsing the
line. A name that is not known, with the known ones to choose from:

>>> try:
...     convbank.load("casion")
... except convbank.UnknownDatasetError as error:
...     print(error.kind, repr(error.name), error.known[:2], error.exit_code)
dataset 'casion' ('casino', 'ccpe') 2

A query past its time limit, with the SQL and the limit to try again with more time:

>>> runaway = "SELECT count(*) FROM turns a, turns b, turns c"
>>> try:
...     convbank.sql(runaway, timeout=0.5)
... except convbank.QueryError as error:
...     print(error.limit, error.sql == runaway)
0.5 True

A source file that departs from its publisher's format, with where it does
(:class:`FormatError`: ``path``, ``line``, ``json_path``, ``record``):

>>> from pathlib import Path
>>> from convbank.datasets.pec.text import parse_lines
>>> _ = Path("train.txt").write_text("a ---+--- hi\\n" + "*" * 20 + "\\n" + "*" * 20 + "\\n")
>>> try:
...     list(parse_lines(Path("train.txt")))
... except convbank.errors.FormatError as error:
...     print(error.path, error.line)
train.txt 3
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from convbank._arguments import an_index

__all__ = [
    "BenchError",
    "BuildError",
    "ChecksumError",
    "ConvbankError",
    "ConversationNotFoundError",
    "CorpusImportError",
    "DamagedBankError",
    "DiskFullError",
    "DownloadError",
    "ExportError",
    "FormatError",
    "MissingExtraError",
    "NotBuiltError",
    "OfflineError",
    "PluginError",
    "QueryError",
    "ScaffoldError",
    "SchemaVersionError",
    "ServeError",
    "SetupError",
    "SourceError",
    "UnknownDatasetError",
    "UnknownFieldError",
]
"""The error tree (``did_you_mean``, the hint of their messages, is a helper beside it)."""


def did_you_mean(
    name: object, known: Iterable[str], *, cutoff: float = 0.6, n: int = 3, prefix: str = ""
) -> str:
    """The hint every lookup of a name by convbank gives before its list of the known names:
    ``"did you mean casino? "`` for the known names closest to ``name`` (difflib's ratio at
    least ``cutoff``, the ``n`` closest first; each shown after ``prefix``, as in
    ``strategy:uv-part``), ``""`` when none is close (or ``name`` is not a string).
    Datasets, configs, splits, tasks, engines, models, export formats, layers and labels, meta
    keys, viewer fields and sorts, option choices: one text everywhere.

    >>> f"unknown dataset 'casion'; {did_you_mean('casion', ['casino', 'ccpe'])}known: casino, ccpe"
    "unknown dataset 'casion'; did you mean casino? known: casino, ccpe"
    >>> did_you_mean("nope", ["casino", "ccpe"])
    ''
    >>> did_you_mean("HET", ["casino", "het"])
    'did you mean het? (names are case-sensitive) '
    """
    if not isinstance(name, str):
        return ""
    from difflib import get_close_matches

    close = get_close_matches(name, list(known), n=n, cutoff=cutoff)
    if not close:  # names are case-sensitive: ``HET`` is not ``het``, but meant it
        close = [k for k in known if k.casefold() == name.casefold()][:n]
        said = ", ".join(prefix + c for c in close)
        return f"did you mean {said}? (names are case-sensitive) " if close else ""
    return f"did you mean {', '.join(prefix + c for c in close)}? "


class ConvbankError(Exception):
    """Root of every error convbank raises on purpose. Each class holds the facts its
    message states as attributes (:attr:`facts` names them; a fact not given is ``None``)
    and the command line's exit code as :attr:`exit_code`, which is all the command line
    reads (``ctx.exit(error.exit_code)``)::

        try:
            convbank.load("casion")
        except convbank.UnknownDatasetError as e:
            e.name, e.known[:2]        # ('casion', ('casino', 'ccpe'))
    """

    exit_code: ClassVar[int] = 1
    """The command line's exit code for this class of error."""
    facts: ClassVar[tuple[str, ...]] = ()
    """The attributes this class adds to its parents' (:meth:`all_facts`: all of them)."""
    multiline: ClassVar[bool] = False
    """Whether the command line prints the message's own line breaks (DuckDB's ``LINE 1:
    ... ^`` of a :class:`QueryError`); every other message is one line whatever it holds (a
    newline or a tab in a path it names shown as ``\\n``, ``\\t``)."""

    def __init__(self, message: str | None = None, **facts: Any) -> None:
        named = self.all_facts()
        unknown = sorted(set(facts) - set(named))
        if unknown:
            raise TypeError(
                f"{type(self).__name__} has no fact {unknown[0]!r}; its facts: {', '.join(named) or 'none'}"
            )
        super().__init__(*(() if message is None else (message,)))
        for name in named:
            value = facts.get(name)
            setattr(self, name, tuple(value) if name == "known" and value is not None else value)

    @classmethod
    def all_facts(cls) -> tuple[str, ...]:
        """Every fact of this class, its parents' first.

        >>> NotBuiltError.all_facts()
        ('dataset', 'config', 'split', 'path')
        """
        found: list[str] = []
        for klass in reversed(cls.__mro__):
            found += [f for f in vars(klass).get("facts", ()) if f not in found]
        return tuple(found)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class UnknownDatasetError(ConvbankError, KeyError):
    """A dataset, config, split, task or engine name that convbank does not know: ``kind``
    (``dataset``, ``config``, ``split``, ``engine``...), the ``name`` asked for and the
    ``known`` names."""

    exit_code = 2
    facts = ("kind", "name", "known")
    kind: str | None
    name: object
    known: tuple[str, ...] | None


class UnknownFieldError(ConvbankError, KeyError):
    """A filter names an annotation layer, a label or a meta key the dataset does not have,
    a meta value of a type none has, or a table name is unknown (a typo: the message lists
    the known ones and the closest): the ``name`` asked for and the ``known`` ones."""

    exit_code = 2
    facts = ("name", "known")
    name: object
    known: tuple[str, ...] | None


class SourceError(ConvbankError):
    """A source file cannot be located or fetched: the ``dataset``, the ``file``'s name and
    the ``path`` looked at."""

    exit_code = 3
    facts: ClassVar[tuple[str, ...]] = ("dataset", "file", "path")
    dataset: str | None
    file: str | None
    path: Path | str | None


class OfflineError(SourceError):
    """Offline mode is on and a source file is not available locally."""


class DownloadError(SourceError):
    """An HTTP error, a refused connection or an interrupted transfer (of ``url``)."""

    facts = ("url",)
    url: str | None


class ChecksumError(ConvbankError):
    """A file's sha256 differs from the one the catalog expects: the ``path``, the
    ``expected`` and the ``actual`` digests."""

    exit_code = 2
    facts = ("path", "expected", "actual")
    path: Path | str | None
    expected: str | None
    actual: str | None


class FormatError(ConvbankError, ValueError):
    """A source file does not have its publisher's format: the ``path``, and where it departs
    from it: the ``line`` (of a text or JSON file), the ``json_path`` (``$[3].dialogue``) or
    the ``record`` (a record's position or id)."""

    exit_code = 2
    facts = ("path", "line", "json_path", "record")
    path: Path | str | None
    line: int | None
    json_path: str | None
    record: object


class NotBuiltError(ConvbankError):
    """The bank holds nothing for the ``dataset``, ``config`` or ``split`` asked for (or
    nothing at all: the bank's ``path``)."""

    exit_code = 4
    facts = ("dataset", "config", "split", "path")
    dataset: str | None
    config: str | None
    split: str | None
    path: Path | str | None


class DamagedBankError(ConvbankError):
    """A file of the bank (a table, the manifest) is missing, truncated or corrupt; the
    message names it (``path``). ``convbank doctor`` checks the whole bank; rebuilding
    repairs it."""

    exit_code = 4
    facts: ClassVar[tuple[str, ...]] = ("path",)
    path: Path | str | None


class SchemaVersionError(DamagedBankError):
    """The bank (a dataset of its manifest, or one of its table files) was built with another
    version of the unified schema than this convbank reads; rebuilding the dataset makes it
    this one's. The message is one line (:meth:`of` writes it); the facts are attributes:
    ``path`` (the manifest or the file), ``dataset``, ``built_by`` (the convbank version that
    built it, None where not recorded), ``schema_version`` (the one it was built with),
    ``reads`` (the one this convbank reads) and ``problem`` (what its file lacks, None when
    the version alone differs).

    >>> error = SchemaVersionError.of("manifest.json", "casino", "0.0.9", "0.9", "1.0")
    >>> str(error).split("; ")[1], error.schema_version, error.exit_code
    ('run `convbank build casino` to rebuild', '0.9', 4)
    """

    exit_code = 4
    facts: ClassVar[tuple[str, ...]] = ("dataset", "built_by", "schema_version", "reads", "problem")
    dataset: str | None
    built_by: str | None
    schema_version: str | None
    reads: str | None
    problem: str | None

    @classmethod
    def of(
        cls,
        path: str,
        dataset: str,
        built_by: str | None,
        schema_version: str | None,
        reads: str,
        *,
        problem: str | None = None,
    ) -> SchemaVersionError:
        """The error for ``dataset`` at ``path``, its one line written from the facts."""
        by = f"convbank {built_by}" if built_by else "a convbank that did not record its version"
        found = f" ({problem})" if problem else ""
        return cls(
            f"{path}: {dataset} was built by {by} with schema {schema_version or 'unrecorded'}{found}, "
            f"this convbank reads schema {reads}; run `convbank build {dataset}` to rebuild",
            path=path,
            dataset=dataset,
            built_by=built_by,
            schema_version=schema_version,
            reads=reads,
            problem=problem,
        )


class ConversationNotFoundError(ConvbankError, KeyError):
    """No conversation with the given id (``conversation_id``, in ``dataset``)."""

    exit_code = 4
    facts = ("dataset", "conversation_id")
    dataset: str | None
    conversation_id: str | None


class QueryError(ConvbankError):
    """A SQL statement failed, or is not a read-only statement: the ``sql`` (the statement
    that failed, where known), the ``limit`` it ran past (a time limit in seconds, a
    memory limit as written) and the ``path`` of a file of SQL, or of an empty bank."""

    exit_code = 2
    facts = ("sql", "limit", "path")
    multiline = True
    sql: str | None
    limit: float | str | None
    path: Path | str | None


class BuildError(ConvbankError):
    """A build could not complete; the previous bank is left intact (``path``: the bank)."""

    exit_code = 1
    facts = ("path",)
    path: Path | str | None


class CorpusImportError(ConvbankError, ValueError):
    """An import cannot be done as asked (a name taken, a format not recognised) or a record
    of its files is not of their format: the dataset ``name`` asked for, the ``path`` of the
    file and ``where`` in it (``line 3``, ``row 4``, ``utterances.jsonl line 2``)."""

    exit_code = 2
    facts = ("name", "path", "where")
    name: str | None
    path: Path | str | None
    where: str | None


class ExportError(ConvbankError):
    """An export cannot be written as asked (unknown format option, output in the way): the
    ``format`` and the ``path`` concerned."""

    exit_code = 2
    facts = ("format", "path")
    format: str | None
    path: Path | str | None


class ServeError(ConvbankError):
    """The viewer cannot listen on the address asked for (in use, not available): the
    ``host`` and ``port``."""

    exit_code = 2
    facts = ("host", "port")
    host: str | None
    port: int | None


class ScaffoldError(ConvbankError):
    """``convbank new-dataset`` cannot write as asked: a bad or taken ``name``, a file in the
    way or a folder that is not a convbank checkout (``path``)."""

    exit_code = 2
    facts = ("name", "path")
    name: str | None
    path: Path | str | None


class BenchError(ConvbankError):
    """A benchmark cannot run or score as asked: an unknown model, too little data for the
    protocol, a predictions file with missing, extra, duplicate or malformed entries (the
    ``task``, the ``model``, the predictions file's ``path`` and ``line``, the ``split``
    short of data)."""

    exit_code = 2
    facts = ("task", "model", "path", "line", "split")
    task: str | None
    model: str | None
    path: Path | str | None
    line: int | None
    split: str | None


class MissingExtraError(ConvbankError, ImportError):
    """An optional library is not installed; the message names the extra to install
    (``module``, ``extra``)."""

    exit_code = 2
    facts = ("module", "extra")
    module: str | None
    extra: str | None


class SetupError(ConvbankError):
    """convbank's own folder or settings are unusable: ``CONVBANK_HOME`` (or a folder in it)
    cannot be created or written, or a ``CONVBANK_*`` variable has a bad value. The message
    names the folder (``path``) or variable (``variable``) and what to do."""

    exit_code = 5
    facts: ClassVar[tuple[str, ...]] = ("path", "variable")
    path: Path | str | None
    variable: str | None


class DiskFullError(SetupError):
    """No space is left on the device convbank writes to (its home, the bank, an export's
    folder, a report): ``path`` is where, ``free`` the bytes left when known; what was there
    before is kept. Exit 1, as a failed build."""

    exit_code = 1
    facts = ("free",)
    free: int | None


class PluginError(SetupError, ValueError):
    """A plugin (an entry point of ``convbank.datasets`` or ``convbank.engines``) cannot be
    loaded, is not what its group registers, or takes a name already registered; the message
    names the entry point and its package (``origin``: ``entry point NAME = VALUE of group
    GROUP (package P)``, or the module) and the ``name`` taken."""

    facts = ("origin", "name")
    origin: str | None
    name: str | None


def require(module: str, extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless ``module`` can be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(
            f"{what} needs the {module!r} library, which is not installed; "
            f"install it with: pip install 'convbank[{extra}]'",
            module=module,
            extra=extra,
        )


def whole_number(value: Any, name: str = "seed", least: int | None = 0) -> int:
    """``value`` (a seed, an epoch, a size) as a Python int of at least ``least``, or an error
    naming ``name``: a smaller number is a ``ValueError``, anything that is not a whole number (a float such
    as 1.5, a string, a bool) a ``TypeError``; an int of NumPy is its value. The same check
    everywhere a seed or an epoch is taken, so that none is rounded or read from its text.

    >>> whole_number(3), whole_number(7, "epoch")
    (3, 7)
    >>> whole_number(-1)
    Traceback (most recent call last):
    ...
    ValueError: seed must be a whole number of at least 0, not -1
    """
    number = an_index(value)
    what = "a whole number" if least is None else f"a whole number of at least {least}"
    if number is None:
        raise TypeError(f"{name} must be {what}, not {value!r}")
    if least is not None and number < least:
        raise ValueError(f"{name} must be {what}, not {value!r}")
    return number


def printable(text: str) -> str:
    """``text`` as a line a terminal shows as it is: each character that is not printable
    (ESC, BEL, a newline, a bidi override) as its escape, as ``repr`` writes it.

    >>> printable("ann\\x1b[2J\\u202e")
    'ann\\\\x1b[2J\\\\u202e'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
