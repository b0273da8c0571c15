"""The training-loop rows of the harness (issue 22), each measured in its own process like the
contenders of :mod:`benchmarks.contenders`: ``python -m benchmarks.training NAME DATASET WORK``.

- ``getitem_cold`` / ``getitem_warm``: 1,000 random ``corpus[i]`` (every turn's text touched)
  against Hugging Face ``Dataset.__getitem__`` on the Arrow file of ``hf_build``; cold is the
  first 1,000 after opening, warm the same 1,000 again.
- ``loader_0`` / ``loader_2``: one PyTorch ``DataLoader`` epoch over the turns (batches of
  256, :func:`convbank.torch.collate`) with 0 and 2 workers: ``convbank.torch``'s iterable
  dataset against a Hugging Face dataset of the same turns ``with_format("torch")``.
- ``scan``: a polars scan with a filter and a projection, ``Corpus.scan("turns")`` against
  ``polars.scan_parquet`` over a Hugging Face Parquet export (``Dataset.to_parquet``) of the
  same turns.
- ``iter_batches``: every turn streamed by ``Corpus.iter_batches`` (its peak memory is the
  row's point; ``python -m benchmarks.training memory 60000 300000`` measures it on synthetic
  PEC corpora of those sizes).
- ``mix_epoch``: a two-dataset mixture iterated for one epoch (every example's text touched):
  the dataset's turns and a partner's (ConvAI2 volunteers for CaSiNo, CaSiNo for the others,
  built from ``../shared/data`` beside the bank), each shuffled, drawn with probabilities in
  proportion to their sizes until the first runs out: ``convbank.examples.mix`` of two turn
  views against ``datasets.interleave_datasets`` of the two Hugging Face turn datasets
  (``shuffle(seed=0)`` each, ``stopping_strategy="first_exhausted"``).

The Hugging Face turns (the columns of a ``convbank.torch`` turn item) are made from the bank
once per run, before any clock starts.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, SPECS, measure_once

BATCH = 256
"""Turns per DataLoader batch."""


def _corpus(dataset: str, work: Path) -> Any:
    from convbank.query import load
    from convbank.store import Bank

    return load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank"))


def _positions(n: int) -> list[int]:
    """1,000 random positions (all, if fewer), the same for every contender."""
    return random.Random(0).sample(range(n), min(1000, n))


# ---------------------------------------------------------------------- random access
def _convbank_getitem(dataset: str, work: Path, *, warm: bool) -> Callable[[], None]:
    corpus = _corpus(dataset, work)
    chosen = _positions(len(corpus))

    def touch() -> int:
        return sum(len(t.text) for i in chosen for t in corpus[i].turns)

    if warm:
        touch()
    return lambda: None if touch() > 0 else sys.exit("no text")


def convbank_getitem_cold(dataset: str, work: Path) -> Callable[[], None]:
    """1,000 random ``corpus[i]`` just after opening (the index is made from the footers)."""
    from convbank.query import load
    from convbank.store import Bank

    n = len(_corpus(dataset, work))
    chosen = _positions(n)

    def go() -> None:
        corpus = load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank"))
        assert sum(len(t.text) for i in chosen for t in corpus[i].turns) > 0

    return go


def convbank_getitem_warm(dataset: str, work: Path) -> Callable[[], None]:
    """The same 1,000 ``corpus[i]`` again (decoded batches in the cache)."""
    return _convbank_getitem(dataset, work, warm=True)


def _hf_text(row: dict[str, Any], dataset: str) -> int:
    if dataset == "casino":
        return sum(len(log["text"]) for log in row["chat_logs"])
    if dataset == "convai2":
        return sum(len(m["text"]) for m in row["dialog"])
    return sum(len(t) for t in row["context"]) + len(row["response"])


def hf_getitem_cold(dataset: str, work: Path) -> Callable[[], None]:
    """``Dataset.from_file``, then 1,000 random ``ds[i]``."""
    import datasets

    arrow = (work / "hf-arrow.txt").read_text(encoding="utf-8")
    chosen = _positions(len(datasets.Dataset.from_file(arrow)))

    def go() -> None:
        ds = datasets.Dataset.from_file(arrow)
        assert sum(_hf_text(ds[i], dataset) for i in chosen) > 0

    return go


def hf_getitem_warm(dataset: str, work: Path) -> Callable[[], None]:
    """The same 1,000 ``ds[i]`` again."""
    import datasets

    ds = datasets.Dataset.from_file((work / "hf-arrow.txt").read_text(encoding="utf-8"))
    chosen = _positions(len(ds))

    def touch() -> int:
        return sum(_hf_text(ds[i], dataset) for i in chosen)

    touch()
    return lambda: None if touch() > 0 else sys.exit("no text")


# ---------------------------------------------------------------------- the same turns in Hugging Face
def _hf_turns(dataset: str, work: Path) -> Path:
    """A saved Hugging Face dataset of the corpus's turn items, and its Parquet export beside
    it (``hf-turns.parquet``): made once, in a process of its own (not timed, and not in the
    peak memory of the contender that asks first)."""
    folder = work / "hf-turns"
    if not folder.exists():
        subprocess.run(
            [sys.executable, "-m", "benchmarks.training", "prepare", dataset, str(work)], cwd=ROOT, check=True
        )
    return folder


def _make_hf_turns(dataset: str, work: Path) -> None:
    folder = work / "hf-turns"
    ds = _hf_turn_dataset(_corpus(dataset, work))
    tmp = Path(tempfile.mkdtemp(dir=work))
    ds.save_to_disk(str(tmp))
    import datasets

    datasets.load_from_disk(str(tmp)).to_parquet(str(work / "hf-turns.parquet"))
    tmp.rename(folder)


def _hf_turn_dataset(corpus: Any) -> Any:
    """A Hugging Face dataset of a corpus's turn items (the columns of ``convbank.torch``'s)."""
    import datasets
    import duckdb
    import pyarrow as pa

    datasets.disable_progress_bars()
    turns = corpus.turns_with_labels(meta="json").drop_columns(["meta", "annotations"])
    keys = ["config", "split", "conversation_id", "participant_id"]
    roles = corpus.to_arrow("participants", meta="json").select([*keys, "role"])
    con = duckdb.connect()
    con.register("t", turns)
    con.register("r", roles)
    table = con.sql(
        "SELECT t.dataset, t.config, t.split, t.conversation_id, t.turn_index, t.participant_id, "
        "r.role, t.text, t.kind, t.labels FROM t LEFT JOIN r USING (config, split, conversation_id, "
        "participant_id)"
    ).to_arrow_table()
    con.close()
    return datasets.Dataset(pa.Table.from_batches(table.to_batches()))


def _loader(data: Any, workers: int) -> Any:
    from torch.utils.data import DataLoader

    from convbank.torch import collate

    return DataLoader(data, batch_size=BATCH, num_workers=workers, collate_fn=collate)


def _convbank_loader(dataset: str, work: Path, workers: int) -> Callable[[], None]:
    from convbank.torch import IterableCorpusDataset

    _hf_turns(dataset, work)  # made here too, so either contender may run first
    corpus = _corpus(dataset, work)
    total = corpus.to_arrow("conversations", meta="json").column("num_turns").to_numpy().sum()

    def go() -> None:
        n = sum(len(b["text"]) for b in _loader(IterableCorpusDataset(corpus, "turns"), workers))
        assert n == total, (n, total)

    return go


def _hf_loader(dataset: str, work: Path, workers: int) -> Callable[[], None]:
    import datasets

    folder = _hf_turns(dataset, work)

    def go() -> None:
        ds = datasets.load_from_disk(str(folder)).with_format("torch")
        n = sum(len(b["text"]) for b in _loader(ds, workers))
        assert n == len(ds)

    return go


def convbank_loader_0(dataset: str, work: Path) -> Callable[[], None]:
    """A DataLoader epoch over the turns, in the loading process."""
    return _convbank_loader(dataset, work, 0)


def convbank_loader_2(dataset: str, work: Path) -> Callable[[], None]:
    """A DataLoader epoch over the turns, with 2 workers."""
    return _convbank_loader(dataset, work, 2)


def hf_loader_0(dataset: str, work: Path) -> Callable[[], None]:
    """A DataLoader epoch over the same turns ``with_format("torch")``, in the loading process."""
    return _hf_loader(dataset, work, 0)


def hf_loader_2(dataset: str, work: Path) -> Callable[[], None]:
    """A DataLoader epoch over the same turns ``with_format("torch")``, with 2 workers."""
    return _hf_loader(dataset, work, 2)


# ---------------------------------------------------------------------- polars
def _condition() -> Any:
    import polars as pl

    return (pl.col("turn_index") >= 2) & pl.col("text").str.contains("(?i)happy|water")


def convbank_scan(dataset: str, work: Path) -> Callable[[], None]:
    """``Corpus.scan("turns")``, filtered and projected, collected."""
    import polars  # noqa: F401 (an import, excluded from the clock as for hf_scan)

    corpus = _corpus(dataset, work)
    _hf_turns(dataset, work)

    def go() -> None:
        found = corpus.scan("turns").filter(_condition()).select("conversation_id", "text").collect()
        assert found.height > 0

    return go


def hf_scan(dataset: str, work: Path) -> Callable[[], None]:
    """``polars.scan_parquet`` over the Hugging Face Parquet export, the same query."""
    import polars as pl

    _hf_turns(dataset, work)
    path = str(work / "hf-turns.parquet")

    def go() -> None:
        found = pl.scan_parquet(path).filter(_condition()).select("conversation_id", "text").collect()
        assert found.height > 0

    return go


# ---------------------------------------------------------------------- streams
def convbank_iter_batches(dataset: str, work: Path) -> Callable[[], None]:
    """Every turn of the bank as record batches of 4,096 (each batch's text lengths summed)."""
    import pyarrow.compute as pc

    corpus = _corpus(dataset, work)

    def go() -> None:
        n = sum(
            pc.sum(pc.utf8_length(b.column("text"))).as_py() or 0 for b in corpus.iter_batches("turns", 4096)
        )
        assert n > 0

    return go


# ---------------------------------------------------------------------- mixtures
PARTNERS = {
    "casino": ("convai2", "volunteers"),
    "convai2": ("casino", "default"),
    "pec": ("casino", "default"),
}
"""The second dataset of the mixture row, for each dataset of the harness."""


def _partner(dataset: str, work: Path) -> Any:
    """The partner's corpus, built from the shared files into ``work/partner`` (once, in a
    process of its own, with both Hugging Face turn datasets: not timed)."""
    folder = work / "partner"
    if not (folder / "hf-turns").exists():
        subprocess.run(
            [sys.executable, "-m", "benchmarks.training", "prepare-mix", dataset, str(work)],
            cwd=ROOT,
            check=True,
        )
    from convbank.query import load
    from convbank.store import Bank

    name, config = PARTNERS[dataset]
    return load(name, config, bank=Bank(folder / "bank"))


def _make_partner(dataset: str, work: Path) -> None:
    from benchmarks.harness import SHARED
    from convbank.build import build
    from convbank.fetch import Fetcher
    from convbank.store import Bank

    _hf_turns(dataset, work)
    name, config = PARTNERS[dataset]
    folder = work / "partner"
    fetcher = Fetcher(sources=[SHARED / name], verify=False, root=folder / "home", progress=False)
    report = build([name], config=config, fetcher=fetcher, bank=Bank(folder / "bank"))
    if report.failures:
        raise SystemExit(f"partner build failed: {report.failures}")
    from convbank.query import load

    tmp = Path(tempfile.mkdtemp(dir=folder))
    _hf_turn_dataset(load(name, config, bank=Bank(folder / "bank"))).save_to_disk(str(tmp))
    tmp.rename(folder / "hf-turns")


def convbank_mix_epoch(dataset: str, work: Path) -> Callable[[], None]:
    """``mix`` of the dataset's turns and the partner's (shuffled, by size, first_exhausted),
    iterated once."""
    from convbank.examples import mix

    partner = _partner(dataset, work)

    def go() -> None:
        views = [_corpus(dataset, work).examples("turns"), partner.examples("turns")]
        mixture = mix(views, seed=0)
        assert sum(len(e["text"]) for e in mixture) > 0

    return go


def hf_mix_epoch(dataset: str, work: Path) -> Callable[[], None]:
    """``interleave_datasets`` of the same two turn datasets (each shuffled), iterated once."""
    import datasets

    _partner(dataset, work)
    folders = [str(work / "hf-turns"), str(work / "partner" / "hf-turns")]

    def go() -> None:
        parts = [datasets.load_from_disk(f).shuffle(seed=0) for f in folders]
        total = sum(len(p) for p in parts)
        mixed = datasets.interleave_datasets(
            parts, probabilities=[len(p) / total for p in parts], seed=0, stopping_strategy="first_exhausted"
        )
        assert sum(len(row["text"]) for row in mixed) > 0

    return go


TRAINING: dict[str, Callable[[str, Path], Callable[[], None]]] = {
    "convbank_getitem_cold": convbank_getitem_cold,
    "hf_getitem_cold": hf_getitem_cold,
    "convbank_getitem_warm": convbank_getitem_warm,
    "hf_getitem_warm": hf_getitem_warm,
    "convbank_loader_0": convbank_loader_0,
    "hf_loader_0": hf_loader_0,
    "convbank_loader_2": convbank_loader_2,
    "hf_loader_2": hf_loader_2,
    "convbank_scan": convbank_scan,
    "hf_scan": hf_scan,
    "convbank_iter_batches": convbank_iter_batches,
    "convbank_mix_epoch": convbank_mix_epoch,
    "hf_mix_epoch": hf_mix_epoch,
}


def memory(sizes: list[int]) -> dict[int, dict[str, float]]:
    """``convbank_iter_batches`` on synthetic PEC corpora of these sizes (conversations in
    all): its seconds and peak memory, to show the stream's memory stays flat."""
    from benchmarks.contenders import convbank_build
    from benchmarks.harness import environment, measure
    from convbank.datasets.pec.synthetic import write_pec

    env = environment()
    out = {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="convbank-memory-") as tmp:
            work = Path(tmp)
            write_pec(work / "pec-src", size * 5 // 6, seed=0)
            convbank_build("pec", work)()
            out[size] = measure("benchmarks.training", "convbank_iter_batches", "pec", work, 1, env=env)
            print(f"pec {size:,}: {out[size]}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    """Run one contender once and print its measurement (or ``memory SIZE...``)."""
    if sys.argv[1] == "memory":
        print(json.dumps(memory([int(s) for s in sys.argv[2:]])))
        return
    if sys.argv[1] == "prepare":
        _make_hf_turns(sys.argv[2], Path(sys.argv[3]))
        return
    if sys.argv[1] == "prepare-mix":
        _make_partner(sys.argv[2], Path(sys.argv[3]))
        return
    name, dataset, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    measure_once(TRAINING[name], dataset, work)


if __name__ == "__main__":
    main()
