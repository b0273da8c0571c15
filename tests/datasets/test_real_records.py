"""Every dataset and config with real published records here (the full files in ../shared/data
and the excerpts in ../shared/samples), found through the catalog so that a dataset added
later is covered without edits: build, validate, every export format, the source export
byte for byte, ``show``, the viewer's conversation page and each benchmark task.

The Curiosity excerpt holds dialog 748 in both train and test (byte-identical files): a build
of all four splits reports the repeated id, and this module gives the test copy another id
(found generically: an id read in an earlier split of the same dataset)."""

from __future__ import annotations

import csv
import hashlib
import html
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.bench import TASKS, BenchError, run
from convbank.build import build
from convbank.cli import cli
from convbank.datasets import Dataset, Part
from convbank.errors import FormatError
from convbank.export import FORMATS, chat_record, export
from convbank.fetch import Fetcher
from convbank.query import Corpus
from convbank.store import Bank
from convbank.testing import check_map_batch
from convbank.validate import validate
from testsupport import ROOT, SHARED, sample_dirs

# one worker builds the module's bank of every real config for all its tests (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("real_records")

SAMPLES = ROOT.parent / "shared" / "samples"
REAL = [SHARED, SAMPLES, *sample_dirs()]
"""Where the real records are: full files first, then the excerpts, then the samples that
dataset packages ship (a plugin's)."""


_NO_CACHE = Path(tempfile.mkdtemp(prefix="convbank-real-records-"))
"""The finder's own home: a scratch folder (it notes where it found files), never the repository."""


def _finder() -> Fetcher:
    return Fetcher(sources=REAL, verify=False, offline=True, root=_NO_CACHE, progress=False)


def real_configs() -> list[tuple[str, str]]:
    """(dataset, stored config) pairs whose every source file is here."""
    finder = _finder()
    return [
        (ds.name, cfg.name)
        for ds in catalog.catalog
        for cfg in ds.stored_configs()
        if all(finder.find_local(ds, f) is not None for f in ds.required_files(cfg.name))
    ]


CONFIGS = real_configs()
DATASETS = sorted({name for name, _ in CONFIGS})
IDS = [f"{name}/{config}" for name, config in CONFIGS]


def _is_full(ds: Dataset, config: str) -> bool:
    """Whether a config's files are the publisher's complete files (the catalog's sha256)."""
    finder = _finder()
    for f in ds.required_files(config):
        path = finder.find_local(ds, f)
        if path is None or not path.is_file() or f.sha256 != hashlib.sha256(path.read_bytes()).hexdigest():
            return False
    return True


def repeated_ids(ds: Dataset, config: str) -> dict[str, list[tuple[int, str]]]:
    """Per split, the records (position, id) whose id an earlier record of the dataset has."""
    paths = _finder().fetch(ds, ds.required_files(config))
    seen: set[str] = set()
    repeats: dict[str, list[tuple[int, str]]] = {}
    for split in ds.config(config).splits:
        for i, record in enumerate(ds.read(paths, Part(config, split))):
            cid = ds.conversation_id(record, Part(config, split), i)
            if cid in seen:
                repeats.setdefault(split, []).append((i, cid))
            seen.add(cid)
    return repeats


def _new_id(cid: str) -> str:
    return str(int(cid) + 10**6) if cid.isdigit() else f"{cid}-copy"


def give_repeats_new_ids(ds: Dataset, config: str, folder: Path) -> dict[str, str]:
    """Rewrite each split file whose records repeat an earlier id, the repeats with new ids,
    through the dataset's own mapper and writer (same layout); return old id -> new id."""
    renamed: dict[str, str] = {}
    repeats = repeated_ids(ds, config)
    if not repeats:
        return renamed
    paths = _finder().fetch(ds, ds.required_files(config))
    for split, found in repeats.items():
        positions = {i for i, _ in found}
        records = []
        for i, record in enumerate(ds.read(paths, Part(config, split))):
            if i not in positions:
                records.append(record)
                continue
            conv = ds.to_conversation(record, Part(config, split), i)
            renamed[conv.conversation_id] = conv.conversation_id = _new_id(conv.conversation_id)
            records.append(ds.from_conversation(conv))
        ds.write_source(
            records, Part(config, split), ds.file_meta(paths, Part(config, split)), folder / ds.name
        )
    return renamed


