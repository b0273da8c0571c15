"""An export format defined outside convbank (a test plugin): ``tsv``, the turns of each part
as tab-separated values (``<dataset>_<config>_<split>.turns.tsv``: conversation id, turn
index, speaker, text; a tab, newline or backslash in text escaped as ``\\t``, ``\\n``,
``\\\\``). Registered by the entry point ``tsv = convbank_tsvturns:FORMAT`` of the group
``convbank.formats`` in its ``*.dist-info``, beside this package on ``sys.path``."""

from __future__ import annotations

from pathlib import Path

from convbank.export import Format, Selection, part_name, per_part

SUFFIX = ".turns.tsv"
HEADER = "conversation_id\tturn_index\tparticipant_id\ttext\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def write_tsv(selection: Selection, directory: Path) -> list[Path]:
    """One file per part: a header, then a line per turn."""
    written = []
    for config, split in selection.parts():
        path = directory / part_name(selection.dataset, config, split, SUFFIX)
        with path.open("w", encoding="utf-8", newline="\n") as f:
            f.write(HEADER)
            for conv in selection.conversations(config, split):
                for t in conv.turns:
                    f.write(
                        f"{conv.conversation_id}\t{t.turn_index}\t{t.participant_id}\t{_escape(t.text)}\n"
                    )
        written.append(path)
    return written


FORMAT = Format(
    name="tsv",
    summary="the turns as tab-separated values",
    writes="the turns (`<dataset>_<config>_<split>.turns.tsv`)",
    read_with="`cut`, `awk`, spreadsheets",
    writer=write_tsv,
    plan=per_part(SUFFIX),
)
