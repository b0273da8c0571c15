"""What a run is given, bounded: a predictions file is read as a stream (an endless one is
refused in bounded memory, so is a flood of blank lines, a line nested too deep or a number
too large for a float), and a model that raises or returns nothing is one line naming it and
the fold (exit 2), never a traceback."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import convbank
from convbank.bench import BenchError, read_predictions, run, score, task_named
from convbank.cli.main import cli
from convbank.store import Bank
from convbank.tasks import Example

PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _peak_growth(call: Any) -> tuple[int, float, BaseException | None]:
    """How far the resident memory rose above its level before ``call()`` (sampled every
    millisecond), the seconds it took and what it raised."""
    before = _rss()
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.perf_counter()
    raised: BaseException | None = None
    try:
        call()
    except BaseException as exc:  # returned to the test
        raised = exc
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    return max(peak[0], _rss()) - before, seconds, raised


def _zeros_into(fifo: Path, most: int) -> threading.Thread:
    """A writer of zeros into ``fifo`` until its reader goes (or ``most`` bytes: the test's
    bound on an endless stream such as /dev/zero)."""

    def write() -> None:
        deadline = time.monotonic() + 30
        while True:  # wait for the reader, never block without one
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                    return
                time.sleep(0.005)
        os.set_blocking(fd, True)
        block, sent = b"\0" * (1 << 20), 0
        try:
            while sent < most:
                sent += os.write(fd, block)
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def test_an_endless_stream_is_refused_quickly_in_bounded_memory(built: Bank, tmp_path: Path) -> None:
    """Zeros without end through a FIFO (bounded here at 1 GiB): refused at its first MiB,
    memory up by less than 100 MB (before: the whole stream read, then split)."""
    bad = tmp_path / "warm.jsonl"
    bad.write_text("{}\n")
    with pytest.raises(BenchError):  # the bank and the task's data loaded once, before measuring
        score("casino-strategy", bad)
    fifo = tmp_path / "zeros.jsonl"
    for _ in range(3):
        os.mkfifo(fifo)
        writer = _zeros_into(fifo, 1 << 30)
        growth, seconds, raised = _peak_growth(lambda: score("casino-strategy", fifo))
        writer.join(10)
        fifo.unlink()
        assert str(raised) == (
            f'{fifo}: line 1 is longer than 1 MiB; each line is {{"example_id": ..., "prediction": ...}}'
        )
        assert growth < 100 * (1 << 20), growth
        assert seconds < 10, seconds
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--predictions", "/dev/zero"])
    assert (done.exit_code, done.output) == (
        2,
        'error: /dev/zero: line 1 is longer than 1 MiB; each line is {"example_id": ..., "prediction": ...}\n',
    )


def test_a_file_larger_than_the_task_allows_is_refused_unread(tmp_path: Path) -> None:
    """The bound is 16 KiB a test example (plus one line): 2 MiB of blank lines for a task of
    10 examples is refused, 1 MiB read (nothing in it); an 8 GiB sparse file of zeros is
    refused at its first line."""
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n" * (1 << 20))
    assert read_predictions(blank, examples=10) == {}
    blank.write_bytes(b"\n" * (2 << 20))
    with pytest.raises(BenchError) as caught:
        read_predictions(blank, examples=10)
    assert str(caught.value) == (
        f"{blank}: larger than 1 MiB (16 KiB a test example of the task); a predictions file holds "
        'one {"example_id": ..., "prediction": ...} line per test example'
    )
    sparse = tmp_path / "sparse.jsonl"
    with sparse.open("wb") as f:
        f.truncate(8 << 30)
    growth, seconds, raised = _peak_growth(lambda: read_predictions(sparse, examples=4615))
    assert isinstance(raised, BenchError) and "line 1 is longer than 1 MiB" in str(raised)
    assert growth < 100 * (1 << 20) and seconds < 5, (growth, seconds)
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"example_id": "a", "prediction": 1}\n' * 121)
    with pytest.raises(BenchError, match=r"more than 120 rows, for a task of 10 test examples"):
        read_predictions(rows, examples=10)


def test_nesting_is_checked_before_decoding(built: Bank, tmp_path: Path) -> None:
    """900 levels (before: RecursionError) and 100,000 are one line naming the line; brackets
    inside a string are text."""
    ids = task_named("casino-strategy").data(convbank.load("casino")).test_ids()
    good = "".join(json.dumps({"example_id": i, "prediction": []}) + "\n" for i in ids)
    path = tmp_path / "deep.jsonl"
    for depth in (65, 900, 100_000):
        path.write_text(good + '{"example_id": "x", "prediction": ' + "[" * depth + "]" * depth + "}\n")
        done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--predictions", str(path)])
        assert (done.exit_code, done.output) == (
            2,
            f"error: {path}: line 4,616 is nested more than 64 deep; "
            'each line is {"example_id": ..., "prediction": ...}\n',
        )
    path.write_text(good.replace("[]", "[" * 62 + "]" * 62, 1))  # 64 deep: read, then checked
    assert (
        "1 malformed prediction(s)"
        in CliRunner().invoke(cli, ["bench", "casino-strategy", "--predictions", str(path)]).output
    )
    text = '"' + "[" * 500 + '"'
    path.write_text(json.dumps({"example_id": text, "prediction": []}) + "\n")
    assert read_predictions(path) == {text: []}


def test_a_number_too_large_for_a_float_is_a_malformed_prediction(built: Bank, tmp_path: Path) -> None:
    data = task_named("convai2-quality").data(convbank.load("convai2", "volunteers"))
    ids = data.test_ids()
    path = tmp_path / "big.jsonl"
    path.write_text(
        "".join(
            json.dumps({"example_id": i, "prediction": 10**400 if n == 0 else 3}) + "\n"
            for n, i in enumerate(ids)
        )
    )
    done = CliRunner().invoke(
        cli, ["bench", "convai2-quality", "--config", "volunteers", "--predictions", str(path)]
    )
    message = (
        "convai2-quality: the predictions cannot be scored: "
        f"1 malformed prediction(s) ({ids[0]!r}: expected a finite number)"
    )
    assert (done.exit_code, done.output) == (2, f"error: {message}\n")
    with pytest.raises(BenchError) as caught:
        score(
            "convai2-quality", {i: 10**400 if n == 0 else 3 for n, i in enumerate(ids)}, config="volunteers"
        )
    assert str(caught.value) == message


def test_a_byte_order_mark_and_crlf_read_as_without_and_the_bounds_are_exact(
    built: Bank, tmp_path: Path
) -> None:
    """Third round (issue 35). Before: a predictions file saved with a UTF-8 byte-order mark
    (Notepad, PowerShell's ``Out-File``) was ``line 1 is not JSON``, exit 2, where ``convbank
    import`` reads the same file. Now it scores as without it, CRLF line ends too. The bounds
    are exact: a line of 1 MiB and 64 levels pass, 1 MiB + 1 byte and 65 levels are refused."""
    from convbank.bench.files import LINE_LIMIT, MAX_DEPTH

    data = task_named("convai2-quality").data(convbank.load("convai2", "volunteers"))
    ids = data.test_ids()
    rows = [json.dumps({"example_id": i, "prediction": float(n % 5)}).encode() for n, i in enumerate(ids)]
    plain, marked = tmp_path / "plain.jsonl", tmp_path / "marked.jsonl"
    plain.write_bytes(b"\n".join(rows) + b"\n")
    marked.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(rows) + b"\r\n")
    args = ["bench", "convai2-quality", "--config", "volunteers", "--json", "--predictions"]
    scored = [CliRunner().invoke(cli, [*args, str(p)]) for p in (plain, marked)]
    assert [r.exit_code for r in scored] == [0, 0], scored[1].output
    assert json.loads(scored[0].stdout)["metrics"] == json.loads(scored[1].stdout)["metrics"]

    def line(depth: int, pad: int = 0) -> bytes:
        inner = "[" * (depth - 1) + "]" * (depth - 1)
        return f'{{"example_id": "a", "prediction": {inner}, "x": "{"y" * pad}"}}'.encode()

    edge = tmp_path / "edge.jsonl"
    for data_, ok in (
        (line(MAX_DEPTH), True),
        (line(MAX_DEPTH + 1), False),
        (line(3, LINE_LIMIT - len(line(3))), True),
        (line(3, LINE_LIMIT - len(line(3)) + 1), False),
    ):
        edge.write_bytes(b"\xef\xbb\xbf" + data_ + b"\r\n")
        if ok:
            assert read_predictions(edge) == {"a": json.loads(data_)["prediction"]}
        else:
            with pytest.raises(BenchError, match=r"line 1 is (nested more than 64 deep|longer than 1 MiB)"):
                read_predictions(edge)


class FailsInFit:
    """A model whose fit raises."""

    def fit(self, examples: Sequence[Example], gold: Sequence[Any]) -> None:
        raise ValueError("no labels\nin this fold")

    def predict(self, examples: Sequence[Example]) -> list[Any]:
        return [[] for _ in examples]


class ExitsInPredict:
    """A model whose predict calls sys.exit(3) (before: convbank exited 3, "sources
    unavailable", without a word)."""

    def predict(self, examples: list[Example]) -> list[list[str]]:
        raise SystemExit(3)


class FailsInPredict:
    """A model whose predict raises on the third fold."""

    def __init__(self) -> None:
        self.folds = 0

    def predict(self, examples: Sequence[Example]) -> list[Any]:
        self.folds += 1
        if self.folds == 3:
            raise RuntimeError("CUDA out of memory")
        return [[] for _ in examples]


class ReturnsNone:
    """A model whose predict forgets its return."""

    def predict(self, examples: Sequence[Example]) -> None:
        pass


class ReturnsANumber:
    """A ranking model whose rank returns one number."""

    def rank(self, examples: Sequence[Example]) -> float:
        return 0.5


class Stop(BaseException):
    """Not an Exception: what a library's own control flow may raise."""


class RaisesABaseException:
    """A model whose predict raises a BaseException that is neither Ctrl-C nor sys.exit()
    (before: a traceback, exit 1)."""

    def predict(self, examples: Sequence[Example]) -> list[Any]:
        raise Stop("gave up\nearly")


class RaisesGeneratorExit:
    """A model whose predict raises GeneratorExit (before: a bare traceback, exit 1)."""

    def predict(self, examples: Sequence[Example]) -> list[Any]:
        raise GeneratorExit


class YieldsThenStops:
    """A model whose predict is a generator that raises a BaseException part way."""

    def predict(self, examples: Sequence[Example]) -> Any:
        yield []
        raise Stop("half way")


MODEL_ERRORS = {
    "RaisesABaseException": "casino-strategy, fold1: the model {m} failed in predict(): Stop: gave up early",
    "RaisesGeneratorExit": "casino-strategy, fold1: the model {m} failed in predict(): GeneratorExit",
    "YieldsThenStops": "casino-strategy, fold1: the model {m} failed in predict(): Stop: half way",
    "ExitsInPredict": "casino-strategy, fold1: the model {m} failed in predict(): SystemExit: 3",
    "FailsInFit": "casino-strategy, fold1: the model {m} failed in fit(): ValueError: no labels in this fold",
    "FailsInPredict": "casino-strategy, fold3: the model {m} failed in predict(): RuntimeError: CUDA out of memory",
    "ReturnsNone": (
        "casino-strategy, fold1: the model {m}'s predict() returned None, not a list of one prediction per example"
    ),
}


@pytest.mark.parametrize("name", sorted(MODEL_ERRORS))
def test_a_model_that_fails_is_one_line_naming_it_and_the_fold(
    built: Bank, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    with pytest.raises(BenchError) as caught:
        run("casino-strategy", model=globals()[name]())
    assert str(caught.value) == MODEL_ERRORS[name].format(m=name)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    spec = f"test_bounded_inputs:{name}"
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--model", spec])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert [
        line for line in done.stderr.splitlines() if not line.startswith("[")
    ] == [  # "[ 0.1 s] ..." progress
        f"error: {MODEL_ERRORS[name].format(m=spec)}"
    ]
    debug = CliRunner().invoke(cli, ["--debug", "bench", "casino-strategy", "--model", spec])
    assert isinstance(debug.exception, BenchError)  # --debug: the exception, with the model's as its cause
    cause = {
        "ExitsInPredict": SystemExit,
        "FailsInFit": ValueError,
        "FailsInPredict": RuntimeError,
        "ReturnsNone": type(None),
        "RaisesABaseException": Stop,
        "RaisesGeneratorExit": GeneratorExit,
        "YieldsThenStops": Stop,
    }[name]
    assert type(debug.exception.__cause__) is cause


@pytest.mark.parametrize(
    ("module", "spec", "message"),
    [
        ("import sys\nsys.exit(4)\n", "exits:M", "cannot import 'exits' (SystemExit: 4)"),
        ("raise ValueError('no\\nway')\n", "fails:M", "cannot import 'fails' (ValueError: no way)"),
        (
            "x = (\n",
            "broken:M",
            "cannot import 'broken' (SyntaxError: '(' was never closed (broken.py, line 1))",
        ),
        (
            "import sys\nclass M:\n    def __init__(self):\n        sys.exit(3)\n",
            "quits:M",
            "M() failed: SystemExit: 3",
        ),
        (
            "class B(BaseException):\n    pass\nclass M:\n    def __init__(self):\n        raise B('init')\n",
            "stops:M",
            "M() failed: B: init",
        ),
    ],
)
def test_a_model_that_fails_as_it_is_loaded_is_one_line(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, spec: str, message: str
) -> None:
    """Fourth round. Before: ``--model mod:M`` whose module calls ``sys.exit(4)`` at import
    exited 4 ("not built") without a word, and one whose ``M()`` calls ``sys.exit(3)`` exited
    3; one raising a ``BaseException``, a ``ValueError`` or a ``SyntaxError`` at import was a
    traceback, exit 1. Each is one line naming it, exit 2, as a model failing in predict() is."""
    (tmp_path / f"{spec.split(':', maxsplit=1)[0]}.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--model", spec])
    assert (done.exit_code, done.output) == (2, f"error: --model {spec!r}: {message}\n")


def test_a_ranking_model_that_returns_a_number_is_one_line(built: Bank) -> None:
    with pytest.raises(BenchError) as caught:
        run("pec-response-selection", model=ReturnsANumber())
    assert str(caught.value) == (
        "pec-response-selection, test: the model ReturnsANumber's rank() returned a float, "
        "not a list of one prediction per example"
    )


def test_a_parquet_predictions_file_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    """Sixth round. Before: `--predictions mine.parquet` naming a FIFO waited for ever in
    pyarrow's open (SIGTERM too was not acted on until it returned); a link to /dev/zero is
    refused as well. Now the file is opened without blocking and refused unless regular, and
    the file checked is the one read."""
    fifo = tmp_path / "mine.parquet"
    os.mkfifo(fifo)
    device = tmp_path / "zero.parquet"
    device.symlink_to("/dev/zero")
    for path, kind in ((fifo, "a FIFO (named pipe)"), (device, "a device")):
        outcome: list[BaseException] = []
        reader = threading.Thread(target=lambda p=path, o=outcome: o.append(_raised(p)), daemon=True)
        reader.start()
        reader.join(5)
        if reader.is_alive():  # before: waiting on the FIFO; a writer's open and close let it go
            if path == fifo:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(5)
            pytest.fail(f"{path} was waited on")
        assert str(outcome[0]) == f"{path}: {kind}, not a regular file; pass a Parquet file"
    good = tmp_path / "good.parquet"
    convbank.bench.write_predictions(good, {"a": ["x"]})
    assert read_predictions(good) == {"a": ["x"]}


def _raised(path: Path) -> BaseException:
    try:
        read_predictions(path)
    except BaseException as exc:  # what it raised is the answer
        return exc
    raise AssertionError(f"{path} was read")


class ReturnsDeep:
    def predict(self, examples: list[Example]) -> list[Any]:
        deep: list[Any] = []
        for _ in range(5000):
            deep = [deep]
        return [deep for _ in examples]


class ReturnsHugeLabel:
    def predict(self, examples: list[Example]) -> list[list[str]]:
        huge = "x" * 10_000_000  # one string, in every prediction
        return [[huge] for _ in examples]


class ReturnsMixedSets:
    def predict(self, examples: list[Example]) -> list[set[Any]]:
        return [{1, "small-talk"} for _ in examples]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "ReturnsDeep",
            "casino-strategy, fold1: the model {m} returned a prediction nested more than 64 deep "
            "(example '543/0')",
        ),
        ("ReturnsHugeLabel", "('" + "x" * 79 + "… (10,000,000 characters) is not)"),
        (
            "ReturnsMixedSets",
            "4,615 malformed prediction(s) ('543/0', '543/1', '543/2', ...: expected a list of labels)",
        ),
    ],
)
def test_a_models_odd_predictions_are_one_short_line(
    built: Bank, monkeypatch: pytest.MonkeyPatch, name: str, said: str
) -> None:
    """Sixth round. Before: predictions nested 5,000 deep were a `RecursionError` traceback of
    2,990 lines, exit 1; a label of 10 MB was echoed whole in the error, a line of 10,000,557
    bytes; a set of labels of mixed kinds was a `TypeError` traceback (sorting it). Now each is
    one line of a few hundred bytes, exit 2."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    spec = f"test_bounded_inputs:{name}"
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--model", spec])
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[")]
    assert done.exit_code == 2 and len(lines) == 1, done.output[-500:]
    assert said.format(m=spec) in lines[0] and len(lines[0]) < 1000, lines[0][:500]


def test_a_negative_seed_is_one_line(built: Bank) -> None:
    """Fourth round. Before: ``bench casino-strategy -m random --seed=-1`` was numpy's
    ``ValueError: expected non-negative integer`` traceback, exit 1 (``run(seed=-1)`` and
    ``score`` too). Now the command line refuses it as any bad option value, exit 2, and
    Python says it in a BenchError before any work."""
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "random", "--seed=-1"])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.output.splitlines()[-1] == "Error: Invalid value for '--seed': -1 is not in the range x>=0."
    for seed in (-1, 1.5, "3"):
        with pytest.raises(BenchError) as caught:
            run("casino-strategy", model="random", seed=seed)  # type: ignore[arg-type]
        assert str(caught.value) == f"casino-strategy: the seed is a whole number from 0, not {seed!r}"
        with pytest.raises(BenchError):
            score("casino-strategy", {}, seed=seed)  # type: ignore[arg-type]


FORKING_MODELS = """
import os