class RealBank:
    """The bank built from the real records, with the sources each config was read from."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.bank = Bank(home / "bank")
        self.fixed = home / "renamed"
        self.renamed: dict[tuple[str, str], dict[str, str]] = {}
        for name, config in CONFIGS:
            ds = catalog.get(name)
            (self.fixed / name).mkdir(parents=True, exist_ok=True)
            self.renamed[(name, config)] = give_repeats_new_ids(ds, config, self.fixed)
            report = build([name], config=config, fetcher=self.fetcher(), bank=self.bank)
            assert report.ok, report.failures

    def fetcher(self, verify: bool = False) -> Fetcher:
        """Finds the renamed copies first, then the real files."""
        return Fetcher(
            sources=[self.fixed, *REAL], verify=verify, offline=True, root=self.home / "cache", progress=False
        )

    def inputs(self, name: str, config: str) -> dict[str, Path]:
        """The files a config was built from, by the path the source export gives them."""
        ds = catalog.get(name)
        found: dict[str, Path] = {}
        for f in ds.required_files(config):
            path = self.fetcher().find_local(ds, f)
            assert path is not None
            if path.is_file():
                found[f.name] = path
            else:  # an archive's extracted folder: the config's own subfolder
                for p in sorted((path / config).rglob("*")):
                    if p.is_file():
                        found[f"{f.extract_to}/{p.relative_to(path)}"] = p
        return found

    def corpus(self, name: str, config: str | None = None) -> Corpus:
        """The built conversations of a dataset (one config)."""
        return Corpus(name, config, bank=self.bank)

    def counts(self, name: str, config: str) -> tuple[int, int]:
        """Conversations and turns of a config, from the manifest."""
        splits = self.bank.built()[name].configs[config].splits
        return sum(s.conversations for s in splits.values()), sum(s.turns for s in splits.values())


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealBank]:
    """One bank of every real config (built once for the module)."""
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("real-home")
    mp.setenv("CONVBANK_HOME", str(home))
    mp.setenv("CONVBANK_OFFLINE", "1")
    try:
        yield RealBank(home)
    finally:
        mp.undo()


@pytest.fixture
def real_home(real: RealBank, monkeypatch: pytest.MonkeyPatch) -> RealBank:
    """The real bank as CONVBANK_HOME (for the CLI)."""
    monkeypatch.setenv("CONVBANK_HOME", str(real.home))
    return real


def test_the_real_records_here_cover_every_dataset() -> None:
    assert sorted(catalog.names()) == DATASETS
    assert set(CONFIGS) >= {
        ("casino", "default"),
        ("ccpe", "default"),
        ("curiosity", "default"),
        ("pec", "happy"),
        ("pec", "offmychest"),
        ("convai2", "summer_wild"),
        ("convai2", "volunteers"),
        ("convai2", "intermediate"),
    }


REPEATING = [(n, c) for n, c in CONFIGS if repeated_ids(catalog.get(n), c)]


@pytest.mark.parametrize(("name", "config"), REPEATING, ids=[f"{n}/{c}" for n, c in REPEATING])
def test_an_excerpt_that_repeats_an_id_is_reported(name: str, config: str, tmp_path: Path) -> None:
    repeats = repeated_ids(catalog.get(name), config)
    (split, [(_, cid), *_]), *_ = repeats.items()
    with pytest.raises(FormatError) as info:
        build([name], config=config, fetcher=_finder(), bank=Bank(tmp_path / "bank"))
    message = str(info.value)
    assert "\n" not in message and repr(cid) in message and "repeats" in message and split in message


def test_the_curiosity_excerpt_repeats_dialog_748(real: RealBank) -> None:
    assert repeated_ids(catalog.get("curiosity"), "default") == {"test": [(0, "748")]}
    assert real.renamed[("curiosity", "default")] == {"748": "1000748"}
    corpus = real.corpus("curiosity")
    assert [(c.split, c.conversation_id) for c in corpus] == [
        ("train", "748"),
        ("val", "18217"),
        ("test", "1000748"),
        ("test_zero", "17979"),
    ]
    assert corpus["748"].turns == corpus["1000748"].turns


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=IDS)
def test_build(real: RealBank, name: str, config: str) -> None:
    ds = catalog.get(name)
    splits = real.bank.built()[name].configs[config].splits
    assert sorted(splits) == sorted(ds.config(config).splits)
    paths = real.fetcher().fetch(ds, ds.required_files(config))
    for split, info in splits.items():
        assert info.conversations == sum(1 for _ in ds.read(paths, Part(config, split))) > 0
        assert info.expected is not None
        if _is_full(ds, config):
            assert info.conversations == info.expected
        else:
            assert info.conversations < info.expected


EXCERPT_COUNT = "{config}/{split} has {n:,} {noun}; {expected:,} published"


@pytest.mark.parametrize("name", DATASETS)
def test_validate_finds_no_errors_beyond_the_excerpts_counts(real: RealBank, name: str) -> None:
    report = validate([name], bank=real.bank)
    expected = sorted(
        EXCERPT_COUNT.format(
            config=config,
            split=split,
            n=info.conversations,
            noun="conversation" if info.conversations == 1 else "conversations",
            expected=info.expected,
        )
        for config, entry in real.bank.built()[name].configs.items()
        for split, info in entry.splits.items()
        if info.conversations != info.expected
    )
    errors = sorted(f.message for f in report.findings if f.severity == "error")
    assert errors == expected
    assert {f.check for f in report.findings if f.severity == "error"} <= {"published_counts"}


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=IDS)
def test_every_export_format(real: RealBank, name: str, config: str, tmp_path: Path) -> None:
    conversations, turns = real.counts(name, config)
    corpus = real.corpus(name, config)
    # ParlAI needs a label in every example: a conversation where the chosen side never
    # speaks gives no episode
    episodes = sum(any(m["role"] == "assistant" for m in chat_record(c)["messages"][1:]) for c in corpus)
    expected = {"csv": turns, "parlai": episodes}
    for fmt in FORMATS:
        out = tmp_path / fmt
        written = export(corpus, fmt, out)
        assert written and all(p.exists() for p in written), fmt
        assert _exported_count(fmt, out, name, config) == expected.get(fmt, conversations), fmt


def _exported_count(fmt: str, out: Path, name: str, config: str) -> int:  # noqa: PLR0911 - a case per format
    """Conversations in an export (turns for csv), read back in the format's own terms."""
    if fmt == "source":
        return sum(1 for _ in _read_back(name, config, out))
    if fmt == "hf":
        import datasets

        return sum(d.num_rows for d in datasets.load_from_disk(str(out / name / config)).values())
    if fmt == "convokit":
        return len(json.loads((out / f"{name}_convokit" / "conversations.json").read_text()))
    if fmt == "parquet":
        return int(pq.read_metadata(out / f"{name}_conversations.parquet").num_rows)
    if fmt == "croissant":
        meta = json.loads((out / f"{name}_croissant" / "croissant.json").read_text())
        assert meta["name"] and meta["recordSet"]
        return int(pq.read_metadata(out / f"{name}_croissant" / "conversations.parquet").num_rows)
    files = sorted(out.glob(f"{name}_{config}_*"))
    assert files
    if fmt == "csv":
        return sum(len(list(csv.reader(f.open(encoding="utf-8", newline="")))) - 1 for f in files)
    if fmt == "parlai":
        return sum(f.read_text().count("episode_done:True") for f in files)
    return sum(len(f.read_bytes().splitlines()) for f in files)  # jsonl, chat: a line each


