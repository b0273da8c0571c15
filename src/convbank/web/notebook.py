"""A conversation as HTML for Jupyter (``Conversation._repr_html_``): the viewer's layout
(participants and personas, metadata, turns with their labels, spans and deals), every piece
of dataset text escaped, with a stylesheet scoped to its own element and no scripts.

>>> html = conversation_html(convbank.load("casino")["938"])
"""

from __future__ import annotations

import jinja2

from convbank import catalog
from convbank.model import Conversation
from convbank.web.data import constant_turn_meta, show_value, turn_views

__all__ = ["conversation_html"]

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("convbank.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
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
