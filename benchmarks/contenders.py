"""One contender, measured in its own process: ``python -m benchmarks.contenders NAME DATASET WORK``.

Prints one JSON line ``{"seconds": ..., "peak_rss_mib": ..., "peak_worker_rss_mib": ...}``: the
seconds of the measured work (imports and interpreter start excluded), the process's peak
resident memory and the largest of its worker processes' (0 when it started none).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.harness import SPECS, measure_once, source_fetcher, sources

SQL = {
    "casino": """SELECT p.meta->>'$.outcomes.satisfaction' AS satisfaction, a.label, count(*) AS n
                 FROM annotations a JOIN turns t USING (dataset, config, split, conversation_id, turn_index)
                 JOIN participants p ON p.dataset = t.dataset AND p.config = t.config AND p.split = t.split
                      AND p.conversation_id = t.conversation_id AND p.participant_id = t.participant_id
                 WHERE a.dataset = 'casino' GROUP BY ALL ORDER BY ALL""",
    "convai2": """SELECT p.meta->>'user_id' AS bot, count(*), avg((c.meta->>'eval_score')::INT)
                  FROM conversations c JOIN participants p USING (dataset, config, split, conversation_id)
                  WHERE c.dataset = 'convai2' AND p.participant_id = 'participant2'
                  GROUP BY ALL ORDER BY ALL""",
    "pec": """SELECT split, count(*), avg(num_turns), count(DISTINCT p.participant_id)
              FROM conversations c JOIN participants p USING (dataset, config, split, conversation_id)
              WHERE c.dataset = 'pec' AND p.role = 'responder' GROUP BY ALL ORDER BY ALL""",
}


# ---------------------------------------------------------------------- floor and convbank
def floor(dataset: str, work: Path) -> Callable[[], None]:
    """msgspec decoding of every source record into the typed raw structs (PEC: the line parser)."""
    from convbank import catalog
    from convbank.build import source_paths

    ds = catalog.get(dataset)
    config = SPECS[dataset]["config"]
    paths = source_paths(ds, config, source_fetcher(dataset, work))

    def go() -> None:
        for part in ds.parts(config):
            for _ in ds.read(paths, part):
                pass

    return go


def convbank_build(dataset: str, work: Path, workers: int | None = None) -> Callable[[], None]:
    """Source to the full bank: raw and unified tables written as Parquet, on every core
    (``workers``: that many processes)."""
    import shutil

    from convbank.build import build
    from convbank.engines.local import LocalEngine
    from convbank.store import Bank

    bank = work / ("bank" if workers is None else f"bank-{workers}")
    shutil.rmtree(bank, ignore_errors=True)
    fetcher = source_fetcher(dataset, work)

    def go() -> None:
        report = build(
            [dataset],
            config=SPECS[dataset]["config"],
            fetcher=fetcher,
            bank=Bank(bank),
            engine=LocalEngine(workers),
        )
        if report.failures:
            raise SystemExit(f"build failed: {report.failures}")

    return go


def convbank_build_1(dataset: str, work: Path) -> Callable[[], None]:
    """The same build in one process (the harness prints the speed-up of all cores)."""
    return convbank_build(dataset, work, workers=1)


def convbank_open_get(dataset: str, work: Path) -> Callable[[], None]:
    """Open the bank and fetch one conversation by id."""
    from convbank.query import load
    from convbank.store import Bank

    def go() -> None:
        conv = load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank"))[SPECS[dataset]["lookup"]]
        assert conv.conversation_id == SPECS[dataset]["lookup"]

    return go


def convbank_sql(dataset: str, work: Path) -> Callable[[], None]:
    """A SQL aggregate over the bank's views."""
    from convbank.query import sql
    from convbank.store import Bank

    def go() -> None:
        assert sql(SQL[dataset], bank=Bank(work / "bank")).num_rows > 0

    return go