def _read_back(name: str, config: str, folder: Path) -> Iterator[Any]:
    ds = catalog.get(name)
    fetcher = Fetcher(sources=[folder], verify=False, offline=True, root=folder / ".cache", progress=False)
    paths = fetcher.fetch(ds, ds.required_files(config))
    for split in ds.config(config).splits:
        yield from ds.read(paths, Part(config, split))


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=IDS)
def test_source_export_is_byte_for_byte_the_input(
    real: RealBank, name: str, config: str, tmp_path: Path
) -> None:
    out = tmp_path / "source"
    written = export(real.corpus(name, config), "source", out)
    inputs = real.inputs(name, config)
    assert sorted(str(p.relative_to(out)) for p in written) == sorted(inputs)
    for relative, original in inputs.items():
        assert (out / relative).read_bytes() == original.read_bytes(), relative
    ds = catalog.get(name)
    if _is_full(ds, config):  # sha256 as in the catalog: a bank rebuilt from the export verifies
        verified = Fetcher(sources=[out], verify=True, offline=True, root=tmp_path / "cache", progress=False)
        report = build([name], config=config, fetcher=verified, bank=Bank(tmp_path / "again"))
        assert report.ok and [s.conversations for s in report.splits] == [
            real.bank.split_info(name, config, s.split).conversations for s in report.splits
        ]


