"""A griffe extension for the API reference: the docstrings' doctest examples (``>>>``
lines, their continuations and output) become fenced ``pycon`` blocks, so Markdown does not
read ``x["a"][0]`` as a link, and the ``::`` before a literal block becomes ``:``."""

from __future__ import annotations

from typing import Any

import griffe


def fence(text: str) -> str:
    """The docstring with each run of doctest lines fenced."""
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(">>>") and not inside:
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
            inside = True
        elif inside and not stripped:
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence doctest examples in every docstring griffe loads."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:  # noqa: D102
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence(obj.docstring.value)
