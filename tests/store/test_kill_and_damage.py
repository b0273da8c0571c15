"""Faults against the bank, as an adversary would cause them: kill -9 at every phase of a
build, a full disk at several levels, readers racing rebuilds, damaged files, hostile SQL,
one Corpus shared by many threads. The bank must always read as the old generation or the
new one, never a mix, and what a fault leaves behind is gone after the next build."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from convbank import load, sql
from convbank.build import build
from convbank.cli import cli
from convbank.errors import DamagedBankError, DiskFullError, QueryError, SetupError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import ROOT, SHARED, bank_files, mounted_tmpfs, turns_file

INTERMEDIATE = SHARED / "convai2" / "data_intermediate.json"
FULL, SHORT = 291, 150
CONSISTENT = (
    "SELECT (SELECT count(*) FROM conversations WHERE config = 'intermediate') AS n, "
    "(SELECT sum(num_turns) FROM conversations WHERE config = 'intermediate') AS turns_meta, "
    "(SELECT count(*) FROM turns WHERE config = 'intermediate') AS turns, "
    "(SELECT count(*) FROM convai2_raw WHERE config = 'intermediate') AS raw, "
    "(SELECT count(*) FROM participants WHERE config = 'intermediate') AS participants"
)


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Two source folders with different data_intermediate.json: all 291 dialogues, and
    the first 150 (a rebuild switches between them, so a torn read shows as a mismatch)."""
    root = tmp_path_factory.mktemp("versions")
    full, short = root / "full", root / "short"
    full.mkdir()
    short.mkdir()
    shutil.copy(INTERMEDIATE, full / INTERMEDIATE.name)
    records = json.loads(INTERMEDIATE.read_text(encoding="utf-8"))
    (short / INTERMEDIATE.name).write_text(json.dumps(records[:SHORT]), encoding="utf-8")
    return {FULL: full, SHORT: short}


def _build(bank: Bank, source: Path) -> None:
    build(
        ["convai2"],
        config="intermediate",
        fetcher=Fetcher(sources=[source], verify=False, progress=False),
        bank=bank,
    )


def _state(bank: Bank) -> int:
    """The number of conversations the bank holds, after checking that every table agrees."""
    row = sql(CONSISTENT, bank=bank).to_pylist()[0]
    assert row["turns"] == row["turns_meta"], row
    assert row["raw"] == row["n"] and row["participants"] == 2 * row["n"], row
    n: int = row["n"]
    return n


def _assert_clean(bank: Bank) -> None:
    """Nothing but the current generation is left: no staging, no stray files, one record."""
    checkup = bank.doctor()
    assert checkup.problems == [] and checkup.leftovers == []
    assert not (bank.root / ".staging").exists()
    assert not list(bank.root.glob(".*.tmp"))
    records = list((bank.root / ".generations").glob("*.json"))
    assert [r.stem for r in records] == [bank.manifest().generation]


# ---------------------------------------------------------------------- kill -9
CHILD = """
import os, pathlib, sys, time
phase, marker, root, source = sys.argv[1:5]
import convbank._atomic as atomic
import convbank.store.bank as B
from convbank.build import build
from convbank.fetch import Fetcher

def pause():
    pathlib.Path(marker).write_text(phase)
    time.sleep(600)

def after(obj, name, when):
    original = getattr(obj, name)
    calls = [0]
    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        calls[0] += 1
        if when(calls[0], args):
            pause()
        return result
    setattr(obj, name, wrapped)

if phase == "staging":      # the 2nd batch of a split written, the rest not
    after(B.Staging, "write", lambda n, a: n == 7)
elif phase == "publish":    # 3 of the new files moved beside the old ones
    after(B.Bank, "_publish", lambda n, a: n == 3)
elif phase == "record":     # the new generation's record written, the manifest not switched
    after(B, "atomic_write_text", lambda n, a: a[0].parent.name == ".generations")
elif phase == "manifest":   # the new manifest written to its temporary file, not renamed
    original = os.replace
    def replace(src, dst, *a, **k):
        if str(dst).endswith("manifest.json"):
            pause()
        return original(src, dst, *a, **k)
    atomic.os.replace = replace
elif phase == "switched":   # the manifest switched, the old generation not yet collected
    original_collect = B.Bank.collect
    count = [0]
    def collect(self):
        count[0] += 1
        if count[0] == 2:
            pause()
        return original_collect(self)
    B.Bank.collect = collect
elif phase == "sweep":      # collecting: some old files deleted, others not
    after(pathlib.Path, "unlink", lambda n, a: "part-" in str(a[0]) and n >= 2)
build(["convai2"], config="intermediate", batch_size=40,
      fetcher=Fetcher(sources=[source], verify=False, progress=False), bank=B.Bank(pathlib.Path(root)))
"""
PHASES = {
    "staging": FULL,
    "publish": FULL,
    "record": FULL,
    "manifest": FULL,
    "switched": SHORT,
    "sweep": SHORT,
}