class Forks:  # forks in each fold's predict; the child returns too
    def predict(self, examples):
        os.fork()
        return [[] for _ in examples]

class ForksInAGenerator:
    def predict(self, examples):
        os.fork()
        for _ in examples:
            yield []

class ForksAndRaises:  # the child raises
    def fit(self, examples, gold):
        if os.fork() == 0:
            raise ValueError("the child's own")

    def predict(self, examples):
        return [[] for _ in examples]

if os.environ.get("FORK_AT_IMPORT"):
    os.fork()
"""


@pytest.mark.parametrize(
    ("spec", "at_import"),
    [
        ("forking:Forks", ""),
        ("forking:ForksInAGenerator", ""),
        ("forking:ForksAndRaises", ""),
        ("forking:Forks", "1"),
    ],
)
def test_a_process_a_model_forks_never_goes_on_with_the_run(
    casino_home: Bank, tmp_path: Path, spec: str, at_import: str
) -> None:
    """Before: a model forking in each of the 5 folds' ``predict`` (or ``fit``, or a
    generator's body, or at import) and letting the child return had the child go on with
    convbank's run: ``bench --save`` printed 32 results and saved 32 runs (16 for a model
    forking at import, its child ran the whole command). The child now ends as it leaves the
    model's code: one result, one saved run, no child left."""
    import subprocess
    import sys

    (tmp_path / "forking.py").write_text(FORKING_MODELS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "FORK_AT_IMPORT": at_import}
    command = [sys.executable, "-m", "convbank", "bench", "casino-strategy", "--model", spec, "--save"]
    done = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode().count("casino-strategy · casino/default") == 1
    time.sleep(0.5)  # any child left would still be saving
    assert len(list((casino_home.root.parent / "bench" / "results").glob("*.json"))) == 1