def test_pec_persona_files_come_back_whole(real: RealBank, tmp_path: Path) -> None:
    export(real.corpus("pec"), "source", tmp_path)
    for config in ("happy", "offmychest"):
        lines = (tmp_path / "hf_pec" / config / "persona.txt").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 177 and lines.count("*" * 20) == 19


def _first(real: RealBank, name: str, config: str) -> Any:
    return next(iter(real.corpus(name, config)))


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=IDS)
def test_show(real_home: RealBank, name: str, config: str) -> None:
    conv = _first(real_home, name, config)
    result = CliRunner().invoke(cli, ["show", name, conv.conversation_id, "--config", config, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(json.dumps(conv.to_dict()))
    text = CliRunner().invoke(cli, ["show", name, conv.conversation_id, "--config", config])
    assert text.exit_code == 0, text.output
    assert conv.conversation_id in text.output
    # piped: no panel padded to the pipe's unbounded width (65,536 columns)
    lines = text.output.splitlines()
    assert not any(" " * 300 in line for line in lines)
    assert max(map(len, lines)) < 10_000


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=IDS)
def test_viewer_conversation_page(real: RealBank, name: str, config: str) -> None:
    from starlette.testclient import TestClient

    from convbank.web.app import create_app

    conv = _first(real, name, config)
    client = TestClient(create_app(real.bank), base_url="http://127.0.0.1")  # a loopback Host
    page = client.get(f"/datasets/{name}/conversations/{conv.conversation_id}")
    assert page.status_code == 200
    plain = [
        t
        for t in conv.turns
        if t.text and not any(a.start_char is not None for a in conv.annotations_of(t.turn_index))
    ]
    assert plain and html.escape(plain[0].text.split("\n")[0], quote=False) in page.text
    for p in conv.participants:
        assert html.escape(p.participant_id) in page.text


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=IDS)
def test_benchmark_tasks_run_their_fastest_model(real: RealBank, name: str, config: str) -> None:
    tasks = [t for t in TASKS if t.dataset == name]
    assert tasks
    full = _is_full(catalog.get(name), config)
    for task in tasks:
        try:
            result = run(
                task.name, model=task.models[0], config=config, load=lambda n, c: Corpus(n, c, bank=real.bank)
            )
        except BenchError as exc:  # an excerpt too small for the protocol, said in one line
            message = str(exc)
            assert not full, f"{task.name} failed on the complete data: {message}"
            assert "\n" not in message and ("excerpt" in message or "wiki_sql.sqlite.db" in message), message
            continue
        assert result.data == ("real" if full else "fixture"), task.name
        assert result.metrics and result.model == task.models[0] and result.config == config


