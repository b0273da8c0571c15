"""The example views of a corpus (:meth:`convbank.Corpus.examples`): its conversations seen
as training examples, one kind a class.

- ``turns``: one example per turn (speaker, role, kind, a layer's labels);
- ``responses``: the previous ``history`` turns and the system prompt of the responder ->
  a response, from one side, another or both (ParlAI's dialogue teachers);
- ``chat``: a conversation's messages from one side, or from both (two examples);
- ``conversations``: whole conversations with their outcomes as targets.

A view is a plan (which conversation, which turn or side: NumPy arrays made once, from the
bank's Arrow columns where they suffice) and the code that makes an example from a
conversation; the conversations of a batch of examples are fetched together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow.compute as pc

from convbank._arguments import a_flag
from convbank.corpus._plans import chat_sides, numpy_mask, plan_of, speaker_keys, stored, strings, turn_keys
from convbank.errors import UnknownFieldError, did_you_mean
from convbank.examples import Examples
from convbank.examples._rows import Example
from convbank.model import Conversation
from convbank.model.schema import paused_gc

if TYPE_CHECKING:
    import pyarrow as pa


__all__ = ["VIEWS", "CorpusExamples", "view_of"]

IGNORE_INDEX = -100
"""The target of an example without a label (``target="class"``): ignored by PyTorch losses."""


class CorpusExamples(Examples):
    """The examples of a corpus of one kind (see the module doc); made by
    :meth:`convbank.Corpus.examples`."""

    kind: ClassVar[str]
    options: ClassVar[tuple[str, ...]]

    def __init__(self, corpus: Any, **options: Any) -> None:
        self.corpus = corpus
        self.settings = options
        self._plan: tuple[np.ndarray, np.ndarray] | None = None
        self._check()

    # ------------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """``dataset/kind``, with the config and split the corpus was loaded with between
        (``casino/train/turns``, ``convai2/volunteers/chat``): what a mixture calls examples
        from this view."""
        where = [w for w in (self.corpus.config, self.corpus.split) if w]
        return "/".join([self.corpus.dataset.name, *where, self.kind])

    def _key(self) -> tuple[Any, ...]:
        return ("corpus", self.kind, self.corpus._identity(), tuple(sorted(self.settings.items(), key=str)))

    def _describe(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.settings.items() if v is not None)
        return f"{self.corpus.dataset.name} {self.kind}" + (f" ({given})" if given else "")

    def cache_home(self) -> Any:
        bank = self.corpus.bank
        folder = bank.root.with_name(bank.root.name + "-cache") / "map" / self.corpus.dataset.name
        return folder, self.corpus.snapshot.generation

    def live_generations(self) -> list[str]:
        """The generations of the bank a reader may still hold (their map cache is kept)."""
        root = self.corpus.bank.root
        return [p.stem for p in (root / ".generations").glob("*.json")] + [
            str(self.corpus.bank.manifest().generation)
        ]

    # ------------------------------------------------------------------ plan
    def _check(self) -> None:
        """Check the options against the dataset (an unknown name is an error naming the
        known ones)."""

    def plan(self) -> tuple[np.ndarray, np.ndarray]:
        """Per example: its conversation's position in the corpus and its turn index (or the
        index of the side it is seen from)."""
        if self._plan is None:
            with paused_gc():  # many small objects, none cyclic: the collector would rescan them
                self._plan = self._make_plan()
        return self._plan

    def _make_plan(self) -> tuple[np.ndarray, np.ndarray]:
        """Per conversation of the corpus, what it gives (turn indices or sides), in order."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.plan()[0])

    def _shape_rows(self, most: int = 64) -> list[Example]:
        """Examples that show this view's keys and types: its first ``most``; a view that has
        none (of an empty selection, or of conversations that give none) shows those the same
        view makes of the stored conversations it was selected from (its first 64, else all),
        so its columns are the view's whatever it holds."""
        if len(self):
            return super()._shape_rows(most)
        stored = len(self.corpus._source)
        for count in dict.fromkeys((min(stored, 64), stored)):
            whole = type(self)(self.corpus._derive(np.arange(count, dtype=np.int64)), **self.settings)
            if len(whole):
                return whole._shape_rows(most)
        return []

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        convs, extra = self.plan()
        wanted = convs[indices]
        source = self.corpus._source
        fetched = {}
        for slot, position in zip(wanted.tolist(), self.corpus._positions()[wanted].tolist(), strict=True):
            if slot not in fetched:  # built from the stored batch's decoded columns, decoded once
                batch, row = source.locate(position)
                fetched[slot] = source.group(batch).prepared_tables(source).build(row)
        context: dict[int, Any] = {}
        out = []
        for c, x in zip(wanted.tolist(), extra[indices].tolist(), strict=True):
            conv = fetched[c]
            out.append(self._example(conv, x, context, c))
        return out

    def _example(self, conv: Conversation, extra: int, context: dict[int, Any], slot: int) -> Example:
        raise NotImplementedError

    def _context(self, conv: Conversation, cache: dict[int, Any], slot: int) -> Any:
        """What the dataset's side tables say about a conversation (read once per batch)."""
        if not self.corpus.dataset.side_tables:
            return {}
        if slot not in cache:
            cache[slot] = self.corpus.context(conv)
        return cache[slot]

    # ------------------------------------------------------------------ helpers
    def _base(self, conv: Conversation) -> Example:
        return {
            "dataset": conv.dataset,
            "config": conv.config,
            "split": conv.split,
            "conversation_id": conv.conversation_id,
        }

    def _side_rows(self) -> tuple[pa.Table, np.ndarray]:
        """The selected conversations' ``participants`` rows (with ``_position``) and which of
        them the ``side`` option chooses (``None``: the dataset's chat side, as the chat export
        sees a conversation; ``"both"``: everyone; ``"other"``: everyone but the chat side;
        else a participant id)."""
        people = stored(self.corpus, "participants", ["participant_id", "role"])
        side = self.settings.get("side")
        if side == "both":
            return people, np.ones(people.num_rows, dtype=bool)
        ids = people.column("participant_id")
        if side not in (None, "other"):
            return people, numpy_mask(pc.equal(ids, side))
        mine = chat_sides(self.corpus.dataset, people)
        return people, mine if side is None else ~mine

    def _check_side(self) -> None:
        side = self.settings.get("side")
        if side in (None, "both", "other"):
            return
        known = self.corpus._participant_ids()
        if side not in known:
            raise UnknownFieldError(
                f"{self.corpus.dataset.name} has no participant {side!r} (side=); "
                + did_you_mean(side, known, n=1)
                + f"sides: None (the dataset's, as the chat export), 'both', 'other', {', '.join(known[:12])}"
                + (" ..." if len(known) > 12 else ""),
                name=side,
                known=known,
            )


