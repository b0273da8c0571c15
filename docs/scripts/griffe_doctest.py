"""A griffe extension for the API reference: the docstrings' doctest examples (``>>>``
lines, their continuations and output) become fenced ``pycon`` blocks, so Markdown does not
read ``x["a"][0]`` as a link; Sphinx roles (``:class:`~convbank.Corpus```) become code
(``Corpus``), as Markdown has no roles."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj):`(~?)([^`]+)`")


def role(match: re.Match[str]) -> str:
    """A Sphinx role as Markdown code: ``~a.b.C`` shows ``C``, ``a.b.C`` shows it whole."""
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


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

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(role, fence(obj.docstring.value))
