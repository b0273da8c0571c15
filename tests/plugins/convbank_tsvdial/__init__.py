"""tsvdial: a small restaurant-booking dialogue dataset published as tab-separated text, added
to convbank as a plugin. The sixth dataset of the test suite: it lives entirely in this
package (records, reader, mapper both ways, writer, one check, one task, its sample files)
and reaches convbank only through the ``convbank.datasets`` entry point of
``convbank_tsvdial-0.1.0.dist-info``.

The format, as published::

    dialogue<TAB>turn<TAB>speaker<TAB>text<TAB>intents
    r001<TAB>0<TAB>customer<TAB>Hi! Could I book a table for two tonight?<TAB>greet,request_booking

one header line, then one line per turn ending in ``\\n``; a dialogue's lines are consecutive
and numbered from 0; ``intents`` is a comma-separated list of labels, or empty.

It defines only what every dataset must (card, files, reader, mapper both ways, writer) and,
through its presentation (:class:`TsvDialPresentation`), the optional ``checks`` and
``tasks``; every other presentation hook is convbank's default.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank.datasets import (
    Check,
    ConfigSpec,
    Dataset,
    Int64,
    Part,
    Presentation,
    SourceFile,
    SourcePaths,
    Strict,
    no_records,
)
from convbank.errors import FormatError
from convbank.model import Annotation, Conversation, Participant, Turn

if TYPE_CHECKING:
    from convbank.tasks import Task

HEADER = ("dialogue", "turn", "speaker", "text", "intents")
LAYER = "intent"
SAMPLES = Path(__file__).parent / "samples"


class Row(Strict):
    """One line: a turn of a dialogue."""

    turn: Int64
    speaker: str
    text: str
    intents: str


class Dialogue(Strict):
    """The lines of one dialogue."""

    dialogue: str
    turns: list[Row]


def _file(split: str) -> str:
    return f"tsvdial_{split}.tsv"


def _problem(path: Path, line: int, what: str) -> FormatError:
    return FormatError(
        f"{path}: line {line}: {what}; not the tsvdial format as published — re-fetch the file"
    )


def parse(path: Path) -> Iterator[Dialogue]:
    """The dialogues of one file, in order; any deviation is a one-line error naming its line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: byte {exc.start} is not UTF-8; re-fetch the file") from exc
    if not text.endswith("\n"):
        raise _problem(path, text.count("\n") + 1, "the last line has no line end")
    lines = text[:-1].split("\n")
    if tuple(lines[0].split("\t")) != HEADER:
        raise _problem(path, 1, f"expected the header {' '.join(HEADER)}")
    current: Dialogue | None = None
    seen: set[str] = set()
    for number, line in enumerate(lines[1:], 2):
        fields = line.split("\t")
        if len(fields) != len(HEADER):
            raise _problem(path, number, f"{len(fields)} fields, expected {len(HEADER)}")
        dialogue, turn, speaker, utterance, intents = fields
        if not turn.isdigit():
            raise _problem(path, number, f"turn {turn!r} is not a number")
        if intents and not all(intents.split(",")):
            raise _problem(path, number, f"an empty intent in {intents!r}")
        if current is None or current.dialogue != dialogue:
            if dialogue in seen:
                raise _problem(path, number, f"dialogue {dialogue!r} resumes after another one")
            if current is not None:
                yield current
            current = Dialogue(dialogue=dialogue, turns=[])
            seen.add(dialogue)
        if int(turn) != len(current.turns):
            raise _problem(path, number, f"turn {turn} of {dialogue!r}, expected {len(current.turns)}")
        current.turns.append(Row(turn=int(turn), speaker=speaker, text=utterance, intents=intents))
    if current is None:
        raise no_records(path, "tsvdial")
    yield current


