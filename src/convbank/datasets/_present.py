"""How the other layers present a dataset: a :class:`Presentation`, the object every
:class:`convbank.datasets.Dataset` holds as :attr:`~convbank.datasets.Dataset.presentation`
(an instance of its ``presentation_class``), whose hooks all have generic defaults.

A dataset that names no presentation class works everywhere: the chat export sees its
conversations from their last-listed participant with their persona as the system message,
the Hugging Face export has the raw record's own features, ConvoKit speakers are per
conversation, statistics show sizes, labels and turn lengths, the viewer and ``convbank
show`` print turns as text with their metadata, and it has no checks of its own and no
benchmark task. Each hook below says which layer asks it and what it is for; a dataset
overrides those that make it read better in a subclass (``present.py`` of its package) and
names it: ``presentation_class = CasinoPresentation``.

Layers ask these hooks (``dataset.presentation.chat_side(conv)``) and nothing else: no module
outside ``convbank.datasets`` names a dataset or keeps a table per dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import msgspec

from convbank._lazy import lazy
from convbank.datasets._arrow import arrow_type
from convbank.datasets._checks import Check
from convbank.model import Annotation, Conversation, Turn

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


if TYPE_CHECKING:
    import datasets

    from convbank.tasks import Task

__all__ = [
    "ActionTable",
    "Badge",
    "Context",
    "CrossTab",
    "Distribution",
    "MetaField",
    "Note",
    "Presentation",
    "Presented",
    "SideLookup",
    "TerminalTurn",
    "ViewerTurn",
    "hook_names",
    "meta_distribution",
    "system_lines",
]

Context = Mapping[str, Any]
"""What a dataset's side tables say about one conversation (Curiosity: ``{"facts": {fid:
text}}``), from :meth:`Presentation.conversation_context`; empty for most datasets."""


class SideLookup(Protocol):
    """Reads rows of one of the dataset's side tables from the bank (the configs being read):
    the columns asked for, the rows matching pyarrow ``filters``; None when the bank has none."""

    def __call__(
        self, table: str, *, columns: list[str] | None = None, filters: Any = None
    ) -> pa.Table | None: ...


class Presented(Protocol):
    """What a :class:`Presentation` reads of the dataset it presents (a
    :class:`convbank.datasets.Dataset`): its name, its raw type and its mapper back."""

    @property
    def name(self) -> str: ...

    @property
    def raw_type(self) -> type[msgspec.Struct]: ...

    def from_conversation(self, conversation: Conversation) -> Any: ...


# ---------------------------------------------------------------------- statistics
@dataclass(frozen=True)
class Distribution:
    """A metadata distribution of ``convbank stats`` and the report: ``sql`` selects
    ``config, split, value`` for the dataset bound to ``?``; ``order`` fixes the order of
    categorical values and ``numeric`` adds the mean and median."""

    name: str
    sql: str
    order: tuple[str, ...] = ()
    numeric: bool = False


def meta_distribution(name: str, table: str, expr: str, where: str = "TRUE", **kw: Any) -> Distribution:
    """The distribution of ``expr`` (SQL over one of the views: ``meta->>'key'``, ``len(persona)``)
    over the rows of ``table`` that match ``where``."""
    sql = f"SELECT config, split, {expr} AS value FROM {table} WHERE dataset = ? AND {where}"
    return Distribution(name, sql, **kw)


@dataclass(frozen=True)
class CrossTab:
    """A cross-tab that answers a research question (``convbank stats``, the report): ``sql``
    over the views returns rows of ``columns``."""

    title: str
    question: str
    columns: tuple[str, ...]
    sql: str


# ---------------------------------------------------------------------- viewer and terminal
@dataclass(frozen=True)
class MetaField:
    """A metadata field the viewer's listing filters, sorts and summarises by: a JSON path
    into the ``meta`` of ``conversations`` or of ``participants`` (then a conversation's value
    is its participants' largest, for sorting and ranges)."""

    table: str
    path: str


@dataclass(frozen=True)
class ActionTable:
    """An action shown as a table (a CaSiNo deal): a title, column heads and labelled rows."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Badge:
    """A short mark on a turn (``♥ liked``) with a class of the viewer's stylesheet."""

    text: str
    css: str = ""


@dataclass(frozen=True)
class Note:
    """A line under a turn (a fact shown to its speaker); ``strong`` ones stand out."""

    text: str
    strong: bool = False


@dataclass(frozen=True)
class ViewerTurn:
    """What the viewer shows of a turn besides its text, labels, spans and metadata."""

    action: ActionTable | None = None
    badges: tuple[Badge, ...] = ()
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True)
class TerminalTurn:
    """What ``convbank show`` prints of a turn besides its text, labels and metadata:
    ``action`` replaces the text of an action, ``note`` follows the metadata (dim) and
    ``lines`` come under the turn."""

    action: str | None = None
    note: str | None = None
    lines: tuple[str, ...] = field(default=())