# ---------------------------------------------------------------------- Hugging Face datasets
def _hf_rows(dataset: str, work: Path) -> Iterator[dict[str, Any]]:
    """The records as a Hugging Face loader script yields them (json.load, then shape)."""
    src = sources(dataset, work)
    if dataset == "casino":
        for split in ("train", "valid", "test"):
            with open(src / f"casino_{split}.json", encoding="utf-8") as f:
                yield from json.load(f)
    elif dataset == "convai2":
        with open(src / "data_volunteers.json", encoding="utf-8") as f:
            for i, d in enumerate(json.load(f)):
                d["id"] = f"volunteers-{i:05d}"
                d["profile_match"] = d["profile_match"] if d["profile_match"] != "" else None
                yield d
    else:
        yield from _pec_rows(src / "hf_pec" / "happy")


def _pec_rows(folder: Path) -> Iterator[dict[str, Any]]:
    persona: dict[str, list[str]] = {}
    with open(folder / "persona.txt", encoding="utf-8") as f:
        speaker, sentences = None, []
        for row in f:
            if "********************" in row:
                persona[speaker or ""] = sentences
                speaker, sentences = None, []
            elif speaker is None:
                speaker = row.strip()
            else:
                sentences.append(row.strip())
    for split in ("train", "valid", "test"):
        n = 0  # positions count within a split, as convbank's ids do
        speakers: list[str] = []
        context: list[str] = []
        with open(folder / f"{split}.txt", encoding="utf-8") as f:
            for row in f:
                if not row.strip():
                    continue
                if "********************" in row:
                    who, said = speakers.pop(), context.pop()
                    yield {
                        "personas": persona.get(who),
                        "context": context,
                        "context_speakers": speakers,
                        "response": said,
                        "response_speaker": who,
                        "conversation_id": f"happy-{split}-{n:06d}",
                    }
                    speakers, context, n = [], [], n + 1
                elif "---+---" in row:
                    who, said = row.split("---+---", 1)
                    speakers.append(who.strip())
                    context.append(said.strip())
                else:
                    context[-1] += " " + row.strip()


def hf_build(dataset: str, work: Path) -> Callable[[], None]:
    """``Dataset.from_generator`` with the loader's features, into an empty cache."""
    import shutil

    import datasets

    from convbank.export.hf import features

    datasets.disable_progress_bars()
    cache = work / "hf-cache"
    shutil.rmtree(cache, ignore_errors=True)

    def go() -> None:
        ds = datasets.Dataset.from_generator(
            _hf_rows,
            gen_kwargs={"dataset": dataset, "work": work},
            features=features(dataset),
            cache_dir=str(cache),
        )
        (work / "hf-arrow.txt").write_text(ds.cache_files[0]["filename"], encoding="utf-8")

    return go


def hf_open_get(dataset: str, work: Path) -> Callable[[], None]:
    """Reopen the Hugging Face Arrow file and find the same conversation."""
    import datasets

    arrow = (work / "hf-arrow.txt").read_text(encoding="utf-8")
    key = {"casino": "dialogue_id", "convai2": "id", "pec": "conversation_id"}[dataset]
    wanted: Any = int(SPECS[dataset]["lookup"]) if dataset == "casino" else SPECS[dataset]["lookup"]

    def go() -> None:
        ds = datasets.Dataset.from_file(arrow)
        row = ds[ds[key].index(wanted)]
        assert row[key] == wanted

    return go