# ---------------------------------------------------------------------- turns
class TurnExamples(CorpusExamples):
    """One example per turn: ``dataset``, ``config``, ``split``, ``conversation_id``,
    ``turn_index``, ``participant_id``, ``role``, ``text``, ``kind`` and ``labels``. With
    ``layer``, ``labels`` are that layer's label names (else every ``"layer:label"``) and
    ``annotated=True`` keeps the turns with at least one; ``target="multi_hot"`` makes
    ``labels`` a 0/1 vector over :meth:`label_names` and ``target="class"`` the id of the
    turn's one label (-100 for none; a turn with two is an error), with the names in
    ``label_text``. ``speaker``, ``role`` and ``kind`` keep the turns they name.
    """

    kind = "turns"
    options = ("layer", "annotated", "target", "speaker", "role", "kind")

    def _check(self) -> None:
        s = self.settings
        layer, target = s.get("layer"), s.get("target")
        if s.get("annotated") is not None:
            s["annotated"] = a_flag(s["annotated"], "annotated")
        if target not in (None, "multi_hot", "class"):
            raise ValueError(f"target is 'multi_hot', 'class' or None, not {target!r}")
        if (target or s.get("annotated")) and layer is None:
            raise ValueError("target= and annotated=True need a layer= (the labels they use)")
        if layer is not None:
            self.corpus._check_layer(layer)
        if s.get("kind") not in (None, "message", "action"):
            raise ValueError(f"kind is 'message', 'action' or None, not {s.get('kind')!r}")
        for option, column, what in (("speaker", "participant_id", "participant"), ("role", "role", "role")):
            if s.get(option) is not None:
                self._check_known(option, column, what)
        self._names = self.corpus.label_names(layer) if layer is not None else []

    def _check_known(self, option: str, column: str, what: str) -> None:
        """A ``speaker=`` or ``role=`` (a name or a list of names) names what the corpus's
        parts hold: a name none has is an error naming the known ones, never an empty view."""
        given = self.settings[option]
        known = self.corpus._participant_values(column)
        for name in list(given) if isinstance(given, (list, tuple, set, frozenset)) else [given]:
            if name not in known:
                raise UnknownFieldError(
                    f"{self.corpus.dataset.name} has no {what} {name!r} ({option}=); "
                    + did_you_mean(str(name), known, n=1)
                    + f"{what}s: {', '.join(known[:12])}"
                    + (" ..." if len(known) > 12 else ""),
                    name=str(name),
                    known=known,
                )

    def label_names(self) -> list[str]:
        """The chosen layer's labels; a label's id is its position (stable: the whole
        dataset's labels in the bank, sorted). A view without ``layer=`` has no ids (its
        labels are every layer's ``layer:label``): a ``ValueError`` says so, as
        :meth:`class_weights` does."""
        if self.settings.get("layer") is None:
            raise ValueError(
                "class_weights() and label_names() need a view of one layer's labels "
                "(examples('turns', layer=...)); this turns view has every layer's 'layer:label'"
            )
        return list(self._names)

    def _make_plan(self) -> tuple[np.ndarray, np.ndarray]:
        s = self.settings
        turns = stored(self.corpus, "turns", ["turn_index", "participant_id", "kind"])
        keep = np.ones(turns.num_rows, dtype=bool)
        if s.get("speaker") is not None:
            keep &= numpy_mask(pc.is_in(turns.column("participant_id"), value_set=strings(s["speaker"])))
        if s.get("kind") is not None:
            keep &= numpy_mask(pc.equal(turns.column("kind"), s["kind"]))
        if s.get("role") is not None:
            people = stored(self.corpus, "participants", ["participant_id", "role"])
            people = people.filter(pc.is_in(people.column("role"), value_set=strings(s["role"])))
            keep &= numpy_mask(pc.is_in(speaker_keys(turns), value_set=speaker_keys(people)))
        if s.get("annotated"):
            anns = stored(self.corpus, "annotations", ["turn_index", "layer"])
            anns = anns.filter(pc.equal(anns.column("layer"), s["layer"]))
            keep &= np.isin(turn_keys(turns), turn_keys(anns))
        return plan_of(self.corpus, turns, keep, turns.column("turn_index"))

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        """The turns straight from the stored batches' decoded columns (no conversation is
        built: a turn costs a few list lookups, in any order)."""
        convs, extra = self.plan()
        source = self.corpus._source
        positions = self.corpus._positions()[convs[indices]]
        layer, target = self.settings.get("layer"), self.settings.get("target")
        out = []
        for position, k in zip(positions.tolist(), extra[indices].tolist(), strict=True):
            batch, row = source.locate(position)
            where, said, role, marks = source.group(batch).prepared_tables(source).turn(row, k)
            names = [
                label if layer is not None else f"{ly}:{label}" for ly, label in marks if layer in (None, ly)
            ]
            example = {
                "dataset": where[0],
                "config": where[1],
                "split": where[2],
                "conversation_id": where[3],
                "turn_index": said[0],
                "participant_id": said[1],
                "role": role,
                "text": said[2],
                "kind": said[3],
                "labels": names,
            }
            if target is not None:
                example["labels"] = self._target(names, where[3], k)
                example["label_text"] = names
            out.append(example)
        return out

    def _target(self, names: list[str], conversation_id: str, turn_index: int) -> Any:
        """A turn's label names as the chosen target: a multi-hot vector or a class id."""
        ids = sorted({self._names.index(n) for n in names})
        if self.settings["target"] == "multi_hot":
            vector = [0.0] * len(self._names)
            for i in ids:
                vector[i] = 1.0
            return vector
        if len(ids) > 1:
            raise ValueError(
                f"{self.corpus.dataset.name} conversation {conversation_id} turn {turn_index} has "
                f"{len(ids)} {self.settings['layer']} labels ({', '.join(sorted(set(names)))}); "
                "target='class' needs at most one a turn: use target='multi_hot'"
            )
        return ids[0] if ids else IGNORE_INDEX