def test_a_parquet_predictions_file_of_values_python_cannot_hold_is_one_line(
    casino_home: Bank, tmp_path: Path
) -> None:
    """Twelfth pass. Before: a Parquet predictions file holding a date or a timestamp Python
    cannot hold (the date ``infinity``, ``2**31 - 1`` days; a timestamp of ``2**63 - 1``
    microseconds; a duration of ``2**62`` s; in a list or a dictionary too) was an
    ``OverflowError`` traceback, exit 1. Now such a value is its text, as ``query`` writes
    it: a malformed prediction, or an id no example has, one line, exit 2."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 3
    ids = pa.array(["a", "b", "c"])
    far = pa.array([2**63 - 1] * n, pa.int64())
    columns = {
        "date": pa.array([2**31 - 1] * n, pa.int32()).cast(pa.date32()),
        "timestamp": far.cast(pa.timestamp("us")),
        "duration": pa.array([2**62] * n, pa.int64()).cast(pa.duration("s")),
        "dictionary": pa.array([2**31 - 1] * n, pa.int32()).cast(pa.date32()).dictionary_encode(),
        "list": pa.ListArray.from_arrays(list(range(n + 1)), far.cast(pa.timestamp("ns"))),
    }
    for name, column in columns.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"example_id": ids, "prediction": column}), path)
        values = list(read_predictions(path).values())
        assert len(values) == n and all(v not in (None, "") for v in values), (name, values)
    pq.write_table(pa.table({"example_id": columns["date"], "prediction": ids}), tmp_path / "ids.parquet")
    with pytest.raises(BenchError, match=r"duplicate example id\(s\) \('infinity'"):
        read_predictions(tmp_path / "ids.parquet")
    result = CliRunner().invoke(
        cli, ["bench", "casino-strategy", "--predictions", str(tmp_path / "date.parquet")]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "unknown example id(s)" in result.output


class _Raising(list):  # a list subclass whose own methods raise: a model's prediction
    def __iter__(self) -> Any:
        raise RuntimeError("iter")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    __hash__ = None  # type: ignore[assignment]


class _Label(str):
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")


class _Items(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items")


class PredictIsAProperty:
    @property
    def predict(self) -> Any:
        raise ValueError("no predict today")


class FitIsAProperty:
    @property
    def fit(self) -> Any:
        raise ValueError("no fit today")

    def predict(self, examples: Sequence[Example]) -> list[Any]:
        return [[] for _ in examples]


class ExitsAsLookedUp:
    def __getattribute__(self, name: str) -> Any:
        raise SystemExit(3)


class ReturnsHostileLists:
    def predict(self, examples: Sequence[Example]) -> list[Any]:
        return [_Raising(["self-need"]) for _ in examples]


class ReturnsHostileLabels:
    def predict(self, examples: Sequence[Example]) -> list[Any]:
        return [[_Label("self-need")] for _ in examples]


class ReturnsHostileDicts:
    def predict(self, examples: Sequence[Example]) -> list[Any]:
        return [_Items(a=1) for _ in examples]


LOOKUP_ERRORS = {
    "PredictIsAProperty": "casino-strategy: the model {m} failed as its predict() was looked up: "
    "ValueError: no predict today",
    "FitIsAProperty": "casino-strategy, fold1: the model {m} failed as its fit() was looked up: "
    "ValueError: no fit today",
    "ExitsAsLookedUp": "casino-strategy: the model {m} failed as its predict() was looked up: SystemExit: 3",
    "ReturnsHostileDicts": "casino-strategy: the model cannot be scored: 4,615 malformed prediction(s) "
    "('543/0', '543/1', '543/2', ...: expected a list of labels)",
}


@pytest.mark.parametrize("name", [*sorted(LOOKUP_ERRORS), "ReturnsHostileLists", "ReturnsHostileLabels"])
def test_a_models_own_code_run_by_reading_it_is_one_line(
    built: Bank, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Twelfth pass. Before: the model's code that convbank ran outside its guard was a
    traceback, exit 1: a ``predict`` or ``fit`` property that raises, a ``__getattribute__``
    calling ``sys.exit(3)`` (exit 3 without a word), predictions of a ``list`` subclass whose
    ``__iter__`` raises, of a ``str`` subclass whose ``__eq__`` raises, of a ``dict`` whose
    ``items`` raises. Now every contact with the model is guarded, and its predictions are
    read as plain data through the built-in types' own methods: one line, or a score."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    spec = f"test_bounded_inputs:{name}"
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--model", spec, "--json"])
    assert "Traceback" not in done.output
    if name in LOOKUP_ERRORS:
        assert done.exit_code == 2, done.output
        lines = [line for line in done.stderr.splitlines() if not line.startswith("[")]
        assert lines == [f"error: {LOOKUP_ERRORS[name].format(m=spec)}"]
    else:  # the lists and labels they hold, read as such
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["metrics"]["mean_f1"] == pytest.approx(0.0494, abs=1e-4)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[{"example_id": "a", "prediction": 1}]\n', 1),
        ('\ufeff\n  [\n  {"example_id": "a", "prediction": 1}\n]\n', 2),
    ],
)
def test_a_json_array_of_predictions_is_said_to_be_one(tmp_path: Path, text: str, line: int) -> None:
    """A predictions file that is one JSON array of rows, on one line or pretty-printed, is
    said to be a JSON array where JSON Lines is expected (before: "1 row(s) without
    example_id and prediction (row 1)" or "line(s) are not JSON", 2 of 2 layouts)."""
    path = tmp_path / "p.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenchError) as caught:
        read_predictions(path)
    assert str(caught.value) == (
        f'{path}: a JSON array (line {line} begins with "["); a predictions file holds one JSON '
        'object a line (JSON Lines), {"example_id": ..., "prediction": ...}, not an array of them'
    )
    assert (caught.value.path, caught.value.line) == (path, line)


@pytest.mark.parametrize(
    ("encoding", "found", "iconv"),
    [
        ("utf-16", "a UTF-16 byte-order mark (FF FE)", "UTF-16"),
        ("utf-16-be", "UTF-16BE text without a byte-order mark (NULs between its characters)", "UTF-16BE"),
        ("utf-32", "a UTF-32 byte-order mark (FF FE 00 00)", "UTF-32"),
    ],
)
def test_a_predictions_file_in_utf16_is_said_to_be_one(
    tmp_path: Path, encoding: str, found: str, iconv: str
) -> None:
    """A predictions file saved as UTF-16 or UTF-32 is refused naming its encoding, as an
    import is (before: "4,615 line(s) are not JSON (line 1, 2, 3, ...)", 2 of 2; found by
    pass 21's B, not fixed there)."""
    path = tmp_path / "p.jsonl"
    path.write_bytes('{"example_id": "543/0", "prediction": []}\n'.encode(encoding))
    with pytest.raises(BenchError) as caught:
        read_predictions(path)
    assert str(caught.value) == (
        f"{path}: expected UTF-8 text, found {found}; save it as UTF-8 (iconv -f {iconv} -t UTF-8)"
    )
    assert (caught.value.path, caught.value.line) == (path, 1)
