"""PyTorch datasets over a :class:`~convbank.Corpus` or any sequence of examples (needs
``convbank[torch]``).

- :class:`CorpusDataset`: map-style (``len``, ``dataset[i]``), over conversations, turns or a
  sequence of example dicts (a benchmark task's examples); batches are fetched together
  (``__getitems__``), so a ``DataLoader`` decodes each stored batch once per batch it asks for.
- :class:`IterableCorpusDataset`: a stream read a stored batch at a time (turns through
  :meth:`Corpus.iter_batches`, conversations through :meth:`Corpus.select`), sharded by
  ``DataLoader`` worker and by distributed rank so that every example is seen exactly once
  per epoch whatever their numbers, and shuffled with a seed (:meth:`~IterableCorpusDataset.set_epoch`
  changes the order each epoch, as in Hugging Face ``datasets`` and WebDataset).

Both take a ``transform`` (item -> anything: tokenisation goes there) and a ``where`` (item ->
bool: the items kept, before batching, so batches stay full), and go to ``DataLoader`` workers
as they are (a corpus pickles by re-opening the same generation of the bank). A turn
is a dict: ``dataset``, ``config``, ``split``, ``conversation_id``, ``turn_index``,
``participant_id``, ``role``, ``text``, ``kind`` and ``labels`` (``"layer:label"`` strings;
:data:`TURN_FIELDS`, derived from the model by :func:`turn_fields`)::

    from torch.utils.data import DataLoader
    from convbank.torch import IterableCorpusDataset, collate

    data = IterableCorpusDataset(convbank.load("casino", split="train"), "turns", shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, num_workers=2, collate_fn=collate)
    for epoch in range(3):
        data.set_epoch(epoch)
        for batch in loader:
            batch["text"], batch["labels"]  # lists of 32 (the last batch fewer)

Over example views (``convbank.examples``): an iterable dataset reads a unit of a view with one
``__getitems__`` call, and its :meth:`~IterableCorpusDataset.set_epoch` reaches a
:class:`~convbank.examples.Mixture`, whose plan is then drawn again (a new order each epoch,
each of its examples once per epoch across workers and ranks). :class:`PadCollator` pads
tokenised examples into tensors.
"""

from convbank.errors import require

require("torch", "torch", "convbank.torch")

from convbank.torch._collate import PadCollator, collate, collate_conversations  # noqa: E402
from convbank.torch._datasets import (  # noqa: E402
    TURN_FIELDS,
    CorpusDataset,
    IterableCorpusDataset,
    turn_fields,
    turn_items,
)

__all__ = [
    "TURN_FIELDS",
    "CorpusDataset",
    "IterableCorpusDataset",
    "PadCollator",
    "collate",
    "collate_conversations",
    "turn_fields",
    "turn_items",
]
