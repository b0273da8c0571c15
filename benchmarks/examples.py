"""The example-view rows of the harness (issue 30), each measured in its own process like the
other contenders: ``python -m benchmarks.examples NAME DATASET WORK``.

- ``tokenize_collate``: one epoch of ``responses`` examples with a history of 3 turns,
  tokenised with a chat template (labels on the response only) and padded into batches of
  64 by a ``DataLoader``: ``corpus.examples("responses", history=3).tokenize(...)`` with
  :class:`convbank.torch.PadCollator`, against ``datasets.map`` (batched, into an empty cache)
  over a Hugging Face dataset of the same examples' messages and
  ``transformers.DataCollatorForSeq2Seq``.
- ``map_cached``: the same tokenising ``map`` a second time (its result in the cache), every
  ``input_ids`` read: ``Examples.map`` against ``Dataset.map``.

A word-level tokenizer is trained on the corpus's texts and the Hugging Face dataset is made
from the bank once per run, in a process of their own, before any clock starts.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, SPECS, measure_once

BATCH = 64
"""Examples per DataLoader batch."""
MAX_LENGTH = 256
"""Tokens an example keeps (the history is cut from the left)."""
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
"""A chat template of the kind chat models ship (a header per role, an end token)."""


def _corpus(dataset: str, work: Path, config: str | None = None) -> Any:
    from convbank.query import load
    from convbank.store import Bank

    return load(dataset, config or SPECS[dataset]["config"], bank=Bank(work / "bank"))


def _views(dataset: str, work: Path) -> Any:
    return _corpus(dataset, work).examples("responses", history=3)


def _tokenizer(work: Path) -> Any:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(work / "tokenizer.json"), pad_token="[PAD]", unk_token="[UNK]", eos_token="</s>"
    )
    tok.chat_template = TEMPLATE
    tok.truncation_side = "left"
    return tok


def _prepared(dataset: str, work: Path) -> None:
    if not (work / "hf-responses").exists():
        subprocess.run(
            [sys.executable, "-m", "benchmarks.examples", "prepare", dataset, str(work)], cwd=ROOT, check=True
        )


def _prepare(dataset: str, work: Path) -> None:
    """The tokenizer and the Hugging Face dataset of the responses' messages (not timed)."""
    import datasets
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    datasets.disable_progress_bars()
    view = _views(dataset, work)
    model = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = (t for x in view for t in [*x["context"], x["response"]])
    special = ["[PAD]", "[UNK]", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
    model.train_from_iterator(texts, trainers.WordLevelTrainer(vocab_size=30000, special_tokens=special))
    model.save(str(work / "tokenizer.json"))
    messages = datasets.Dataset.from_dict({"messages": [x["messages"] for x in view]})
    messages.save_to_disk(str(work / "hf-responses-tmp"))
    (work / "hf-responses-tmp").rename(work / "hf-responses")


def _count(loader: Any) -> int:
    return sum(int(b["attention_mask"].sum()) for b in loader)


# ---------------------------------------------------------------------- tokenise and collate
def convbank_tokenize_collate(dataset: str, work: Path) -> Callable[[], None]:
    """An epoch of tokenised, padded ``responses`` batches from the bank."""
    from torch.utils.data import DataLoader

    from convbank.torch import CorpusDataset, PadCollator

    _prepared(dataset, work)
    tok = _tokenizer(work)

    def go() -> None:
        view = _views(dataset, work).tokenize(tok, max_length=MAX_LENGTH)
        loader = DataLoader(CorpusDataset(view), batch_size=BATCH, collate_fn=PadCollator(tokenizer=tok))
        assert _count(loader) > 0

    return go


def _hf_tokenize(tok: Any) -> Callable[[dict[str, list[Any]]], dict[str, list[Any]]]:
    """What a Hugging Face user writes for the same ids: the prompt and the whole chat
    rendered with the template, the prompt's tokens masked in the labels."""

    def tokenize(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        prompts = [
            tok.apply_chat_template(m[:-1], tokenize=False, add_generation_prompt=True)
            for m in batch["messages"]
        ]
        wholes = [tok.apply_chat_template(m, tokenize=False) for m in batch["messages"]]
        prompt_ids = tok(prompts, add_special_tokens=False)["input_ids"]
        ids = tok(wholes, add_special_tokens=False)["input_ids"]
        labels = [[-100] * len(p) + i[len(p) :] for p, i in zip(prompt_ids, ids, strict=True)]
        ids = [i[-MAX_LENGTH:] for i in ids]
        return {
            "input_ids": ids,
            "attention_mask": [[1] * len(i) for i in ids],
            "labels": [lab[-MAX_LENGTH:] for lab in labels],
        }

    return tokenize


def hf_tokenize_collate(dataset: str, work: Path) -> Callable[[], None]:
    """``datasets.map`` (batched, an empty cache) and ``DataCollatorForSeq2Seq`` padding."""
    import shutil

    import datasets
    from torch.utils.data import DataLoader
    from transformers import DataCollatorForSeq2Seq

    _prepared(dataset, work)
    datasets.disable_progress_bars()
    tok = _tokenizer(work)
    cache = work / "hf-map-cache"

    def go() -> None:
        shutil.rmtree(cache, ignore_errors=True)
        ds = datasets.load_from_disk(str(work / "hf-responses"))
        ids = ds.map(
            _hf_tokenize(tok),
            batched=True,
            remove_columns=["messages"],
            cache_file_name=str(cache / "t.arrow"),
        )
        collator = DataCollatorForSeq2Seq(tok, padding=True, return_tensors="pt")
        assert _count(DataLoader(ids.with_format(None), batch_size=BATCH, collate_fn=collator)) > 0

    return go


# ---------------------------------------------------------------------- a cached map
def _ids(example: dict[str, Any]) -> dict[str, Any]:
    return {"n": len(example["response"])}


def convbank_map_cached(dataset: str, work: Path) -> Callable[[], None]:
    """``Examples.map`` of a tokenising function, the second time (read from the cache)."""
    _prepared(dataset, work)
    tok = _tokenizer(work)

    def tokenize(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {"input_ids": tok(batch["response"], add_special_tokens=False)["input_ids"]}

    _views(dataset, work).map(tokenize, batched=True)

    def go() -> None:
        again = _views(dataset, work).map(tokenize, batched=True)
        assert sum(len(i) for i in again["input_ids"]) > 0

    return go


def hf_map_cached(dataset: str, work: Path) -> Callable[[], None]:
    """``Dataset.map`` of the same function, the second time (its cache file found)."""
    import datasets

    _prepared(dataset, work)
    datasets.disable_progress_bars()
    tok = _tokenizer(work)
    path = str(work / "hf-responses")

    def tokenize(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {
            "input_ids": tok([m[-1]["content"] for m in batch["messages"]], add_special_tokens=False)[
                "input_ids"
            ]
        }

    datasets.load_from_disk(path).map(tokenize, batched=True)

    def go() -> None:
        again = datasets.load_from_disk(path).map(tokenize, batched=True)
        assert sum(len(i) for i in again["input_ids"]) > 0

    return go


EXAMPLES: dict[str, Callable[[str, Path], Callable[[], None]]] = {
    "convbank_tokenize_collate": convbank_tokenize_collate,
    "hf_tokenize_collate": hf_tokenize_collate,
    "convbank_map_cached": convbank_map_cached,
    "hf_map_cached": hf_map_cached,
}


def main() -> None:
    """Run one contender once and print its measurement (or ``prepare DATASET WORK``)."""
    if sys.argv[1] == "prepare":
        _prepare(sys.argv[2], Path(sys.argv[3]))
        return
    name, dataset, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    measure_once(EXAMPLES[name], dataset, work)


if __name__ == "__main__":
    main()
