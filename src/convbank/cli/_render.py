"""Terminal rendering of one conversation (``convbank show``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from convbank import catalog
from convbank._wording import counted
from convbank.cli._console import visible
from convbank.datasets import Context
from convbank.model import Annotation, Conversation, Turn

_SPAN_STYLES = ("bold yellow", "bold cyan", "bold magenta", "bold green")
LONG = 20_000
"""Characters of a turn's text past which it is written as it is shown, unstyled, the terminal
wrapping it: rich takes seconds a megabyte to wrap or split it (before: ``show`` of a 2 MB
turn of short lines ran 115 s, an 8 MB one-line turn at 100 columns 98 s)."""


def _flatten(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(data, dict):
        items: list[tuple[str, str]] = []
        for k, v in data.items():
            items += _flatten(v, f"{prefix}{k}.")
        return [(k.rstrip("."), v) for k, v in items]
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        return [(prefix, counted(len(data), "item"))]
    return [(prefix, ", ".join(map(str, data)) if isinstance(data, list) else str(data))]


def _kv_table(data: dict[str, Any]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim")
    table.add_column()
    for key, value in _flatten(data):
        table.add_row(Text(visible(key)), Text(visible(value)))
    return table


def _turn_text(turn: Turn, annotations: list[Annotation]) -> Text:
    shown = visible(turn.text)
    at = list(range(len(turn.text) + 1))  # where each character of the text lands in ``shown``
    if shown != turn.text:
        at, n = [], 0
        for ch in turn.text:
            at.append(n)
            n += len(visible(ch))
        at.append(n)
    text = Text(shown)
    spans = [(a.start_char, a.end_char) for a in annotations if a.start_char is not None]
    size = len(turn.text)
    for n, (start, end) in enumerate(spans):
        first, last = min(max(start or 0, 0), size), min(max(size if end is None else end, 0), size)
        text.stylize(_SPAN_STYLES[n % len(_SPAN_STYLES)], at[first], at[last])
    return text


def render_conversation(console: Console, conv: Conversation, context: Context | None = None) -> None:
    """Print a conversation: header, participants with persona and private context, turns
    with annotations inline (spans highlighted) and what the dataset adds to them
    (:meth:`Presentation.terminal_turn`: actions, notes, lines such as the text of the facts used,
    from ``context``), and the conversation's metadata."""
    ds = catalog.get(conv.dataset)
    context = context or {}
    console.print(
        Text(
            visible(f"{conv.dataset}/{conv.config}/{conv.split} · conversation {conv.conversation_id}"),
            style="bold",
        ),
        soft_wrap=True,  # the id, for copying: never wrapped
    )
    for p in conv.participants:
        parts: list[Any] = []
        if p.persona:
            parts.append(Text("persona:", style="dim"))
            parts.extend(Text(visible(f"  • {s}")) for s in p.persona)
        if p.meta:
            parts.append(_kv_table(p.meta))
        console.print(
            Panel(
                Group(*parts) if parts else Text("-"),
                title=Text(visible(f"{p.participant_id} ({p.role})")),
                expand=False,
            )
        )
    for turn in conv.turns:
        anns = conv.annotations_of(turn.turn_index)
        shown = ds.presentation.terminal_turn(turn, context)
        head = Text(visible(f"{turn.turn_index:>3} {turn.participant_id}: "), style="bold blue")
        long = shown.action is None and len(turn.text) > LONG
        if shown.action is not None:
            body = Text(visible(shown.action), style="bold")
        else:
            body = Text() if long else _turn_text(turn, anns)
        line = Text.assemble(head, body)
        labels = [
            f"{a.layer}:{a.label}" + (f"[{a.start_char}:{a.end_char}]" if a.start_char is not None else "")
            for a in anns
        ]
        if labels:
            line.append(visible("  " + " ".join(labels)), style="green")
        extra = {
            k: v
            for k, v in turn.meta.items()
            if k not in ds.presentation.terminal_hidden_meta and v is not None
        }
        if extra:
            line.append(visible("  " + ", ".join(f"{k}={v}" for k, v in extra.items())), style="dim")
        if shown.note:
            line.append(visible(f"  {shown.note}"), style="dim")
        if long:  # its head, its text as it is shown, then what follows it
            first, rest = line.divide([len(head)])
            console.print(first, end="", soft_wrap=True)
            console.file.write(visible(turn.text))
            console.print(rest, soft_wrap=True)
        else:
            console.print(line, soft_wrap=False)  # prose: wraps on a terminal
        for text in shown.lines:
            console.print(Text(visible(f"      {text}"), style="italic"), soft_wrap=False)
    if conv.meta:
        console.print(Panel(_kv_table(conv.meta), title="conversation", expand=False))