@pytest.mark.parametrize(("phase", "after_kill"), PHASES.items())
def test_kill_9_at_each_phase_leaves_old_or_new_bank(
    tmp_path: Path, versions: dict[int, Path], phase: str, after_kill: int
) -> None:
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[FULL])
    manifest = bank.manifest_path.read_bytes()
    marker = tmp_path / "paused"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, phase, str(marker), str(bank.root), str(versions[SHORT])],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    deadline = time.time() + 60
    while not marker.exists():
        assert child.poll() is None, f"the build ended before reaching {phase}"
        assert time.time() < deadline, f"the build never reached {phase}"
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)

    assert _state(bank) == after_kill  # a reader sees one whole generation
    assert bank.doctor().problems == []
    if after_kill == FULL:  # the killed build changed nothing readers can see
        assert bank.manifest_path.read_bytes() == manifest
    with bank.lock():  # the next build (or `doctor --clean`) clears what the kill left
        pass
    _assert_clean(bank)
    assert _state(bank) == after_kill
    _build(bank, versions[SHORT])
    assert _state(bank) == SHORT
    _assert_clean(bank)


# ---------------------------------------------------------------------- full disk
@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (needs mount rights: root in CI)."""
    with mounted_tmpfs(tmp_path / "disk", "4m") as mount:
        yield mount


@pytest.mark.parametrize("free_kib", [0, 8, 36, 64, 120, 170])  # a full build writes 188 KiB
def test_full_disk_keeps_the_old_bank(small_disk: Path, versions: dict[int, Path], free_kib: int) -> None:
    bank = Bank(small_disk / "bank")
    _build(bank, versions[SHORT])
    before = bank_files(bank)
    filler = small_disk / "filler"
    with filler.open("wb") as f, contextlib.suppress(OSError):  # leave about free_kib KiB
        f.write(b"\0" * max(0, shutil.disk_usage(small_disk).free - free_kib * 1024))
    with pytest.raises(DiskFullError) as info:
        _build(bank, versions[FULL])
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 1 and info.value.free is not None
    assert "no space left on the device holding the bank" in message
    assert message.endswith(
        "the previous bank is unchanged and the partial build was removed — free some space and build again"
    )
    assert _state(bank) == SHORT
    assert bank.doctor().problems == []
    assert not (bank.root / ".staging").exists()
    filler.unlink()
    with bank.lock():
        pass
    assert bank_files(bank) == before
    _build(bank, versions[FULL])
    assert _state(bank) == FULL
    _assert_clean(bank)


@pytest.mark.parametrize("where", ["parquet", "publish", "record", "manifest"])
def test_injected_enospc_at_each_write(
    tmp_path: Path, versions: dict[int, Path], where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import convbank.store.bank as bank_module

    bank = Bank(tmp_path / "bank")
    _build(bank, versions[SHORT])
    before = bank_files(bank)

    def enospc(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "parquet":
        monkeypatch.setattr(pq.ParquetWriter, "write_table", enospc)
    elif where == "publish":
        original = bank_module.Bank._publish
        calls = iter(range(100))

        def publish(self: Bank, *args: object) -> object:
            if next(calls) == 4:
                enospc()
            return original(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(bank_module.Bank, "_publish", publish)
    else:
        original_write = bank_module.atomic_write_text

        def write(path: Path, text: str) -> None:
            if (where == "record") == (path.parent.name == ".generations"):
                enospc()
            original_write(path, text)

        monkeypatch.setattr(bank_module, "atomic_write_text", write)
    with pytest.raises(DiskFullError, match="no space left on the device holding the bank"):
        _build(bank, versions[FULL])
    monkeypatch.undo()
    assert bank_files(bank) == before  # nothing of the failed build is left, nothing old lost
    assert _state(bank) == SHORT


# ---------------------------------------------------------------------- readers racing rebuilds
def test_readers_never_see_a_torn_bank(tmp_path: Path, versions: dict[int, Path]) -> None:
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[FULL])
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def sql_reader() -> None:
        while not stop.is_set():
            try:
                seen.append(_state(bank))
            except BaseException as exc:
                errors.append(exc)

    def corpus_reader() -> None:
        while not stop.is_set():
            try:
                with load("convai2", "intermediate", bank=bank) as corpus:
                    conversations = list(corpus)
                    assert len(conversations) == len(corpus) in (FULL, SHORT)
                    assert sum(c.num_turns for c in conversations) == sum(len(c.turns) for c in conversations)
                    last = conversations[-1].conversation_id
                    assert corpus[last].conversation_id == last
                    seen.append(len(corpus))
            except BaseException as exc:
                errors.append(exc)

    readers = [threading.Thread(target=f) for f in (sql_reader, sql_reader, corpus_reader, corpus_reader)]
    for t in readers:
        t.start()
    try:
        for i in range(8):
            _build(bank, versions[SHORT if i % 2 == 0 else FULL])
    finally:
        stop.set()
        for t in readers:
            t.join(60)
    assert errors == []
    assert set(seen) == {FULL, SHORT} and len(seen) > 20
    with bank.lock():  # the readers are gone: the generations they pinned can go too
        pass
    _assert_clean(bank)


# ---------------------------------------------------------------------- one Corpus, many threads
def test_one_corpus_shared_by_32_threads(built: Bank) -> None:
    corpus = load("convai2", "volunteers")
    ids = [c.conversation_id for c in corpus]
    expected = {cid: corpus[cid].to_dict() for cid in ids[::37]}
    neighbours = {cid: corpus.neighbours(cid) for cid in expected}
    errors: list[BaseException] = []
    barrier = threading.Barrier(32)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        keys = list(expected)
        barrier.wait()
        try:
            for _ in range(60):
                cid = rng.choice(keys)
                assert corpus[cid].to_dict() == expected[cid]
                assert corpus.neighbours(cid) == neighbours[cid]
                assert cid in corpus and "nope" not in corpus
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert errors == []


# ---------------------------------------------------------------------- hostile SQL
def _hostile(bank: Bank) -> list[str]:
    with bank.snapshot() as snap:
        part = snap.refs("conversations")[0].path
    return [
        f"EXPLAIN ANALYZE COPY (SELECT * FROM conversations WHERE false) TO '{part}' (FORMAT parquet)",
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{bank.manifest_path}' (FORMAT csv)",
        f"EXPLAIN ANALYZE COPY (SELECT * FROM conversations) TO '{bank.root / 'conversations'}' "
        "(FORMAT parquet, PARTITION_BY (dataset, config, split), OVERWRITE_OR_IGNORE)",
        "EXPLAIN ANALYZE CREATE OR REPLACE VIEW turns AS SELECT 'defaced' AS text",
        "EXPLAIN ANALYZE CREATE OR REPLACE VIEW conversations AS SELECT 1 AS conversation_id",
        f"EXPLAIN ANALYZE ATTACH '{bank.root / 'x.duckdb'}'",
        "EXPLAIN ANALYZE SET enable_external_access = true",
        f"SELECT * FROM read_parquet('{part}')",
        "SELECT * FROM _arrow_turns WHERE false; COPY (SELECT 1) TO 'x.csv'",
    ]


def test_hostile_sql_cannot_change_the_bank(tmp_path: Path, versions: dict[int, Path]) -> None:
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[FULL])
    before = bank_files(bank)
    for statement in _hostile(bank):
        try:
            sql(statement, bank=bank)
        except QueryError as exc:  # DuckDB's whole message (hints, the caret line), no traceback
            assert "Traceback" not in str(exc) and str(exc).strip()
        assert bank_files(bank) == before, statement
        assert _state(bank) == FULL
        assert sql("SELECT count(*) AS n FROM turns WHERE text = 'defaced'", bank=bank).to_pylist() == [
            {"n": 0}
        ]


def test_hostile_sql_through_the_cli(
    tmp_path: Path, versions: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path))
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[FULL])
    before = bank_files(bank)
    for statement in _hostile(bank):
        result = CliRunner().invoke(cli, ["query", statement])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        assert bank_files(bank) == before, statement
    listed = CliRunner().invoke(cli, ["query", "SELECT count(*) AS n FROM conversations", "--format", "csv"])
    assert listed.output == f"n\n{FULL}\n"


# ---------------------------------------------------------------------- limits
def test_sql_timeout_stops_a_runaway_query(built: Bank) -> None:
    start = time.perf_counter()
    with pytest.raises(QueryError) as info:
        sql("SELECT count(*) FROM turns a, turns b, turns c WHERE a.text < c.text", timeout=0.5)
    assert str(info.value) == "the query ran past its time limit of 0.5 s and was stopped"
    assert time.perf_counter() - start < 5
    result = CliRunner().invoke(
        cli, ["query", "--timeout", "0.3", "SELECT count(*) FROM turns a, turns b, turns c"]
    )
    assert result.exit_code == 2
    assert result.output == "error: the query ran past its time limit of 0.3 s and was stopped\n"


@pytest.mark.parametrize(
    ("query", "limits", "message"),
    [
        (  # built outside DuckDB's buffer manager: only the OS cap stops it
            "SELECT length(repeat('ab', 1000000000))",
            {"memory_limit": "256MB", "timeout": 20},
            "the query needs more memory than its limit of 256 MB allows; select fewer rows or columns, or aggregate",
        ),
        (
            "SELECT list_sum(range(60000000))",
            {"memory_limit": "64MiB"},
            "the query needs more memory than its limit of 64 MiB allows; select fewer rows or columns, or aggregate",
        ),
        (  # one scalar that DuckDB's interrupt cannot stop: the process is killed on time
            "SELECT count(*) FROM range(3000000000) t(x) WHERE hash(x) = 0",
            {"timeout": 1},
            "the query ran past its time limit of 1 s and was stopped",
        ),
    ],
)
def test_limits_hold_against_expressions(built: Bank, query: str, limits: dict, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(QueryError) as info:
        sql(query, **limits)
    assert str(info.value) == message
    assert time.perf_counter() - start < (limits.get("timeout") or 10) + 5
    cli_args = ["query", query, "--format", "json"]
    for key, flag in (("timeout", "--timeout"), ("memory_limit", "--memory-limit")):
        if key in limits:
            cli_args += [flag, str(limits[key])]
    result = CliRunner().invoke(cli, cli_args)
    assert (result.exit_code, result.output) == (2, f"error: {message}\n")


def test_limited_query_returns_the_same_table(built: Bank) -> None:
    q = "SELECT dataset, count(*) AS n, arg_min(meta, conversation_id) AS m FROM conversations GROUP BY 1 ORDER BY 1"
    free, limited = sql(q), sql(q, timeout=30, memory_limit="512MB")
    assert limited.to_pylist() == free.to_pylist()
    assert limited.schema.field("m").metadata == free.schema.field("m").metadata  # JSON stays marked


@pytest.mark.parametrize("bad", ["nan", "inf", "1e12", "-1", "-inf", "x"])  # 0: no limit
def test_bad_timeouts_are_usage_errors(built: Bank, bad: str) -> None:
    result = CliRunner().invoke(cli, ["query", "SELECT 1", "--timeout", bad])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--timeout" in result.output or "time limit" in result.output


def test_lone_surrogate_sql_is_one_line(built: Bank) -> None:
    with pytest.raises(QueryError, match=r"^the SQL cannot be read: "):
        sql("SELECT '\udc80'")


def test_slow_query_writes_only_its_result(built: Bank) -> None:
    """DuckDB's progress bar (after 2 s) must not land in the JSON on stdout."""
    slow = "SELECT count(*) AS n FROM range(400000000) t(x) WHERE hash(x) % 7 = 3"
    result = CliRunner().invoke(cli, ["query", slow, "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["n"] > 0


# ---------------------------------------------------------------------- nothing outside the bank
def test_collect_never_follows_links_or_deletes_foreign_files(
    tmp_path: Path, versions: dict[int, Path]
) -> None:
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "a.txt").write_text("keep")
    (victim / "sub" / "b.parquet").write_text("keep")
    (victim / "dataset=x").mkdir()
    (victim / "dataset=x" / "part-0.parquet").write_text("keep")
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[SHORT])
    (bank.root / "mystuff").symlink_to(victim, target_is_directory=True)
    (bank.root / "notes").mkdir()
    (bank.root / "notes" / "todo.txt").write_text("keep")
    with bank.lock():
        pass
    _build(bank, versions[FULL])
    result = CliRunner().invoke(cli, ["doctor", "--clean"], env={"CONVBANK_HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert sorted(str(p.relative_to(victim)) for p in victim.rglob("*")) == [
        "a.txt",
        "dataset=x",
        "dataset=x/part-0.parquet",
        "sub",
        "sub/b.parquet",
    ]
    assert (bank.root / "notes" / "todo.txt").read_text() == "keep"


def test_a_folder_of_other_files_is_not_taken_for_a_bank(tmp_path: Path, versions: dict[int, Path]) -> None:
    root = tmp_path / "bank"
    root.mkdir()
    (root / "thesis.tex").write_text("mine")
    with pytest.raises(SetupError) as info:
        _build(Bank(root), versions[SHORT])
    assert str(info.value) == (
        f"{root} holds 'thesis.tex', which is not part of a convbank bank; empty the folder or point "
        "CONVBANK_HOME elsewhere"
    )
    assert (root / "thesis.tex").read_text() == "mine"


def test_linked_generations_folder_is_refused(tmp_path: Path, versions: dict[int, Path]) -> None:
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[SHORT])
    elsewhere = tmp_path / "elsewhere"
    shutil.move(bank.root / ".generations", elsewhere)
    (elsewhere / "precious.json").write_text("{}")
    (bank.root / ".generations").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(DamagedBankError, match=r"\.generations is a symbolic link"):
        _build(bank, versions[FULL])
    assert (elsewhere / "precious.json").exists()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda m, f: f.update(bytes="12"), "Expected `int | null`, got `str`"),
        (lambda m, f: f.pop("path"), "Object missing required field `path`"),
        (lambda m, f: f.update(path=5), "Expected `str`, got `int`"),
        (lambda m, f: f.update(path="/etc/passwd"), "'/etc/passwd' is not a file of"),
        (lambda m, f: f.update(path="turns/../../../x/part-0.parquet"), "is not a file of"),
        (lambda m, f: f.update(path=f["path"].replace("part-", "pa\x00rt-")), "is not a file of"),
        (lambda m, f: m.update(generation="../../../x"), "generation '../../../x' is not a generation name"),
        (lambda m, f: m["datasets"].update(convai2=5), "Expected `object`, got `int`"),
        (lambda m, f: m["datasets"]["convai2"].update(configs=None), "Expected `object`, got `null`"),
    ],
)
def test_manifest_is_checked_before_use(
    tmp_path: Path, versions: dict[int, Path], monkeypatch: pytest.MonkeyPatch, change: Any, problem: str
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path))
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[SHORT])
    manifest = json.loads(bank.manifest_path.read_text(encoding="utf-8"))
    files = manifest["datasets"]["convai2"]["configs"]["intermediate"]["files"]["turns"]["train"]
    change(manifest, files)
    bank.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    for args in (
        ["query", "SELECT 1"],
        ["list"],
        ["doctor"],
        ["build", "convai2", "--config", "intermediate", "--no-verify"],
    ):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 4, (args, result.output)
        assert result.output.startswith(
            f"error: the bank is damaged: {bank.manifest_path} is not a convbank manifest ("
        )
        assert problem in result.output and result.output.count("\n") == 1
    assert not (tmp_path / "x.lock").exists()