class TsvDialPresentation(Presentation):
    """tsvdial's own check and task; everything else as convbank presents any dataset."""

    def checks(self) -> Sequence[Check]:
        """The customer opens and the two sides alternate."""
        from convbank_tsvdial.checks import CHECKS

        return CHECKS

    def tasks(self) -> Sequence[Task]:
        """``tsvdial-intents``."""
        from convbank_tsvdial.tasks import Intents

        return (Intents(),)


class TsvDial(Dataset):
    """Restaurant-booking dialogues between customers and an agent, with turn intents."""

    name = "tsvdial"
    title = "tsvdial: Restaurant Booking Dialogues (test plugin)"
    description = (
        "Short dialogues in which customers book, cancel and ask about a restaurant, each turn "
        "labelled with its intents; published as tab-separated text."
    )
    license = "CC0-1.0"
    citation = """@misc{tsvdial2024,
  title = {tsvdial: Restaurant Booking Dialogues},
  author = {The convbank authors},
  year = {2024}
}"""
    homepage = "https://example.org/tsvdial"
    version = "0.1.0"
    files = (
        SourceFile(
            name=_file("train"),
            url="https://example.org/tsvdial/" + _file("train"),
            sha256="34b080e610bffb059748873a2875d960a673595c8bb0f64046970dc200dcb456",
            size=806,
        ),
        SourceFile(
            name=_file("test"),
            url="https://example.org/tsvdial/" + _file("test"),
            sha256="d062e9334409ae3ed45f5c01a7990668065b00c73f1f323549bf51f728d75ca9",
            size=481,
        ),
    )
    configs = (
        ConfigSpec(name="default", description="The published split.", splits={"train": 3, "test": 2}),
    )
    raw_type = Dialogue
    samples = SAMPLES
    presentation_class = TsvDialPresentation

    def files_for(self, part: Part) -> list[SourceFile]:
        """The split's ``tsvdial_{split}.tsv``."""
        self.parts(*part)
        return [self.file(_file(part.split))]

    def read(self, paths: SourcePaths, part: Part) -> Iterator[Dialogue]:
        """The dialogues of the split's file, in order."""
        yield from parse(paths[_file(part.split)])

    def conversation_id(self, record: Dialogue, part: Part, index: int) -> str:
        """The ``dialogue`` column."""
        return record.dialogue

    def to_conversation(self, record: Dialogue, part: Part, index: int) -> Conversation:
        """Speakers become participants (in order of first turn), lines turns, intents
        annotations of layer ``intent``."""
        speakers = list(dict.fromkeys(row.speaker for row in record.turns))
        return Conversation(
            dataset=self.name,
            config=part.config,
            split=part.split,
            conversation_id=record.dialogue,
            source_index=index,
            participants=[Participant(participant_id=s, role=s) for s in speakers],
            turns=[Turn(turn_index=r.turn, participant_id=r.speaker, text=r.text) for r in record.turns],
            annotations=[
                Annotation(turn_index=r.turn, layer=LAYER, label=label)
                for r in record.turns
                for label in filter(None, r.intents.split(","))
            ],
        )

    def from_conversation(self, conversation: Conversation) -> Dialogue:
        """The dialogue's lines back."""
        return Dialogue(
            dialogue=conversation.conversation_id,
            turns=[
                Row(
                    turn=t.turn_index,
                    speaker=t.participant_id,
                    text=t.text,
                    intents=",".join(a.label for a in conversation.annotations_of(t.turn_index, LAYER)),
                )
                for t in conversation.turns
            ],
        )

    def write_source(
        self,
        records: Iterable[Dialogue],
        part: Part,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """``tsvdial_{split}.tsv``: the header, then a line per turn."""
        path = directory / _file(part.split)
        with path.open("w", encoding="utf-8", newline="") as out:
            out.write("\t".join(HEADER) + "\n")
            for record in records:
                out.writelines(
                    f"{record.dialogue}\t{r.turn}\t{r.speaker}\t{r.text}\t{r.intents}\n" for r in record.turns
                )
        return [path]
