"""A source swapped while it is read is never built unchecked (issue 35.2): the bytes a reader
gets are the bytes hashed (a private copy made while hashing; an archive extracted through the
file it was hashed from). A swap, by rename or by an in-place rewrite, at each point between
verification and reading (``CONVBANK_TEST_PAUSE``) gives the published data or a one-line
checksum error naming the file (exit 2), never the edited content."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import threading
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank import catalog
from convbank.build import build
from convbank.cli import cli
from convbank.datasets import SourceFile
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import SHARED

VALID = catalog.get("casino").file("casino_valid.json")
PUBLISHED = b'"age": 35'
EDITED = b'"age": 99'
AGES = (
    "SELECT list(DISTINCT meta->>'$.demographics.age' ORDER BY meta->>'$.demographics.age') AS ages "
    "FROM participants WHERE split = 'valid'"
)
PUBLISHED_AGES = (
    "19 20 23 24 25 26 27 28 29 30 31 32 33 34 35 36 38 39 40 41 42 43 44 49 52 54 55 56 58 63 65"
)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    shutil.copytree(SHARED / "casino", folder)
    return folder


def _edited(src: Path, tmp_path: Path) -> Path:
    data = (src / VALID.name).read_bytes()
    assert data.index(PUBLISHED) < 65536  # within the first block read
    edited = tmp_path / "edited.json"
    edited.write_bytes(data.replace(PUBLISHED, EDITED, 1))
    return edited


def _swap(kind: str, target: Path, edited: Path, tmp_path: Path) -> None:
    if kind == "rename":  # a new file (inode) at the path
        staged = tmp_path / "staged.json"
        shutil.copyfile(edited, staged)
        os.replace(staged, target)
    else:  # the same inode, its bytes rewritten
        with target.open("r+b") as f:
            f.write(edited.read_bytes())


def _ages_built(bank: Bank | None = None) -> str:
    """The valid split's distinct ages, as the bank holds them."""
    return " ".join(convbank.sql(AGES, bank=bank or Bank()).column("ages").to_pylist()[0])


def _build_paused(
    point: str, flag: Path, monkeypatch: pytest.MonkeyPatch, src: Path
) -> tuple[list[object], threading.Thread]:
    monkeypatch.setenv("CONVBANK_TEST_PAUSE", f"{point}:{flag}")
    out: list[object] = []

    def run() -> None:
        result = CliRunner().invoke(cli, ["build", "casino", "--source", str(src)])
        out.extend([result.exit_code, result.output])

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not flag.exists():
        assert thread.is_alive() and time.monotonic() < deadline, f"never paused at {point}: {out}"
        time.sleep(0.01)
    return out, thread


