"""ConvAI2 wild evaluation: human-bot dialogues rated by the humans (DeepPavlov, 2018), in
one package.

- :mod:`.dataset`: the raw types, card and files (one config per published file), reader,
  mapper (both ways) and source writer;
- :mod:`.present`: how exports, statistics and the viewer present it;
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: ``convai2-quality`` (``convbank bench``).
"""

from convbank.datasets.convai2.dataset import ConvAI2, Dialog
from convbank.datasets.convai2.records import BOT, HUMAN

__all__ = ["BOT", "HUMAN", "ConvAI2", "Dialog"]