def test_pec_full_persona_blocks_come_back_whole(tmp_path: Path) -> None:
    """The earlier dummy's persona.txt (the same 19 speakers with their full blocks, up to
    100 sentences) as happy's persona file: the join gives the responder all of them, and
    the source export gives the file back byte for byte."""
    shutil.copytree(SAMPLES / "pec", tmp_path / "src" / "pec")
    full = SAMPLES / "pec" / "extra" / "persona.earlier_dummy_full_blocks.txt"
    shutil.copy(full, tmp_path / "src" / "pec" / "hf_pec" / "happy" / "persona.txt")
    fetcher = Fetcher(sources=[tmp_path / "src"], verify=False, offline=True, root=tmp_path, progress=False)
    bank = Bank(tmp_path / "bank")
    assert build(["pec"], config="happy", fetcher=fetcher, bank=bank).ok
    tylock = next(c for c in Corpus("pec", "happy", bank=bank) if c.turns[-1].participant_id == "tylock")
    persona = tylock.participant("tylock").persona
    assert len(persona) == 100 and "i love red dead 2" in persona  # the loader's example shows 7 of them
    export(Corpus("pec", "happy", bank=bank), "source", tmp_path / "out")
    assert (tmp_path / "out" / "hf_pec" / "happy" / "persona.txt").read_bytes() == full.read_bytes()


COLUMNAR = [(n, c) for n, c in CONFIGS if type(catalog.get(n)).map_batch is not Dataset.map_batch]
"""The real configs of datasets that map batches column by column (PEC)."""


@pytest.mark.parametrize(("name", "config"), COLUMNAR, ids=[f"{n}/{c}" for n, c in COLUMNAR])
def test_columnar_mapping_equals_the_generic_one_on_real_records(name: str, config: str) -> None:
    """A dataset's own ``map_batch`` gives the very tables of the mapping through conversation
    objects (same rows, types and field metadata), batch by batch at any start."""
    ds = catalog.get(name)
    paths = _finder().fetch(ds, ds.required_files(config))
    for split in ds.config(config).splits:
        records = list(ds.read(paths, Part(config, split)))
        for start in range(0, len(records), 7):
            check_map_batch(ds, records[start : start + 7], Part(config, split), start=start)


def test_columnar_mapping_on_synthetic_pec_with_missing_personas(tmp_path: Path) -> None:
    """The synthetic PEC corpus (speakers without a persona, continuation lines) maps the
    same both ways, and a columnar mapping that differs in one cell is caught."""
    from convbank.datasets.pec import Pec
    from convbank.datasets.pec.synthetic import write_pec

    ds = catalog.get("pec")
    write_pec(tmp_path, 300, seed=3, speakers=120)
    paths = _finder_for(tmp_path).fetch(ds, ds.required_files("happy"))
    records = list(ds.read(paths, Part("happy", "train")))
    assert any(u.speaker not in {p.speaker for p in r.personas} for r in records for u in r.context)
    check_map_batch(ds, records, Part("happy", "train"), start=1000)

    class Off(Pec):
        def map_batch(self, records: list[Any], part: Part, start: int) -> dict[str, Any]:
            tables = super().map_batch(records, part, start)
            turns = tables["turns"]
            text = turns.column("text").to_pylist()
            text[-1] += " "
            tables["turns"] = turns.set_column(turns.schema.get_field_index("text"), "text", [text])
            return tables

    with pytest.raises(
        AssertionError, match=r"^pec/happy/train: map_batch's turns differs from the generic mapping$"
    ):
        check_map_batch(Off(), records, Part("happy", "train"))


def _finder_for(folder: Path) -> Fetcher:
    return Fetcher(sources=[folder], verify=False, offline=True, root=_NO_CACHE, progress=False)