def system_lines(system: str) -> list[str]:
    """A chat system message as context lines: one per line, list bullets (``- ``) removed,
    empty lines dropped (the ParlAI context of datasets whose system message is their
    private context)."""
    return [s for s in (line.removeprefix("- ").strip() for line in system.splitlines()) if s]


# ---------------------------------------------------------------------- the hooks
class Presentation:
    """The hooks through which exports, statistics, the viewer, the terminal, validation and
    benchmarks present a dataset, each with a generic default. It is made by the dataset it
    presents (``Presentation(dataset)``, once, on first use) and reads the dataset's card,
    raw type and mapper through :attr:`dataset`.

    >>> casino = convbank.catalog.get("casino")
    >>> casino.presentation
    <CasinoPresentation of casino>
    >>> casino.presentation.target_names
    ('points_scored', 'satisfaction', 'opponent_likeness')
    """

    def __init__(self, dataset: Presented) -> None:
        self.dataset = dataset
        """The dataset presented."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.dataset.name}>"

    # ------------------------------------------------------------------ side tables
    def conversation_context(self, conversation: Conversation, side: SideLookup) -> dict[str, Any]:
        """What the side tables say about one conversation, for the chat system message, the
        viewer and the terminal (Curiosity: the text of the facts shown). Default: nothing
        (and no read)."""
        return {}

    # ------------------------------------------------------------------ chat and ParlAI
    def chat_side(self, conversation: Conversation) -> str:
        """The participant the ``chat`` and ``parlai`` exports see a conversation from when
        ``--as`` is not given. Default: the last participant listed (the second of a
        user/assistant pair)."""
        if not conversation.participants:
            raise ValueError(
                f"{self.dataset.name} conversation {conversation.conversation_id} has no participants"
            )
        return conversation.participants[-1].participant_id

    def chat_system(self, conversation: Conversation, me: str, context: Context) -> str:
        """The system message of the ``chat`` export: what ``me`` privately knew. Default:
        their persona, one ``- `` line per sentence."""
        persona = conversation.participant(me).persona
        if not persona:
            return "You take part in an online conversation. Your persona is not known."
        return "Your persona:\n" + "\n".join(f"- {s}" for s in persona)

    def chat_content(self, turn: Turn) -> str:
        """A turn as a chat message's content. Default: its text; an action as ``[text]``."""
        return f"[{turn.text}]" if turn.kind == "action" else turn.text

    def chat_outcome(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """The ``outcome`` of a chat record's metadata (scores, ratings). Default: none."""
        return {}

    def chat_messages(self, conversation: Conversation, me: str, context: Context) -> list[dict[str, str]]:
        """A conversation as chat messages seen from ``me``: the system message
        (:meth:`chat_system`), then every turn (:meth:`chat_content`), ``me``'s as
        ``assistant`` and everyone else's as ``user``. What the ``chat`` export writes and the
        ``chat`` and ``responses`` example views hold; a dataset rarely overrides it."""
        messages = [{"role": "system", "content": self.chat_system(conversation, me, context)}]
        messages += [
            {"role": "assistant" if t.participant_id == me else "user", "content": self.chat_content(t)}
            for t in conversation.turns
        ]
        return messages

    # ------------------------------------------------------------------ example views
    example_views: ClassVar[tuple[str, ...]] = ("turns", "responses", "chat", "conversations")
    """The example views of :meth:`convbank.Corpus.examples` the dataset offers (every built-in
    dataset offers all four: each has speakers, turns and a side the chat export sees)."""

    target_names: ClassVar[tuple[str, ...]] = ()
    """The outcome fields a conversation has as training targets (:meth:`targets`), in the
    ``conversations`` example view, ``convbank info`` and the catalog page."""

    def targets(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """A conversation's outcomes seen from participant ``me`` (the keys of
        :attr:`target_names`; a value the dataset does not have is None): the targets of
        the ``conversations`` example view. Default: none."""
        return {}

    def parlai_context(self, conversation: Conversation, me: str, context: Context) -> list[str]:
        """The lines that open a ParlAI episode. Default: ``your persona: ...`` per persona
        sentence, as the ConvAI2 and PersonaChat tasks present it."""
        persona = conversation.participant(me).persona
        return [f"your persona: {line}" for s in persona for line in system_lines(s)]

    # ------------------------------------------------------------------ Hugging Face
    hf_split_names: ClassVar[Mapping[str, str]] = {}
    """Split names of the Hugging Face loader where they differ (PEC: valid -> validation)."""

    def hf_features(self) -> datasets.Features:
        """The ``datasets.Features`` of the ``hf`` export (those of the dataset's Hugging Face
        loader, where there is one). Default: the raw record's Arrow type; a raw type with a
        map (a ``dict`` field) has no ``datasets`` equivalent, and its dataset overrides this
        hook and :meth:`hf_record`."""
        from datasets import Features

        from convbank.errors import ExportError

        try:
            return Features.from_arrow_schema(pa.schema(arrow_type(self.dataset.raw_type)))
        except (ValueError, TypeError) as exc:
            raise ExportError(
                f"{self.dataset.name} has no Hugging Face features: its raw records hold a type Hugging Face "
                f"cannot ({exc}); its presentation must define hf_features() and hf_record()",
                format="hf",
            ) from exc

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """One conversation as a row of :meth:`hf_features` (class names stay names: the
        export turns them into class ids). Default: the raw record."""
        record: dict[str, Any] = msgspec.to_builtins(self.dataset.from_conversation(conversation))
        return record

    def hf_raw(self, row: dict[str, Any]) -> Any | None:
        """The raw record again from a row of :meth:`hf_record` (class ids already names),
        for reading an ``hf`` export back; None where the row is the raw record itself (the
        default), read back by :attr:`~convbank.datasets.Dataset.raw_type`."""
        return None

    # ------------------------------------------------------------------ ConvoKit
    global_speakers: ClassVar[bool] = False
    """Whether a participant id names the same person in every conversation (PEC's Reddit
    authors); otherwise ConvoKit speakers are ``<conversation_id>/<participant_id>``."""

    # ------------------------------------------------------------------ statistics
    distributions: ClassVar[tuple[Distribution, ...]] = ()
    """The key metadata ``convbank stats``, the report and the viewer chart."""
    crosstabs: ClassVar[tuple[CrossTab, ...]] = ()
    """Cross-tabs that answer research questions about the dataset."""

    # ------------------------------------------------------------------ viewer
    viewer_filters: ClassVar[Mapping[str, MetaField]] = {}
    """Metadata the viewer's listing filters, sorts and summarises by, by name."""
    viewer_hidden_meta: ClassVar[frozenset[str]] = frozenset()
    """Turn metadata the viewer does not list (shown otherwise, or kept for the round trip)."""
    sql_examples: ClassVar[tuple[tuple[str, str], ...]] = ()
    """(title, SQL) examples the viewer's SQL console offers."""

    def meta_views(self) -> Mapping[str, Mapping[str, str]]:
        """Typed views of ``meta`` that :meth:`convbank.Corpus.to_arrow` adds beside it:
        ``{table: {column: DuckDB expression over the typed struct column meta}}``, for values
        the publisher wrote in a form that is not their type (CaSiNo's deal counts are the
        strings "0" to "3"). The struct keeps what was published; a view is an extra column."""
        return {}

    def meta_view_types(self) -> Mapping[str, Mapping[str, pa.DataType]]:
        """The Arrow type of each of :meth:`meta_views`' columns, ``{table: {column: type}}``
        (what DuckDB makes of its expression: a test holds the two equal), so that the schema
        of :meth:`convbank.Corpus.scan` is known without running them. A view without one
        is typed by running it over no rows (DuckDB imported, about 0.1 s).

        >>> from convbank import catalog
        >>> catalog.get("casino").presentation.meta_view_types()["turns"]["deal_counts"].num_fields
        2
        """
        return {}

    def viewer_turn(self, turn: Turn, context: Context) -> ViewerTurn:
        """What the viewer shows of a turn besides text, labels and metadata: an action as
        a table, badges, notes. Default: nothing more."""
        return ViewerTurn()

    def label_class(self, annotation: Annotation) -> str:
        """The stylesheet class of a whole-turn label in the viewer (``act``: dialog acts).
        Default: none."""
        return ""

    def span_detail(self, annotation: Annotation) -> str | None:
        """A detail shown after a span's label in the viewer (CCPE-M's entity type).
        Default: none."""
        return None

    # ------------------------------------------------------------------ terminal
    terminal_hidden_meta: ClassVar[frozenset[str]] = frozenset()
    """Turn metadata ``convbank show`` does not print (shown otherwise)."""

    def terminal_turn(self, turn: Turn, context: Context) -> TerminalTurn:
        """What ``convbank show`` prints of a turn besides text, labels and metadata.
        Default: an action as ``[text]``."""
        return TerminalTurn(action=f"[{turn.text}]" if turn.kind == "action" else None)

    # ------------------------------------------------------------------ validation and tasks
    def checks(self) -> Sequence[Check]:
        """The dataset's own checks (``convbank validate`` runs them after the generic ones).
        Default: none."""
        return ()

    def tasks(self) -> Sequence[Task]:
        """The benchmark tasks of the dataset's papers (``convbank bench``). A dataset's
        ``tasks`` module imports :mod:`convbank.bench`, so import it here, when asked.
        Default: none."""
        return ()


def hook_names() -> frozenset[str]:
    """The names of every hook and attribute of :class:`Presentation` (what a dataset class
    must not define itself: it would be silently ignored, its presentation is asked)."""
    return frozenset(n for n in vars(Presentation) if not n.startswith("_") and n != "dataset")
