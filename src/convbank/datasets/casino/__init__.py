"""CaSiNo: campsite negotiation dialogues (Chawla et al., NAACL 2021), in one package.

- :mod:`.records`: the raw records as published, the deal moves, strategies and points;
- :mod:`.dataset`: the card and files, reader, mapper (both ways) and source writer;
- :mod:`.present`: how exports, statistics, the viewer and the terminal present it (its
  checks and tasks included);
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: ``casino-strategy`` (``convbank bench``).
"""

from convbank.datasets.casino.dataset import Casino
from convbank.datasets.casino.records import (
    ACTIONS,
    AGENTS,
    ITEMS,
    PRIORITY_POINTS,
    STRATEGIES,
    Deal,
    Dialogue,
    deal_of,
    points,
)

__all__ = [
    "ACTIONS",
    "AGENTS",
    "ITEMS",
    "PRIORITY_POINTS",
    "STRATEGIES",
    "Casino",
    "Deal",
    "Dialogue",
    "deal_of",
    "points",
]
