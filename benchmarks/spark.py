"""The Spark build against the local engine on a synthetic PEC (issue 33, item 4):
``python -m benchmarks.spark [--quick] [--sizes 300000,1000000] [--reps N]``, also run by
``python -m benchmarks`` (``--spark-sizes``).

Each build runs in its own process (the driver): the local engine with a worker process a
core, or Spark on ``local[2]``, whose tasks write the bank's files (the session is started
before the clock: ``session_s`` is that start, apart). While it runs, this process samples
the memory of the driver's process tree every 0.05 s from ``/proc``: the driver Python
process, the JVM (``java``) and the worker processes (every other Python process below the
driver: the local engine's workers, or PySpark's daemon and the workers it forks), all
together and the largest one; the driver's exact peak also comes from its own
``getrusage``. After both builds of a size the two banks' manifests are compared (every
file's sha256 and rows): ``equal`` says whether Spark wrote the local engine's bank.
Sizes are conversations in all (train five sixths, valid and test a twelfth each), as in the
harness.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import flatness

SIZES = (300_000, 1_000_000)
QUICK = (30_000,)
ENGINES = ("local", "spark")
MASTER = "local[2]"
RESULTS = Path(__file__).resolve().parent / "results"


def build_once(engine: str, work: Path) -> None:
    """In the driver process: build PEC ``happy`` from ``work/pec-src`` into
    ``work/bank-<engine>`` and print ``{"seconds", "session_s", "driver_peak_mib"}``::

        build_once("spark", Path("/tmp/bench/pec-300000"))
    """
    from benchmarks.harness import source_fetcher
    from convbank.build import build
    from convbank.engines.local import LocalEngine
    from convbank.engines.spark import SparkEngine, session
    from convbank.store import Bank

    bank = work / f"bank-{engine}"
    shutil.rmtree(bank, ignore_errors=True)
    start = time.perf_counter()
    if engine == "spark":
        session(MASTER)  # the JVM's start, timed apart
    session_s = time.perf_counter() - start
    chosen = SparkEngine(MASTER) if engine == "spark" else LocalEngine()
    start = time.perf_counter()
    report = build(
        ["pec"], config="happy", fetcher=source_fetcher("pec", work), bank=Bank(bank), engine=chosen
    )
    seconds = time.perf_counter() - start
    if not report.ok:
        raise SystemExit(f"build failed: {report.failures or report.errors}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "session_s": session_s, "driver_peak_mib": round(peak, 1)}))


def _processes() -> dict[int, tuple[int, str, int]]:
    """Every process as ``pid: (parent pid, command name, resident bytes)``."""
    page = os.sysconf("SC_PAGE_SIZE")
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{entry.name}/statm", encoding="ascii") as f:
                rss = int(f.read().split()[1]) * page
        except OSError:  # ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        found[int(entry.name)] = (parent, name, rss)
    return found


def sample_tree(root: int) -> dict[str, float]:
    """One sample of ``root``'s process tree, in MiB: the driver, the JVMs, the other
    Python processes together and the largest of them::

        sample_tree(os.getpid())   # {"driver": 80.1, "jvm": 0.0, "workers": 0.0, "worker_max": 0.0}
    """
    table = _processes()
    below: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, (parent, _, _) in table.items() if parent == pid]
        below += kids
        todo += kids
    mib = 2**20
    jvm = [table[p][2] for p in below if table[p][1] == "java"]
    workers = [table[p][2] for p in below if table[p][1].startswith("python")]
    return {
        "driver": table[root][2] / mib if root in table else 0.0,
        "jvm": sum(jvm) / mib,
        "workers": sum(workers) / mib,
        "worker_max": max(workers, default=0) / mib,
    }


def measure_build(engine: str, work: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    """Run :func:`build_once` in a fresh driver process, sampling its tree's memory; its
    seconds, session start and peaks (MiB) by process kind::

        measure_build("local", Path("/tmp/bench/pec-30000"))   # {"seconds": 3.1, ...}
    """
    root = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.spark", "--child", engine, str(work)],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    peaks = dict.fromkeys(("driver", "jvm", "workers", "worker_max"), 0.0)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            for kind, mib in sample_tree(child.pid).items():
                peaks[kind] = max(peaks[kind], mib)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = child.communicate()
    done.set()
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"the {engine} build failed:\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result |= {f"peak_{kind}_mib": round(mib, 1) for kind, mib in peaks.items()}
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}


def _files(bank: Path) -> list[tuple[str, Any, Any]]:
    """Every file the bank's manifest names, with its sha256 and rows, in order."""
    manifest = json.loads((bank / "manifest.json").read_text(encoding="utf-8"))
    entries = []
    for config in manifest["datasets"]["pec"]["configs"].values():
        entries += [e for splits in config["files"].values() for e in splits.values()]
        entries += list(config["records"].values())
    flat = [one for e in entries for one in (e if isinstance(e, list) else [e])]
    return [(one["path"], one["sha256"], one["rows"]) for one in flat]