def test_failed_rebuild_spares_files_a_reader_holds(
    tmp_path: Path, versions: dict[int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An identical file republished by a build that then fails is not deleted: an older
    generation that a reader pins still names it."""
    import convbank.store.bank as bank_module

    bank = Bank(tmp_path / "bank")
    _build(bank, versions[SHORT])
    with load("convai2", "intermediate", bank=bank) as pinned:
        _build(bank, versions[FULL])

        def enospc(path: Path, text: str) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(bank_module, "atomic_write_text", enospc)
        with pytest.raises(DiskFullError, match="no space left"):
            _build(bank, versions[SHORT])
        monkeypatch.undo()
        assert len(list(pinned)) == SHORT  # every file of the pinned generation is still there
    assert _state(bank) == FULL


def test_read_only_reader_can_pin_a_new_generation(tmp_path: Path, versions: dict[int, Path]) -> None:
    """The build makes the lock file of its generation: a reader that cannot create files
    (a read-only mount of the bank) still finds one to pin."""
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[SHORT])
    generation = bank.manifest().generation
    assert (bank.root / ".generations" / f"{generation}.lock").is_file()


def test_corrupt_bytes_in_stats_and_validate_are_one_line(
    casino_home: Bank,
) -> None:
    bank = casino_home
    for ref in bank.snapshot().refs("annotations"):
        data = bytearray(ref.path.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 8] = b"\xff" * 8
        ref.path.write_bytes(bytes(data))
    for args in (["stats", "casino"], ["validate", "casino"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 4, (args, result.output)
        assert result.output.startswith(
            ("error: the bank is damaged: ", f"error: the bank at {bank.root} cannot be read (")
        )
        assert result.output.count("\n") == 1 and "doctor" in result.output


# ---------------------------------------------------------------------- damaged banks
COMMANDS = [
    ["query", "SELECT count(*) FROM turns"],
    ["show", "casino", "938"],
    ["validate", "casino"],
    ["stats", "casino"],
    ["export", "casino", "--format", "jsonl", "-o", "{out}"],
]


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_damaged_file_is_named_by_every_command(
    casino_home: Bank, tmp_path: Path, damage: str, command: list[str]
) -> None:
    path = turns_file(casino_home, "valid")
    size = path.stat().st_size
    if damage == "deleted":
        path.unlink()
        problem = "missing"
    else:
        with path.open("r+b") as f:
            f.truncate(size // 2)
        problem = f"{size // 2:,} bytes where the manifest says {size:,}"
    args = [a.format(out=tmp_path / "out") for a in command]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 4, result.output
    assert result.output == (
        f"error: the bank is damaged: {path} is {problem}; run `convbank doctor` to check every "
        "file, then `convbank build casino` to rebuild it\n"
    )
    with pytest.raises(DamagedBankError):
        list(load("casino"))
    doctor = CliRunner().invoke(cli, ["doctor"])
    assert doctor.exit_code == 4
    assert f"damaged: {path}: {problem} (rebuild with `convbank build casino`)" in doctor.output


def test_corrupt_bytes_of_the_same_size(casino_home: Bank) -> None:
    path = turns_file(casino_home, "train")
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    doctor = CliRunner().invoke(cli, ["doctor"])
    assert doctor.exit_code == 4
    assert f"damaged: {path}: corrupt: its sha256 differs from the manifest's" in doctor.output
    assert CliRunner().invoke(cli, ["doctor", "--quick"]).exit_code == 0  # sizes and footers hold
    result = CliRunner().invoke(cli, ["query", "SELECT sum(length(text)) FROM turns"])
    assert result.exit_code == 4, result.output  # a page checksum fails: never an answer
    assert result.output.startswith(f"error: the bank is damaged: {path} is ")
    assert result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b'{"datasets": {"casino": ', "not valid JSON (Expecting"),
        (b"\xff\xfe", "not UTF-8 text at byte 0"),
        (b"[1, 2]", "not a convbank manifest"),
    ],
)
def test_corrupt_manifest_is_one_line(casino_home: Bank, content: bytes, what: str) -> None:
    casino_home.manifest_path.write_bytes(content)
    for args in (["query", "SELECT 1"], ["list"], ["show", "casino", "938"], ["doctor"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 4, (args, result.output)
        assert result.output.startswith(f"error: the bank is damaged: {casino_home.manifest_path} is {what}")
        assert result.output.count("\n") == 1


def test_rebuild_repairs_a_damaged_bank(casino_home: Bank) -> None:
    turns_file(casino_home, "valid").unlink()
    build(["casino"], fetcher=Fetcher(sources=[SHARED], verify=False, progress=False), bank=casino_home)
    assert sql("SELECT count(*) AS n FROM turns", bank=casino_home).to_pylist() == [{"n": 14297}]
    _assert_clean(casino_home)


def test_older_layout_is_read_and_upgraded(tmp_path: Path, versions: dict[int, Path]) -> None:
    """A bank written before generations (one part-0.parquet per partition) still reads,
    and the next build turns it into a generation."""
    bank = Bank(tmp_path / "bank")
    _build(bank, versions[FULL])
    manifest = json.loads(bank.manifest_path.read_text(encoding="utf-8"))
    for ref in bank.snapshot().refs():
        ref.path.rename(ref.path.with_name("part-0.parquet"))
    for cfg in manifest["datasets"]["convai2"]["configs"].values():
        del cfg["files"]
    del manifest["layout"], manifest["generation"]
    bank.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    shutil.rmtree(bank.root / ".generations")
    assert _state(bank) == FULL
    with bank.lock():
        pass
    assert bank.manifest().layout == 2 and _state(bank) == FULL
    _build(bank, versions[SHORT])
    assert _state(bank) == SHORT
    _assert_clean(bank)
    assert not list(bank.root.rglob("part-0.parquet"))
