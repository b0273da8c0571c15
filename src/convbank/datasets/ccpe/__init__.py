"""CCPE-M: Coached Conversational Preference Elicitation about movies (Radlinski et al.,
2019), in one package.

- :mod:`.records`: the raw records as published and the vocabularies;
- :mod:`.dataset`: the card and file, reader, mapper (both ways) and source writer (CCPE-M's
  own JSON style);
- :mod:`.present`: how exports, statistics and the viewer present it (its checks and tasks
  included);
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: ``ccpe-preference-spans`` (``convbank bench``).
"""

from convbank.datasets.ccpe.dataset import Ccpe
from convbank.datasets.ccpe.records import ANNOTATION_TYPES, ENTITY_TYPES, SPEAKERS, CcpeConversation

__all__ = ["ANNOTATION_TYPES", "ENTITY_TYPES", "SPEAKERS", "Ccpe", "CcpeConversation"]
