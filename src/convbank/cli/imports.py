"""``convbank import`` and ``convbank remove``: your own conversations in the bank."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

__all__ = ["import_", "remove"]


def _mapping(values: Sequence[str]) -> dict[str, str]:
    """Each ``--map`` given (``conversation_id=dialog,speaker=who``, ``text=utterance``) as one
    mapping; a name given two columns is refused, never the first dropped.

    >>> _mapping(["conversation_id=dialog,speaker=who", "text=utterance"])
    {'conversation_id': 'dialog', 'speaker': 'who', 'text': 'utterance'}
    """
    out: dict[str, str] = {}
    for pair in (p for value in values for p in value.split(",")):
        key, eq, column = (part.strip() for part in pair.partition("="))
        if not eq or not key or not column:
            raise click.BadParameter(f"expected NAME=COLUMN pairs separated by commas, not {pair!r}")
        if out.get(key, column) != column:
            raise click.BadParameter(f"{key} is given two columns, {out[key]!r} and {column!r}; give it one")
        out[key] = column
    return out


@click.command("import")
@click.argument("paths", nargs=-1, required=True)
@click.option("--name", required=True, help="The dataset's name in the bank (lower case, digits, _).")
@click.option(
    "--format",
    "format_",
    default=None,
    help="The files' format (default: detected from their content). Read: chat, sharegpt, convokit, "
    "parlai, hf, table, jsonl, parquet, and installed formats' readers.",
)
@click.option(
    "--config", default=None, help="Put every conversation in this config (default: its own, else default)."
)
@click.option(
    "--split", default=None, help="Put every conversation in this split (default: its own, else train)."
)
@click.option(
    "--map",
    "mapping",
    multiple=True,
    help="table: the columns, as conversation_id=COL,speaker=COL,text=COL[,turn=COL][,timestamp=COL] "
    "(or one pair per --map).",
)
@click.option(
    "--card",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A TOML card (title, description, license, citation, homepage; default: card.toml beside "
    "the first file).",
)
@click.option("--title", default=None, help="The card's title (over the card file's).")
@click.option("--license", "license_", default=None, help="The card's licence.")
@click.option("--citation", default=None, help="The card's citation (BibTeX).")
@click.option("--homepage", default=None, help="The card's homepage.")
@click.option("--description", default=None, help="The card's description.")
@click.option("--replace", is_flag=True, help="Replace a dataset imported under this name before.")
@click.option(
    "--skip-bad",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Import the good records; write each rejected one, with its reason, to this JSONL file.",
)
def import_(
    paths: Sequence[str],
    name: str,
    format_: str | None,
    config: str | None,
    split: str | None,
    mapping: Sequence[str],
    card: Path | None,
    title: str | None,
    license_: str | None,
    citation: str | None,
    homepage: str | None,
    description: str | None,
    replace: bool,
    skip_bad: Path | None,
) -> None:
    """Import your own conversations into the bank as dataset NAME: then list, show, query,
    validate, export, serve and load it like the catalogued ones.

    PATHS are files or folders (a ConvoKit corpus, a save_to_disk folder); SPLIT=PATH puts a
    file in that split. The format is detected from the content unless --format names it, and
    said. A record that is not of the format stops the import with one line naming the file and
    where (exit 2), and the bank is left as it was, unless --skip-bad.

    Examples:

      convbank import chats.jsonl --name my_chats

      convbank import train=train.jsonl test=test.jsonl --name study --license CC-BY-4.0

      convbank import calls.csv --name calls --map conversation_id=call,speaker=agent,text=said
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from convbank.cli._console import err, out
    from convbank.imports import check_rejects, import_conversations, parse_inputs, read_card

    inputs = parse_inputs(paths)
    if skip_bad is not None:  # before the card is read: the rejects file must not replace it
        check_rejects(skip_bad, inputs, card=card, name=name)
    fields = {"title": title, "license": license_, "citation": citation, "homepage": homepage}
    fields["description"] = description
    given = {k: v for k, v in fields.items() if v is not None}
    card_fields = {**read_card(card, inputs[0][0]), **given}
    sources: dict[str, list[Path]] = {}
    plain = [p for p, s in inputs if s is None]
    for p, s in inputs:
        if s is not None:
            sources.setdefault(s, []).append(p)
    if plain and sources:
        raise click.UsageError("give every path a split (SPLIT=PATH), or none")
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,} conversations"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(f"importing {name}", total=None)
        report = import_conversations(
            sources or plain,
            name=name,
            format=format_,
            config=config,
            split=split,
            mapping=_mapping(mapping),
            card=card_fields,
            replace=replace,
            skip_bad=skip_bad,
            progress=lambda n: bar.advance(task, n),
        )
    for line in report.summary():
        out.print(line)


@click.command()
@click.argument("name")
def remove(name: str) -> None:
    """Take an imported dataset out of the bank (catalogued datasets are never removed).

    Example: convbank remove my_chats
    """
    from convbank.cli._console import out
    from convbank.imports import remove as remove_dataset

    remove_dataset(name)
    out.print(f"removed {name}")
