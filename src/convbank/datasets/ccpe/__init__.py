"""CCPE-M: Coached Conversational Preference Elicitation about movies (Radlinski et al.,
2019), in one package.

- :mod:`.dataset`: the raw types and vocabularies, card and file, reader, mapper (both ways)
  and source writer (CCPE-M's own JSON style);
- :mod:`.present`: how exports, statistics and the viewer present it;
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: ``ccpe-preference-spans`` (``convbank bench``).
"""

from convbank.datasets.ccpe.dataset import Ccpe, CcpeConversation
from convbank.datasets.ccpe.records import ANNOTATION_TYPES, ENTITY_TYPES, SPEAKERS

__all__ = ["ANNOTATION_TYPES", "ENTITY_TYPES", "SPEAKERS", "Ccpe", "CcpeConversation"]