# ---------------------------------------------------------------------- ConvoKit
def convokit_build(dataset: str, work: Path) -> Callable[[], None]:
    """A ConvoKit ``Corpus`` of the same utterances, speakers and conversation metadata."""
    from convokit import Corpus, Speaker, Utterance

    def go() -> None:
        speakers: dict[str, Speaker] = {}
        utterances: list[Utterance] = []
        conv_meta: dict[str, dict[str, Any]] = {}

        def speaker(sid: str, meta: dict[str, Any]) -> Speaker:
            if sid not in speakers:
                speakers[sid] = Speaker(id=sid, meta=meta)
            return speakers[sid]

        for n, row in enumerate(_hf_rows(dataset, work)):
            if dataset == "casino":
                cid = str(row["dialogue_id"])
                turns = [
                    (log["id"], log["text"], {"task_data": log["task_data"]}) for log in row["chat_logs"]
                ]
                people = {a: row["participant_info"][a] for a in ("mturk_agent_1", "mturk_agent_2")}
                conv_meta[cid] = {"annotations": row["annotations"]}
            elif dataset == "convai2":
                cid = row["id"]
                turns = [
                    (m["sender"], m["text"], {"evaluation_score": m.get("evaluation_score")})
                    for m in row["dialog"]
                ]
                people = {
                    "participant1": {"profile": row["user_profile"]},
                    "participant2": {"profile": row["bot_profile"]},
                }
                conv_meta[cid] = {"eval_score": row["eval_score"], "profile_match": row["profile_match"]}
            else:
                cid = row["conversation_id"]
                turns = [(s, t, {}) for s, t in zip(row["context_speakers"], row["context"], strict=True)]
                turns.append((row["response_speaker"], row["response"], {}))
                people = {row["response_speaker"]: {"persona": row["personas"]}}
                conv_meta[cid] = {"index": n}
            for i, (who, text, meta) in enumerate(turns):
                sid = who if dataset == "pec" else f"{cid}/{who}"
                utterances.append(
                    Utterance(
                        id=f"{cid}/{i}",
                        speaker=speaker(sid, people.get(who, {})),
                        conversation_id=cid,
                        reply_to=f"{cid}/{i - 1}" if i else None,
                        text=text,
                        meta=meta,
                    )
                )
        corpus = Corpus(utterances=utterances)
        for cid, meta in conv_meta.items():
            if cid in corpus.conversations:
                corpus.get_conversation(cid).meta.update(meta)

    return go


# ---------------------------------------------------------------------- the read path
FILTERS = {
    "casino": {"label": "strategy:uv-part"},
    "convai2": {"where": "(meta->>'eval_score')::INT = 5"},
    "pec": {
        "where": "EXISTS (SELECT 1 FROM participants p WHERE p.dataset = c.dataset AND p.config = c.config "
        "AND p.split = c.split AND p.conversation_id = c.conversation_id AND p.role = 'responder' "
        "AND p.participant_id = 'user_000042')"
    },
}
"""What the filtered scans select: conversations with one label, or one metadata value."""


def _hf_dataset(work: Path) -> Any:
    import datasets

    return datasets.Dataset.from_file((work / "hf-arrow.txt").read_text(encoding="utf-8"))


def _hf_turns(row: dict[str, Any], dataset: str) -> list[str]:
    if dataset == "casino":
        return [log["text"] for log in row["chat_logs"]]
    if dataset == "convai2":
        return [m["text"] for m in row["dialog"]]
    return [*row["context"], row["response"]]


def _sample(dataset: str, work: Path, n: int) -> list[str]:
    """``n`` conversation ids of the bank drawn with a fixed seed (the same for every
    contender; set up before the clock starts)."""
    import random

    from convbank.query import sql
    from convbank.store import Bank

    ids = (
        sql(
            f"SELECT conversation_id FROM conversations WHERE dataset = '{dataset}' "
            f"AND config = '{SPECS[dataset]['config']}' ORDER BY split, source_index",
            bank=Bank(work / "bank"),
        )
        .column(0)
        .to_pylist()
    )
    return random.Random(0).sample(ids, min(n, len(ids)))


def convbank_iterate(dataset: str, work: Path) -> Callable[[], None]:
    """Every conversation as an object, every turn's text touched."""
    from convbank.query import load
    from convbank.store import Bank

    def go() -> None:
        with load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank")) as corpus:
            n = sum(len(t.text) for conv in corpus for t in conv.turns)
        assert n > 0

    return go


def hf_iterate(dataset: str, work: Path) -> Callable[[], None]:
    """Every row of the Hugging Face dataset, every turn's text touched."""

    def go() -> None:
        ds = _hf_dataset(work)
        assert sum(len(t) for row in ds for t in _hf_turns(row, dataset)) > 0

    return go