@pytest.mark.parametrize(
    ("point", "kind", "outcome"),
    [
        ("source-checked", "rename", "error"),  # verified by its path, then swapped: the copy sees it
        ("source-checked", "rewrite", "error"),
        ("source-opened", "rename", "published"),  # the open file keeps the bytes it had
        ("source-opened", "rewrite", "error"),  # the bytes copied are the bytes hashed
        ("source-reading", "rename", "published"),
        ("source-reading", "rewrite", "published"),  # the edit lies in the block already copied
        ("source-verified", "rename", "published"),  # the reader opens the copy, not the file
        ("source-verified", "rewrite", "published"),
    ],
)
def test_a_source_swapped_while_it_is_read_is_never_built(
    point: str, kind: str, outcome: str, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = _edited(src, tmp_path)
    flag = tmp_path / "paused"
    out, thread = _build_paused(f"{point}/{VALID.name}", flag, monkeypatch, src)
    _swap(kind, src / VALID.name, edited, tmp_path)
    flag.unlink()
    thread.join(120)
    monkeypatch.delenv("CONVBANK_TEST_PAUSE")
    code, output = out
    if outcome == "published":
        assert code == 0, output
        assert _ages_built() == PUBLISHED_AGES  # 35, never 99
    else:
        assert code == 2, output
        assert isinstance(output, str) and output.count("\n") == 1
        assert output.startswith(f"error: {src / VALID.name}: sha256 ")
        assert f"does not match the expected {VALID.sha256}" in output
        assert CliRunner().invoke(cli, ["query", AGES]).exit_code == 4  # nothing was built


def test_swaps_at_random_moments_never_build_the_edit(src: Path, tmp_path: Path) -> None:
    """A thread swaps the file for the edited copy and back (by rename) at seeded moments while
    the build runs: each build is the published data or a checksum error, never the edit."""
    edited = _edited(src, tmp_path)
    original = tmp_path / "original.json"
    shutil.copyfile(src / VALID.name, original)
    outcomes: list[str] = []
    for seed in range(6):
        rng = random.Random(seed)
        stop = threading.Event()

        def swapper(rng: random.Random = rng, stop: threading.Event = stop) -> None:
            toggle = False
            while not stop.is_set():
                _swap("rename", src / VALID.name, edited if toggle else original, tmp_path)
                toggle = not toggle
                time.sleep(rng.uniform(0.0, 0.004))

        thread = threading.Thread(target=swapper)
        bank = Bank(tmp_path / f"bank{seed}")
        thread.start()
        try:
            build(["casino"], fetcher=Fetcher(sources=[src], progress=False), bank=bank)
            outcomes.append("built")
        except convbank.ChecksumError as exc:
            assert str(exc).startswith(f"{src / VALID.name}: sha256 "), exc
            outcomes.append("refused")
        finally:
            stop.set()
            thread.join()
        if outcomes[-1] == "built":
            assert _ages_built(bank) == PUBLISHED_AGES
    assert len(outcomes) == 6


def _zip(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hf_pec/happy/train.txt", text)
    return path


@pytest.mark.parametrize(("point", "kind"), [("source-checked", "rename"), ("source-extracted", "rewrite")])
def test_an_archive_swapped_while_it_is_extracted_is_refused(
    point: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swapped after it was verified by its path (a rename), or rewritten in place while it
    was extracted: the checksum error, and no extracted folder kept."""
    src = tmp_path / "src"
    archive = _zip(src / "hf_pec.zip", "A ---+--- published\n")
    edited = _zip(tmp_path / "edited.zip", "A ---+--- EDITED!!!\n")
    assert archive.stat().st_size == edited.stat().st_size
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    pec = catalog.get("pec")
    published = SourceFile(name="hf_pec.zip", url=pec.file("hf_pec.zip").url, sha256=sha, extract_to="hf_pec")
    flag = tmp_path / "paused"
    monkeypatch.setenv("CONVBANK_TEST_PAUSE", f"{point}/hf_pec.zip:{flag}")
    out: list[BaseException | Path] = []

    def run() -> None:
        try:
            out.append(Fetcher(sources=[src], progress=False).fetch(pec, [published])["hf_pec.zip"])
        except convbank.ChecksumError as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    while not flag.exists():
        assert thread.is_alive(), out
        time.sleep(0.01)
    _swap(kind, archive, edited, tmp_path)
    flag.unlink()
    thread.join(60)
    (error,) = out
    assert isinstance(error, convbank.ChecksumError), error
    if point == "source-checked":
        assert str(error).startswith(f"{archive}: sha256 ")
        assert f"of the bytes read does not match the expected {sha} (the file changed after" in str(error)
    else:
        assert str(error) == (
            f"{archive}: changed while convbank read it (sha256 {sha} before); nothing was kept "
            "from it — leave the file alone while convbank reads it, and run the command again"
        )
    assert not list((tmp_path / "home" / "extracted").glob("pec/hf_pec.zip/*/hf_pec"))


def test_errors_name_the_file_not_its_private_copy(tmp_path: Path) -> None:
    """A file with no published sha256 (trusted on first use) is read from its private copy
    too; what the reader says about it names the file the user gave, and so does the bank."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "data_tolokers.json").write_text('[{"dialog": 3}')
    result = CliRunner().invoke(cli, ["build", "convai2", "--config", "tolokers", "--source", str(src)])
    assert (result.exit_code, result.output) == (
        2,
        f"error: {src / 'data_tolokers.json'}: at $[0].dialog: expected `array`, got `int`; not the "
        "ConvAI2 wild evaluation format as published — re-fetch the file or check that it is the "
        "right one\n",
    )
    built = CliRunner().invoke(cli, ["build", "casino", "--source", str(SHARED / "casino")])
    assert built.exit_code == 0, built.output
    manifest = (tmp_path / "home" / "bank" / "manifest.json").read_text()
    assert f'"casino_valid.json": "{SHARED / "casino" / VALID.name}"' in manifest  # the file, not the copy


@pytest.mark.parametrize("stand_in", ["fifo", "folder", "devnull"])
def test_what_is_no_longer_a_file_after_the_check_is_refused(
    stand_in: str, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swapped in after the file was checked: a FIFO (before: read unhashed, hanging without
    a writer, an edit built with one), a folder or a link to /dev/null (before: handed to the
    reader unhashed). Now one line, exit 2, nothing built, no wait."""
    flag = tmp_path / "paused"
    out, thread = _build_paused(f"source-checked/{VALID.name}", flag, monkeypatch, src)
    target = src / VALID.name
    target.unlink()
    if stand_in == "fifo":
        os.mkfifo(target)
    elif stand_in == "folder":
        target.mkdir()
    else:
        target.symlink_to(os.devnull)
    flag.unlink()
    thread.join(60)
    assert not thread.is_alive(), "the build waited on what took the file's place"
    monkeypatch.delenv("CONVBANK_TEST_PAUSE")
    code, output = out
    assert code == 2, output
    assert output == (
        f"error: {target} is no longer a regular file (it changed after it was checked); put the "
        "publisher's file back and run the command again\n"
    )
    assert CliRunner().invoke(cli, ["query", AGES]).exit_code == 4  # nothing was built


def test_a_fifo_swapped_in_under_no_verify_is_refused_not_waited_on(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --no-verify too, readers get a private copy read through a non-blocking open: a
    FIFO put in a source file's place after it was found is one line, never waited on
    (before: `build` waited on it for ever)."""
    found = Fetcher.get

    def get_then_swap(self: Fetcher, dataset: object, file: SourceFile) -> Path:
        path = found(self, dataset, file)  # type: ignore[arg-type]
        if file.name == VALID.name:
            path.unlink()
            os.mkfifo(path)
        return path

    monkeypatch.setattr(Fetcher, "get", get_then_swap)
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    done: dict[str, object] = {}
    worker = threading.Thread(
        target=lambda: done.update(
            r=CliRunner().invoke(cli, ["build", "casino", "--source", str(src), "--no-verify"])
        ),
        daemon=True,
    )
    worker.start()
    worker.join(20)
    if worker.is_alive():  # release the reader so the thread ends
        os.close(os.open(src / VALID.name, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        pytest.fail("build waited on a FIFO put in a source file's place")
    result = done["r"]
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert f"error: {src / VALID.name} is no longer a regular file" in result.output  # type: ignore[attr-defined]


def test_a_fifo_swapped_into_a_source_folder_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source folder (PEC extracted) is read in place, each file opened without blocking
    and refused unless it is a regular file: a FIFO put in a file's place after its layout
    was checked is one line, exit 2 (before: the build waited on it for ever)."""
    from convbank.datasets.pec.synthetic import write_pec

    write_pec(tmp_path / "src", 300, seed=3)
    from convbank.datasets.pec import dataset as pec

    parse = pec.parse_lines

    def swap_then_parse(path: Path, *args: object) -> object:
        if path.name == "valid.txt" and path.is_file():  # after the layout was checked
            path.unlink()
            os.mkfifo(path)
        return parse(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pec, "parse_lines", swap_then_parse)
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    done: dict[str, object] = {}
    args = ["build", "pec", "--config", "happy", "--source", str(tmp_path / "src"), "--no-verify"]
    worker = threading.Thread(target=lambda: done.update(r=CliRunner().invoke(cli, args)), daemon=True)
    worker.start()
    worker.join(60)
    fifo = next((tmp_path / "src").rglob("valid.txt"))
    if worker.is_alive():  # release the reader so the thread ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        pytest.fail("build waited on a FIFO put in a source folder's file")
    result = done["r"]
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert f"{fifo} is no longer a regular file" in result.output  # type: ignore[attr-defined]


def test_a_killed_builds_private_copies_are_removed_by_the_next(tmp_path: Path) -> None:
    """A build killed (``kill -9``) once its sources were copied cannot remove its private
    folder at exit. Before: ``$TMPDIR/convbank-verified-*`` stayed for good with a copy of
    every source (2 of 2 kills; Curiosity's would hold its 365 MB fact database); now the
    next command that makes a private folder removes those of processes now gone, and
    leaves a live one's."""
    import signal
    import subprocess
    import sys

    temp = tmp_path / "tmp"
    temp.mkdir()
    flag = tmp_path / "paused"
    env = {**os.environ, "TMPDIR": str(temp), "CONVBANK_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "convbank", "build", "casino", "--source", str(SHARED)]
    paused = {**env, "CONVBANK_TEST_PAUSE": f"source-verified/casino_valid.json:{flag}"}
    killed = subprocess.Popen(command, env=paused, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live = subprocess.Popen(command, env=paused, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(list(temp.glob("convbank-verified-*/casino/*/casino_valid.json"))) < 2:
            assert time.monotonic() < deadline and killed.poll() is None and live.poll() is None
            time.sleep(0.02)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert len(list(temp.iterdir())) == 2  # the killed one's stays
        env.pop("CONVBANK_TEST_PAUSE", None)
        done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        (left,) = temp.iterdir()  # the live one's
        assert left.name.startswith(f"convbank-verified-{live.pid}-")
    finally:
        for process in (killed, live):
            if process.poll() is None:
                process.kill()
                process.wait()
        flag.unlink(missing_ok=True)
