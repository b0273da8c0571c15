"""ConvAI2 wild evaluation: human-bot dialogues rated by the humans (DeepPavlov, 2018), in
one package.

- :mod:`.records`: the raw records as published and the participants' names;
- :mod:`.dataset`: the card and files (one config per published file), reader, mapper (both
  ways) and source writer;
- :mod:`.present`: how exports, statistics and the viewer present it (its checks and tasks
  included);
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: ``convai2-quality`` (``convbank bench``).
"""

from convbank.datasets.convai2.dataset import ConvAI2
from convbank.datasets.convai2.records import BOT, HUMAN, Dialog

__all__ = ["BOT", "HUMAN", "ConvAI2", "Dialog"]
