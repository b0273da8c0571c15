"""Conversations and corpora as HTML for Jupyter (``Conversation._repr_html_``,
``Corpus._repr_html_``): a conversation in the viewer's layout (participants and personas,
metadata, turns with their labels, spans and deals); a corpus as its dataset, parts and
sizes, annotation layers with their counts and its first conversations. Every piece of
dataset text escaped, a stylesheet scoped to its own element, no scripts.

>>> html = conversation_html(convbank.load("casino")["938"])
>>> html = corpus_html(convbank.load("casino"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jinja2

from convbank import catalog
from convbank._textio import bidi_closed
from convbank.model import Conversation, Part
from convbank.web.data import constant_turn_meta, show_value, turn_views

if TYPE_CHECKING:
    from convbank.query import Corpus

__all__ = ["FIRST", "conversation_html", "corpus_html"]

FIRST = 5
"""Conversations a corpus's view shows (each read by itself: one batch, not the corpus)."""
TEXT = 160
"""Characters of a first turn's text shown."""

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("convbank.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=bidi_closed,  # a value's bidi controls end with it
)
_env.filters["show"] = show_value

_STYLE = """
.convbank-conv {
  --fg: #1d2330;
  --muted: #5b6473;
  --line: #d8dde5;
  --alt: #f5f7fa;
  --accent: #2f5f9e;
  --left: #eef3fb;
  --right: #f6f1e8;
  --mark: #ffe58a;
  color: var(--fg);
  font: 14px/1.45 system-ui, sans-serif;
}
.convbank-conv h2 {
  font-size: 1.05rem;
  margin: 1rem 0 .4rem;
  border-bottom: 1px solid var(--line);
}
.convbank-conv h3 { margin: .2rem 0; font-size: .95rem; }
.convbank-conv .muted { color: var(--muted); }
.convbank-conv table { border-collapse: collapse; width: auto; }
.convbank-conv th, .convbank-conv td {
  text-align: left;
  padding: .2rem .5rem;
  border-bottom: 1px solid var(--line);
}
.convbank-conv .people {
  display: grid;
  grid-template-columns: repeat(auto-fit, minmax(280px, 1fr));
  gap: .8rem;
}
.convbank-conv .person { border: 1px solid var(--line); border-radius: 8px; padding: .5rem .8rem; }
.convbank-conv .person.left { background: var(--left); }
.convbank-conv .person.right { background: var(--right); }
.convbank-conv ol.chat { list-style: none; padding: 0; }
.convbank-conv ol.chat li {
  max-width: 78%;
  margin: .4rem 0;
  padding: .4rem .7rem;
  border-radius: 10px;
  border: 1px solid var(--line);
}
.convbank-conv ol.chat li.left { background: var(--left); margin-right: auto; }
.convbank-conv ol.chat li.right { background: var(--right); margin-left: auto; }
.convbank-conv .who { font-size: 12px; color: var(--muted); }
.convbank-conv .text { white-space: pre-wrap; overflow-wrap: anywhere; }
.convbank-conv mark { background: var(--mark); border-bottom: 2px solid #c99a00; padding: 0 1px; }
.convbank-conv .tag {
  display: inline-block;
  font-size: 12px;
  border-radius: 10px;
  padding: 0 .5rem;
  margin: .15rem .2rem 0 0;
  background: #dfe7f3;
}
.convbank-conv .tag.act { background: #e3f1e1; }
.convbank-conv .tag.liked { background: #fde2e4; }
.convbank-conv .tag.span { background: var(--mark); }
.convbank-conv .deal {
  border: 2px solid var(--accent);
  border-radius: 8px;
  padding: .3rem .6rem;
  background: #fff;
}
.convbank-conv .notes { font-size: 13px; margin: .3rem 0 0; padding-left: 1.2rem; }
.convbank-conv .notes .strong { font-weight: 600; }
"""


def conversation_html(conversation: Conversation) -> str:
    """One conversation as a self-contained HTML fragment in the viewer's layout: a scoped
    ``<style>`` and the escaped content, no scripts (what Jupyter shows for a
    :class:`~convbank.Conversation`). The last line needs IPython, a notebook's, which
    convbank does not install.

    >>> html = conversation_html(convbank.load("casino")["938"])
    >>> "Hello!, how are you doing?" in html
    True
    >>> from IPython.display import HTML; HTML(html)  # shown in a notebook  # doctest: +SKIP
    """
    conv = conversation
    ds = catalog.get(conv.dataset)
    body = _env.get_template("_conversation.html").render(
        ds=ds, conv=conv, turns=turn_views(conv, {}), every_turn=constant_turn_meta(conv)
    )
    title = _env.from_string(
        '<p class="muted">{{ d }} / {{ c }} / {{ s }} · conversation <b>{{ i }}</b> · {{ n }} turns</p>'
    ).render(d=conv.dataset, c=conv.config, s=conv.split, i=conv.conversation_id, n=conv.num_turns)
    return f'<div class="convbank-conv"><style>{_STYLE}</style>{title}{body}</div>'


