"""Examples: the training-ready views of a corpus (``corpus.examples("turns")``,
``"responses"``, ``"chat"``, ``"conversations"``) and what every such view can become:
mapped with a cache, tokenised, packed, concatenated, mixed across datasets.

An :class:`Examples` is a lazy sequence of dicts, like a Hugging Face ``Dataset``: indexed,
sliced, selected, shuffled, split (stratified), sorted, filtered, pickled, and turned into
Arrow, pandas, polars or Hugging Face tables.
"""

from convbank.examples._base import Examples, Selected
from convbank.examples._mix import Mixture, mix
from convbank.examples._pack import Packed, pack

__all__ = ["Examples", "Mixture", "Packed", "Selected", "mix", "pack"]