# ---------------------------------------------------------------------- responses
class ResponseExamples(CorpusExamples):
    """Context -> response pairs: one per turn of the chosen side (``side=None``: the
    dataset's, as the chat export sees it; ``"other"``: everyone else; ``"both"``: every
    participant; or a participant id), with ``history`` previous turns (None: all of them),
    as ParlAI's teachers with ``history_size``. An example holds ``turn_index``,
    ``participant_id`` and ``role`` of the response, ``persona`` (the responder's),
    ``system`` (what the responder knew: ConvAI2 and PEC personas, CaSiNo priorities and
    reasons), ``context`` and ``context_speakers`` (the history's texts and speakers),
    ``response``, and ``messages`` (system, history as ``user``/``assistant``, response as
    ``assistant``) for chat templates. ``kind="message"`` leaves out actions (CaSiNo's deals).
    """

    kind = "responses"
    options = ("history", "side", "kind")

    def _check(self) -> None:
        history = self.settings.get("history")
        whole = isinstance(history, (int, np.integer)) and not isinstance(history, bool)
        if history is not None and (not whole or history < 0):
            raise ValueError(
                f"history is a number of previous turns (0 or more) or None (all), not {history!r}"
            )
        if history is not None:
            self.settings["history"] = int(history)  # NumPy's int as its value
        if self.settings.get("kind") not in (None, "message", "action"):
            raise ValueError(f"kind is 'message', 'action' or None, not {self.settings.get('kind')!r}")
        self._check_side()

    def _make_plan(self) -> tuple[np.ndarray, np.ndarray]:
        people, chosen = self._side_rows()
        turns = stored(self.corpus, "turns", ["turn_index", "participant_id", "kind"])
        keep = numpy_mask(pc.is_in(speaker_keys(turns), value_set=speaker_keys(people.filter(chosen))))
        if self.settings.get("kind") is not None:
            keep &= numpy_mask(pc.equal(turns.column("kind"), self.settings["kind"]))
        return plan_of(self.corpus, turns, keep, turns.column("turn_index"))

    def _example(self, conv: Conversation, extra: int, context: dict[int, Any], slot: int) -> Example:
        dataset = self.corpus.dataset
        response = conv.turns[extra]
        me = response.participant_id
        history = self.settings.get("history")
        first = 0 if history is None else max(0, extra - history)
        before = conv.turns[first:extra]
        system = dataset.presentation.chat_system(conv, me, self._context(conv, context, slot))
        said = [dataset.presentation.chat_content(t) for t in before]
        answer = dataset.presentation.chat_content(response)
        messages = [{"role": "system", "content": system}]
        messages += [
            {"role": "assistant" if t.participant_id == me else "user", "content": text}
            for t, text in zip(before, said, strict=True)
        ]
        messages.append({"role": "assistant", "content": answer})
        return {
            **self._base(conv),
            "turn_index": extra,
            "participant_id": me,
            "role": _role(conv, me),
            "persona": list(conv.participant(me).persona),
            "system": system,
            "context": said,
            "context_speakers": [t.participant_id for t in before],
            "response": answer,
            "messages": messages,
        }


