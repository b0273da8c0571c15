"""The import rows of the harness: a chat-format JSONL of N turns (``python -m benchmarks`` runs
100,000 and 1,000,000; ``--quick`` 100,000) taken in by each peer in its own process, its
seconds and peak memory side by side:

- ``convbank_import``: :func:`convbank.import_conversations` into an empty bank (read,
  validated, stored as Parquet with its manifest);
- ``hf_import``: ``datasets.load_dataset("json", data_files=...)`` into an empty cache (read
  and written as Arrow);
- ``convokit_import``: the file's messages as a pandas frame of utterances (``json.loads`` a
  line at a time, each message a row replying to the one before), then
  ``convokit.Corpus.from_pandas``.

The file: conversations of ten messages (a system message, then user and assistant in turn),
texts of 8-40 words from a fixed vocabulary, seeded. Memory is flat when convbank's peak at
the largest size stays within 1.25 times its peak at the smallest.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import flatness, measure, measure_once

SIZES = (100_000, 1_000_000)
"""Turns in the file, for the full run (``--quick``: the first)."""
PER_CONVERSATION = 10
WORDS = "the a we it you camp water food firewood movie fact river city tell me more about why how".split()


def chat_file(path: Path, turns: int, seed: int = 0) -> Path:
    """Write a chat JSONL of ``turns`` messages (:data:`PER_CONVERSATION` a conversation)."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for c in range(turns // PER_CONVERSATION):
            messages = [{"role": "system", "content": "You are a helpful assistant."}]
            for i in range(PER_CONVERSATION - 1):
                words = " ".join(rng.choices(WORDS, k=rng.randint(8, 40)))
                messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": words})
            f.write(json.dumps({"id": f"c{c:07d}", "messages": messages}) + "\n")
    return path


def _file(dataset: str, work: Path) -> Path:
    return work / f"{dataset}.jsonl"


def convbank_import(dataset: str, work: Path) -> Callable[[], None]:
    from convbank.imports import import_conversations
    from convbank.store import Bank

    bank = Bank(Path(tempfile.mkdtemp(dir=work)))

    def go() -> None:
        import_conversations(_file(dataset, work), name="bench_chats", format="chat", bank=bank)

    return go


def hf_import(dataset: str, work: Path) -> Callable[[], None]:
    import datasets

    datasets.disable_progress_bars()
    cache = tempfile.mkdtemp(dir=work)

    def go() -> None:
        datasets.load_dataset("json", data_files=str(_file(dataset, work)), split="train", cache_dir=cache)

    return go


def convokit_import(dataset: str, work: Path) -> Callable[[], None]:
    import pandas as pd
    from convokit import Corpus

    def go() -> None:
        rows: list[dict[str, Any]] = []
        with _file(dataset, work).open(encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                cid = record["id"]
                for i, m in enumerate(record["messages"]):
                    rows.append(
                        {
                            "id": f"{cid}/{i}",
                            "conversation_id": cid,
                            "speaker": m["role"],
                            "reply_to": f"{cid}/{i - 1}" if i else None,
                            "timestamp": i,
                            "text": m["content"],
                        }
                    )
        Corpus.from_pandas(utterances_df=pd.DataFrame(rows))

    return go


CONTENDERS = {"convbank_import": convbank_import, "hf_import": hf_import, "convokit_import": convokit_import}


def run_imports(
    sizes: tuple[int, ...], reps: int, env: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Measure every contender at each size; return ``{"chat-<turns>": {contender: result}}``."""
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="convbank-bench-import-") as tmp:
        for turns in sizes:
            name = f"chat-{turns}"
            chat_file(_file(name, Path(tmp)), turns)
            results[name] = {}
            for contender in CONTENDERS:
                n = 1 if contender == "convokit_import" and turns > SIZES[0] else reps
                results[name][contender] = measure(
                    "benchmarks.imports", contender, name, Path(tmp), n, env=env
                )
                print(f"{name} {contender}: {results[name][contender]}", file=sys.stderr, flush=True)
    return results


def imports_table(results: dict[str, dict[str, Any]]) -> str:
    """The import rows as Markdown: seconds and peak memory of each peer, the ratios (a
    peer's seconds over convbank's: above 1, convbank is faster), and whether convbank's
    memory stayed flat."""
    lines = [
        "### import a chat JSONL",
        "",
        "| turns | convbank s | MiB | HF load_dataset s | MiB | ConvoKit from_pandas s | MiB "
        "| HF ÷ convbank | ConvoKit ÷ convbank |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        ours, hf, kit = r["convbank_import"], r["hf_import"], r["convokit_import"]
        lines.append(
            f"| {int(name.split('-')[1]):,} | {ours['min_s']:.2f} | {ours['peak_rss_mib']:.0f} "
            f"| {hf['min_s']:.2f} | {hf['peak_rss_mib']:.0f} "
            f"| {kit['min_s']:.2f} | {kit['peak_rss_mib']:.0f} "
            f"| {hf['min_s'] / ours['min_s']:.2f} | {kit['min_s'] / ours['min_s']:.2f} |"
        )
    lines += flatness(
        "convbank's peak memory", [r["convbank_import"]["peak_rss_mib"] for r in results.values()], 1.25
    )
    return "\n".join(lines)


def main() -> None:
    """Run one contender once and print its measurement."""
    name, dataset, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    measure_once(CONTENDERS[name], dataset, work)


if __name__ == "__main__":
    main()
