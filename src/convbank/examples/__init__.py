"""Examples: the training-ready views of a corpus (``corpus.examples("turns")``,
``"responses"``, ``"chat"``, ``"conversations"``) and what every such view can become:
mapped with a cache, tokenised, concatenated.

An :class:`Examples` is a lazy sequence of dicts, like a Hugging Face ``Dataset``: indexed,
sliced, selected, shuffled, split (stratified), sorted, filtered, pickled, and turned into
Arrow, pandas, polars or Hugging Face tables.
"""

from convbank.examples._base import Columns, Examples, Selected, TableExamples, Tokenized
from convbank.examples._concat import Concatenated, concatenate
from convbank.examples._fingerprint import fingerprint
from convbank.examples._map import MapError
from convbank.examples._mix import Mixture, mix
from convbank.examples._pack import Packed, pack
from convbank.examples._tokenize import IGNORE_INDEX, Encoder, TokenizerError

__all__ = [
    "IGNORE_INDEX",
    "Columns",
    "Concatenated",
    "Encoder",
    "Examples",
    "MapError",
    "Mixture",
    "Packed",
    "Selected",
    "TableExamples",
    "Tokenized",
    "TokenizerError",
    "concatenate",
    "fingerprint",
    "mix",
    "pack",
]