# ---------------------------------------------------------------------- chat
class ChatExamples(CorpusExamples):
    """A conversation's messages seen from one side (``side=None``: the dataset's, as the
    chat export; ``"other"``, ``"both"``: one example per participant; or a participant id),
    as the ``chat`` export writes them: ``side``, ``role``, ``messages`` (the system message,
    then ``user`` and ``assistant`` turns) and ``outcome``."""

    kind = "chat"
    options = ("side",)

    def _check(self) -> None:
        self._check_side()

    def _make_plan(self) -> tuple[np.ndarray, np.ndarray]:
        people, chosen = self._side_rows()
        return plan_of(self.corpus, people, chosen, None)

    def _example(self, conv: Conversation, extra: int, context: dict[int, Any], slot: int) -> Example:
        dataset = self.corpus.dataset
        me = conv.participants[extra].participant_id
        return {
            **self._base(conv),
            "side": me,
            "role": conv.participants[extra].role,
            "messages": dataset.presentation.chat_messages(conv, me, self._context(conv, context, slot)),
            "outcome": dataset.presentation.chat_outcome(conv, me),
        }


# ---------------------------------------------------------------------- conversations
class ConversationExamples(CorpusExamples):
    """Whole conversations with their outcomes as targets: ``side``, ``role``, ``num_turns``,
    ``text`` (one ``speaker: text`` line a turn), ``turns`` (the texts), and each of the
    dataset's :attr:`~convbank.datasets.Presentation.target_names` (CaSiNo: the side's points,
    satisfaction and opponent likeness; ConvAI2: the human's rating and persona guess);
    ``target=`` names one of them to copy into ``labels``. ``side`` as in ``chat``."""

    kind = "conversations"
    options = ("side", "target")

    def _check(self) -> None:
        self._check_side()
        target = self.settings.get("target")
        known = list(self.corpus.dataset.presentation.target_names)
        if target is not None and target not in known:
            raise UnknownFieldError(
                f"{self.corpus.dataset.name} conversations have no target {target!r}; "
                + did_you_mean(target, known, n=1)
                + f"targets: {', '.join(known) or 'none'}",
                name=target,
                known=known,
            )

    def target_names(self) -> list[str]:
        """The outcome fields each example carries."""
        return list(self.corpus.dataset.presentation.target_names)

    _make_plan = ChatExamples._make_plan

    def _example(self, conv: Conversation, extra: int, context: dict[int, Any], slot: int) -> Example:
        me = conv.participants[extra].participant_id
        targets = self.corpus.dataset.presentation.targets(conv, me)
        row = {
            **self._base(conv),
            "side": me,
            "role": conv.participants[extra].role,
            "num_turns": conv.num_turns,
            "text": "\n".join(f"{t.participant_id}: {t.text}" for t in conv.turns),
            "turns": [t.text for t in conv.turns],
            **{name: targets.get(name) for name in self.corpus.dataset.presentation.target_names},
        }
        target = self.settings.get("target")
        if target is not None:
            row["labels"] = targets.get(target)
        return row


