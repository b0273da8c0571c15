"""What every example view can be turned into: Arrow, pandas, polars and Hugging Face tables,
and the class weights of its labels (a mixin of :class:`~convbank.examples.Examples`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from convbank.errors import require
from convbank.examples._rows import Example

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

__all__ = ["Tables"]


class Tables:
    """Table conversions and label weights of a view (see :class:`~convbank.examples.Examples`)."""

    if TYPE_CHECKING:

        def __iter__(self) -> Iterator[Example]: ...

    def to_list(self) -> list[Example]:
        """Every example, as a list of dicts."""
        return list(self)

    def _shape_rows(self, most: int = 64) -> list[Example]:
        """Examples that show this view's keys and their types: its first ``most``; a
        derived view with none (an empty filter's result) shows those it would make of the
        first of the view it is made from (see ``Derived``). None for a view of nothing.

        >>> turns = convbank.load("casino", split="valid").examples("turns")
        >>> list(turns.filter(lambda t: False)._shape_rows(1)[0])[:3]
        ['dataset', 'config', 'split']
        """
        n = min(len(self), most)  # type: ignore[arg-type]  # every view has a length
        return self._fetch(np.arange(n, dtype=np.int64)) if n else []  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ labels
    def class_weights(self, scheme: str = "balanced") -> list[float]:
        """Weights per label of the view's ``label_names()``, counted over these examples
        (take them from the training split): ``"balanced"`` is scikit-learn's
        ``n / (labels * count)`` over label occurrences (for a weighted
        ``CrossEntropyLoss``), ``"pos_weight"`` is ``negatives / positives`` per label
        (``BCEWithLogitsLoss(pos_weight=...)`` for multi-hot targets). A label none of these
        examples has gets weight 0.

        >>> train = convbank.load("casino", split="train")
        >>> view = train.examples("turns", layer="strategy", annotated=True)
        >>> round(view.class_weights()[train.label_names("strategy").index("small-talk")], 3)
        0.556
        """
        names = getattr(self, "label_names", None)
        if names is None:
            raise ValueError(
                "class_weights() needs a view of one layer's labels (examples('turns', layer=...))"
            )
        vocabulary = {name: i for i, name in enumerate(names())}
        if scheme not in ("balanced", "pos_weight"):
            raise ValueError(f"scheme is 'balanced' or 'pos_weight', not {scheme!r}")
        counts = np.zeros(len(vocabulary), dtype=np.float64)
        n = 0
        for row in self:
            n += 1
            for name in set(row["label_text"] if "label_text" in row else row["labels"]):
                counts[vocabulary[name]] += 1
        if scheme == "pos_weight":
            return [float((n - c) / c) if c else 0.0 for c in counts]
        present = int((counts > 0).sum())
        return [float(counts.sum() / (present * c)) if c else 0.0 for c in counts]

    # ------------------------------------------------------------------ tables
    def to_arrow(self) -> pa.Table:
        """Every example as an Arrow table (one column per key). A key whose values are of no
        one type Arrow holds (chat messages whose ``content`` is a text in one and a list of
        parts in another) is a column of their JSON texts, as such a place of ``meta`` is.

        >>> convbank.load("casino", split="valid").examples("turns").to_arrow().num_rows
        402
        """
        import pyarrow as pa

        from convbank.examples._rows import columns_of

        rows = self.to_list()
        shape = rows or self._shape_rows()  # none: the columns (and types) they would have
        if not shape:
            return pa.table({})
        found = columns_of(shape)  # every example's keys: a later one's are not dropped
        names = dict.fromkeys([*self.column_names, *found])  # type: ignore[attr-defined]
        table = pa.table({name: _column(found.get(name, [None] * len(shape))) for name in names})
        return table if rows else table.slice(0, 0)

    def to_pandas(self) -> pd.DataFrame:
        """Every example as a pandas DataFrame (needs ``convbank[pandas]``)."""
        require("pandas", "pandas", "to_pandas()")
        frame: pd.DataFrame = self.to_arrow().to_pandas()
        return frame

    def to_polars(self) -> pl.DataFrame:
        """Every example as a polars DataFrame (needs ``convbank[polars]``)."""
        require("polars", "polars", "to_polars()")
        import polars as pl

        frame = pl.from_arrow(self.to_arrow())
        assert isinstance(frame, pl.DataFrame)
        return frame

    def to_hf(self) -> Any:
        """These examples as a Hugging Face ``datasets.Dataset`` (needs ``convbank[hf]``).

        >>> convbank.load("casino", split="valid").examples("chat").to_hf().num_rows
        30
        """
        require("datasets", "hf", "to_hf()")
        import datasets

        return datasets.Dataset(self.to_arrow())


def _column(values: list[Any]) -> pa.Array:
    """Values as one Arrow column: of the type Arrow infers, else (values of no one type) of
    their JSON texts, None staying null."""
    import msgspec
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        encode = msgspec.json.Encoder(enc_hook=str).encode
        return pa.array([None if v is None else encode(v).decode() for v in values], pa.string())