_CORPUS = _env.from_string(
    """<div class="convbank-conv convbank-corpus"><style>{{ style }}</style>
<p><b>{{ title }}</b> <span class="muted">({{ name }}{{ where }})</span> ·
{{ "{:,}".format(size) }} conversations{{ chosen }}</p>
{% if parts %}<table><tr><th>config</th><th>split</th><th>conversations</th></tr>
{% for config, split, n in parts %}
<tr><td>{{ config }}</td><td>{{ split }}</td><td>{{ "{:,}".format(n) }}</td></tr>
{% endfor %}</table>{% endif %}
<h3>labels</h3>
{% if layers %}<table><tr><th>layer</th><th>annotations</th><th>labels</th></tr>
{% for layer, n, labels in layers %}
<tr><td>{{ layer }}</td><td>{{ "{:,}".format(n) }}</td><td>{{ labels }}</td></tr>
{% endfor %}</table>{% else %}<p class="muted">no annotations</p>{% endif %}
{% if first %}<h3>first {{ first|length }} conversations</h3>
<table><tr><th>conversation</th><th>part</th><th>turns</th><th>first turn</th></tr>
{% for c in first %}<tr><td>{{ c.conversation_id }}</td><td>{{ c.config }}/{{ c.split }}</td>
<td>{{ c.num_turns }}</td><td class="text">{{ opening(c) }}</td></tr>
{% endfor %}</table>{% else %}<p class="muted">no conversations</p>{% endif %}</div>"""
)


def corpus_html(corpus: Corpus, first: int = FIRST) -> str:
    """A corpus as a self-contained HTML fragment (what Jupyter shows for a
    :class:`~convbank.Corpus`): its dataset, each part with its conversations, the annotation
    layers with their counts and numbers of labels, and its ``first`` conversations (id,
    part, turns, the first turn's text), every piece of text escaped. It reads the layer
    and label columns of the annotations (of the selected conversations, for a selection)
    and the batches of the first conversations, nothing else.

    >>> html = corpus_html(convbank.load("casino", split="train"))
    >>> "strategy" in html and "938" in html
    True
    """
    ds = corpus.dataset
    shown = [corpus[i] for i in range(min(first, len(corpus)))]
    parts = corpus.parts()
    selection = not parts or any(corpus.part_positions(p) is not None for p in parts)  # none: chosen
    return _CORPUS.render(
        style=_STYLE,
        title=ds.title,
        name=ds.name,
        where="".join(f" / {x}" for x in (corpus.config, corpus.split) if x),
        size=len(corpus),
        chosen=" (a selection)" if selection else "",
        parts=[(p.config, p.split, _part_size(corpus, p)) for p in parts],
        layers=_layers(corpus, parts, selection),
        first=shown,
        opening=_opening,
    )


def _part_size(corpus: Corpus, part: Part) -> int:
    positions = corpus.part_positions(part)
    return corpus.stored_count(part.config, part.split) if positions is None else len(positions)


def _opening(conversation: Conversation) -> str:
    if not conversation.turns:
        return ""
    text = conversation.turns[0].text
    return text if len(text) <= TEXT else text[: TEXT - 1] + "…"


def _layers(corpus: Corpus, parts: list[Part], selection: bool) -> list[tuple[str, int, int]]:
    """Per annotation layer of the corpus: its annotations and distinct labels (the layer
    and label columns read, and the conversation ids of a selection)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    snapshot, name = corpus.snapshot, corpus.dataset.name
    columns = ["conversation_id", "layer", "label"] if selection else ["layer", "label"]
    tables = [
        snapshot.read_table(ref, columns=columns)
        for part in parts
        for ref in snapshot.pieces("annotations", name, part.config, part.split)
    ]
    if not tables:
        return []
    table = pa.concat_tables(tables)
    if selection:
        chosen = pa.array(corpus.conversation_ids())
        table = table.filter(pc.is_in(table["conversation_id"], value_set=chosen))
    counted = table.group_by("layer").aggregate([("label", "count"), ("label", "count_distinct")])
    names = ("layer", "label_count", "label_count_distinct")
    return sorted(zip(*(counted[c].to_pylist() for c in names), strict=True))