VIEWS: dict[str, type[CorpusExamples]] = {
    v.kind: v for v in (TurnExamples, ResponseExamples, ChatExamples, ConversationExamples)
}
"""The example views every dataset offers, by kind."""


def view_of(corpus: Any, kind: str, options: dict[str, Any]) -> CorpusExamples:
    """The view of ``kind`` over ``corpus`` (what :meth:`convbank.Corpus.examples` makes)."""
    offered = [k for k in corpus.dataset.presentation.example_views if k in VIEWS]
    view = VIEWS.get(kind) if kind in offered else None
    if view is None:
        raise UnknownFieldError(
            f"{corpus.dataset.name} has no example view {kind!r}; "
            + did_you_mean(kind, offered, n=1)
            + f"views: {', '.join(offered)}",
            name=kind,
            known=offered,
        )
    unknown = [k for k in options if k not in view.options]
    if unknown:
        raise TypeError(
            f"the {kind} view takes no option {unknown[0]!r}; "
            + did_you_mean(unknown[0], list(view.options), n=1)
            + f"its options: {', '.join(view.options)}"
        )
    return view(corpus, **options)


def _role(conv: Conversation, participant_id: str) -> str:
    for p in conv.participants:
        if p.participant_id == participant_id:
            return p.role
    return ""