def run_spark(sizes: tuple[int, ...], reps: int = 1, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Both engines at each size (the best of ``reps`` runs by seconds); ``{"pec-<n>":
    {"local": ..., "spark": ..., "equal": bool, "files": n}}``::

        run_spark((30_000,))
    """
    from convbank.datasets.pec.synthetic import write_pec

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="convbank-bench-spark-") as tmp:
        for size in sizes:
            work = Path(tmp) / f"pec-{size}"
            write_pec(work / "pec-src", size * 5 // 6, seed=0)
            row: dict[str, Any] = {}
            for engine in ENGINES:
                runs = [measure_build(engine, work, env) for _ in range(reps)]
                row[engine] = min(runs, key=lambda r: r["seconds"])
                print(f"pec-{size} {engine}: {row[engine]}", file=sys.stderr, flush=True)
            local, spark = _files(work / "bank-local"), _files(work / "bank-spark")
            row |= {"equal": local == spark, "files": len(local)}
            results[f"pec-{size}"] = row
            shutil.rmtree(work, ignore_errors=True)
    return results


def spark_table(results: dict[str, Any]) -> str:
    """The rows as Markdown: seconds (and the session's start), peak memory by process kind,
    whether the banks are equal, and whether the driver's peak stayed flat::

        print(spark_table(run_spark((30_000,))))
    """
    lines = [
        f"### PEC built by Spark ({MASTER}, tasks write the bank) and by the local engine",
        "",
        "| conversations | engine | build s | session start s | driver MiB | JVM MiB | workers MiB "
        "(largest) | banks equal |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, row in results.items():
        equal = f"{'yes' if row['equal'] else '**no**'} ({row['files']} files)"
        for engine in ENGINES:
            r = row[engine]
            lines.append(
                f"| {int(name.split('-')[1]):,} | {engine} | {r['seconds']:.1f} | {r['session_s']:.1f} "
                f"| {r['driver_peak_mib']:.0f} | {r['peak_jvm_mib']:.0f} | {r['peak_workers_mib']:.0f} "
                f"({r['peak_worker_max_mib']:.0f}) | {equal} |"
            )
    lines += flatness(
        "The Spark driver's peak", [row["spark"]["driver_peak_mib"] for row in results.values()], 1.1
    )
    return "\n".join(lines)


def spark_rows(sizes: str | None, quick: bool, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The harness's Spark rows (``sizes`` as ``--spark-sizes`` gives them: None for the
    default, ``0`` for none), printed; ``{}`` without Java::

        spark_rows("3000", quick=True)   # {"pec-3000": {"local": ..., "spark": ..., ...}}
    """
    chosen = tuple(int(n) for n in (sizes or ",".join(map(str, QUICK if quick else SIZES))).split(","))
    if not any(chosen):
        return {}
    if shutil.which("java") is None:
        print("The Spark rows are skipped: no Java on this machine.\n", flush=True)
        return {}
    results = run_spark(tuple(n for n in chosen if n), 1, env)
    print(spark_table(results) + "\n", flush=True)
    return results


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the rows, print the table, write ``results/spark.json`` (``--quick``:
    ``spark-quick.json``, untracked)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"PEC at {QUICK[0]:,} conversations only")
    parser.add_argument("--sizes", default=None, help="conversations in all, comma-separated")
    parser.add_argument("--reps", type=int, default=1, help="runs per engine and size (the best is kept)")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        build_once(args.child[0], Path(args.child[1]))
        return {}
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (QUICK if args.quick else SIZES)
    results = run_spark(sizes, args.reps)
    print(spark_table(results))
    out = RESULTS / ("spark-quick.json" if args.quick else "spark.json")
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