def convbank_turns_pandas(dataset: str, work: Path) -> Callable[[], None]:
    """One DataFrame row per turn."""
    from convbank.query import load
    from convbank.store import Bank

    def go() -> None:
        assert len(load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank")).to_pandas("turns")) > 0

    return go


def hf_turns_pandas(dataset: str, work: Path) -> Callable[[], None]:
    """``to_pandas()``, then one row per turn (the nested turns exploded)."""

    def go() -> None:
        frame = _hf_dataset(work).to_pandas()
        column = {"casino": "chat_logs", "convai2": "dialog", "pec": "context"}[dataset]
        turns = frame.explode(column)
        if dataset == "pec":  # the response is the last turn
            import pandas as pd

            turns = pd.concat([turns, frame.assign(context=frame["response"])])
        assert len(turns) > 0

    return go


def convbank_filter(dataset: str, work: Path) -> Callable[[], None]:
    """The conversations with one label or one metadata value, as objects."""
    from convbank.query import load
    from convbank.store import Bank

    def go() -> None:
        assert load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank")).filter(**FILTERS[dataset])

    return go


def hf_filter(dataset: str, work: Path) -> Callable[[], None]:
    """``Dataset.filter`` with the same condition."""

    def keep(row: dict[str, Any]) -> bool:
        if dataset == "casino":
            return any("uv-part" in labels.split(",") for _, labels in row["annotations"])
        if dataset == "convai2":
            return row["eval_score"] == 5
        return bool(row["response_speaker"] == "user_000042")

    def go() -> None:
        assert len(_hf_dataset(work).filter(keep)) > 0

    return go


def convbank_take(dataset: str, work: Path) -> Callable[[], None]:
    """1,000 conversations (or all, if fewer) fetched by id in random order."""
    from convbank.query import load
    from convbank.store import Bank

    ids = _sample(dataset, work, 1000)

    def go() -> None:
        convs = load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank")).take(ids)
        assert [c.conversation_id for c in convs] == ids

    return go


def hf_take(dataset: str, work: Path) -> Callable[[], None]:
    """The same ids: an id-to-row map from the id column, then ``select`` and the rows."""
    key = {"casino": "dialogue_id", "convai2": "id", "pec": "conversation_id"}[dataset]
    ids = [int(i) if dataset == "casino" else i for i in _sample(dataset, work, 1000)]

    def go() -> None:
        ds = _hf_dataset(work)
        where = {v: i for i, v in enumerate(ds[key])}
        rows = ds.select([where[i] for i in ids]).to_list()
        assert [r[key] for r in rows] == ids

    return go


def _convokit_corpus(dataset: str, work: Path) -> Path:
    """ConvoKit's own corpus folder of the same data (made once, not timed)."""
    folder = work / "convokit-corpus"
    if not folder.exists():
        from convbank.export import export
        from convbank.query import load
        from convbank.store import Bank

        (made,) = export(
            load(dataset, SPECS[dataset]["config"], bank=Bank(work / "bank")), "convokit", work / "ck"
        )
        made.rename(folder)
    return folder


def convokit_iterate(dataset: str, work: Path) -> Callable[[], None]:
    """Load the corpus, then every conversation's utterances in order."""
    from convokit import Corpus

    folder = _convokit_corpus(dataset, work)

    def go() -> None:
        corpus = Corpus(filename=str(folder))
        n = sum(
            len(u.text)
            for conv in corpus.iter_conversations()
            for u in conv.get_chronological_utterance_list()
        )
        assert n > 0

    return go


def convokit_take(dataset: str, work: Path) -> Callable[[], None]:
    """Load the corpus, then the same 1,000 conversations by id."""
    from convokit import Corpus

    folder = _convokit_corpus(dataset, work)
    ids = _sample(dataset, work, 1000)

    def go() -> None:
        corpus = Corpus(filename=str(folder))
        assert [corpus.get_conversation(i).id for i in ids] == ids

    return go


CONTENDERS = {
    "floor": floor,
    "convbank_build": convbank_build,
    "convbank_build_1": convbank_build_1,
    "hf_build": hf_build,
    "convokit_build": convokit_build,
    "convbank_open_get": convbank_open_get,
    "hf_open_get": hf_open_get,
    "convbank_sql": convbank_sql,
    "convbank_iterate": convbank_iterate,
    "hf_iterate": hf_iterate,
    "convokit_iterate": convokit_iterate,
    "convbank_turns_pandas": convbank_turns_pandas,
    "hf_turns_pandas": hf_turns_pandas,
    "convbank_filter": convbank_filter,
    "hf_filter": hf_filter,
    "convbank_take": convbank_take,
    "hf_take": hf_take,
    "convokit_take": convokit_take,
}


def main() -> None:
    """Run one contender once and print its measurement."""
    name, dataset, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    measure_once(CONTENDERS[name], dataset, work)


if __name__ == "__main__":
    main()
