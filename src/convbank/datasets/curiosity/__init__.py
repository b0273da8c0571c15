"""Curiosity: information-seeking dialogues about geography, grounded in Wikipedia facts
(Rodriguez et al., EMNLP 2020), in one package.

- :mod:`.records`: the raw records as published, dialog acts, fact sources, ratings;
- :mod:`.dataset`: the card and files, reader, mapper (both ways), source writer, and the
  fact database (``wiki_sql.sqlite.db``) as the side table ``curiosity_facts``;
- :mod:`.present`: how exports, statistics, the viewer and the terminal present it (facts
  with their text; its checks and tasks included);
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: the four tasks of the paper's Table 4 (``convbank bench``).
"""

from convbank.datasets.curiosity.dataset import Curiosity
from convbank.datasets.curiosity.records import (
    DIALOG_ACTS,
    FACT_DB,
    FACT_SOURCES,
    FACTS_TABLE,
    RATINGS,
    Dialog,
    fact_texts,
)

__all__ = [
    "DIALOG_ACTS",
    "FACTS_TABLE",
    "FACT_DB",
    "FACT_SOURCES",
    "RATINGS",
    "Curiosity",
    "Dialog",
    "fact_texts",
]
