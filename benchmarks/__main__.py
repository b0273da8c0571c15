"""``python -m benchmarks [--quick] [--reps N] [--datasets casino,convai2,pec] [--import-turns N,M]``
``[--spark-sizes N,M]`` ``[--startup-only]`` ``[--storage-only]``.

Runs every contender in its own process, several times, on the same files; prints a Markdown
table per dataset with each contender's min and median seconds, peak memory, and its ratio
to convbank's build and to the floor; writes ``benchmarks/results/latest.json`` (``--quick``:
``quick.json``, untracked). Then the import rows (``benchmarks.imports``: a chat JSONL taken in
by convbank, Hugging Face and ConvoKit, under ``"imports"``) and the start-up of convbank's
printing commands beside the DuckDB CLI's and sqlite-utils' (``benchmarks.startup``), under
``"startup"`` in the results, and the Spark build against the local engine on a synthetic PEC
(``benchmarks.spark``, where Java is installed), under ``"spark"``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.contenders import CONTENDERS
from benchmarks.examples import EXAMPLES
from benchmarks.harness import environment, measure
from benchmarks.imports import SIZES, imports_table, run_imports
from benchmarks.spark import QUICK as SPARK_QUICK
from benchmarks.spark import SIZES as SPARK_SIZES
from benchmarks.spark import spark_rows
from benchmarks.startup import measure_startup, startup_table
from benchmarks.training import TRAINING

RESULTS = Path(__file__).resolve().parent / "results"
PEC_FULL, PEC_QUICK = 300_000, 30_000
"""Synthetic PEC conversations in all (train is five sixths; valid and test a twelfth each)."""


def _module(name: str) -> str:
    """The module that runs a contender: the training and example rows have their own."""
    if name in TRAINING:
        return "benchmarks.training"
    return "benchmarks.examples" if name in EXAMPLES else "benchmarks.contenders"


def table(dataset: str, results: dict[str, dict[str, float]]) -> str:
    """The Markdown tables of one dataset: every contender, then the peers paired by work
    (``convbank_<work>`` against ``hf_<work>`` and ``convokit_<work>``)."""
    base = results["convbank_build"]["min_s"]
    floor = results["floor"]["min_s"]
    lines = [
        f"### {dataset}",
        "",
        "| contender | min s | median s | peak RSS MiB | × convbank build | × floor |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        if "min_s" not in r:
            continue
        lines.append(
            f"| {name} | {r['min_s']:.3f} | {r['median_s']:.3f} | {r['peak_rss_mib']:.0f} | "
            f"{r['min_s'] / base:.2f} | {r['min_s'] / floor:.2f} |"
        )
    lines += [
        "",
        "| work | convbank s | Hugging Face s | ConvoKit s | HF ÷ convbank | ConvoKit ÷ convbank |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    if "convbank_build_1" in results:
        speedup = results["convbank_build_1"]["min_s"] / results["convbank_build"]["min_s"]
        worker = results["convbank_build"].get("peak_worker_rss_mib", 0)
        workers = f"; peak RSS of a worker process {worker:.0f} MiB" if worker else " (no worker process)"
        lines.insert(2, f"Build on every core: {speedup:.2f}× the speed of one process{workers}.\n")
    for work, ours in pairs(results).items():
        peers = [results.get(f"{peer}_{work}") for peer in ("hf", "convokit")]
        cells = [f"{p['min_s']:.3f}" if p else "–" for p in peers]
        ratios = [f"{p['min_s'] / ours['min_s']:.2f}" if p else "–" for p in peers]
        lines.append(f"| {work} | {ours['min_s']:.3f} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return "\n".join(lines)


def bank_size(bank: Path) -> dict[str, float]:
    """The bank's files on disk (generation records and locks aside), and its record files'
    share: the bank without them is the layout before them (the goal's "today")."""
    files = [p for p in bank.rglob("*") if p.is_file() and ".generations" not in p.parts]
    total = sum(p.stat().st_size for p in files if not p.name.endswith(".lock"))
    records = sum(p.stat().st_size for p in files if p.suffix == ".records")
    return {"mib": round(total / 2**20, 2), "records_mib": round(records / 2**20, 2)}


STORAGE = (
    "floor",
    "convbank_build",
    "hf_build",
    "convbank_open_get",
    "hf_open_get",
    "convbank_getitem_cold",
    "hf_getitem_cold",
    "convbank_getitem_warm",
    "hf_getitem_warm",
    "convbank_scan",
    "hf_scan",
)
"""The contenders of the goals table (:func:`goals`), in the order they must run (the Hugging
Face rows read the Arrow file ``hf_build`` writes): what ``--storage-only`` runs."""


def _row(
    lines: list[str],
    name: str,
    ours: float,
    theirs: float | None,
    ratio: float | None,
    *,
    goal: str,
    met: bool,
) -> None:
    """Append a row of the goals table."""
    peer = "–" if theirs is None else f"{theirs:,.1f}"
    lines.append(
        f"| {name} | {ours:,.1f} | {peer} | {'–' if ratio is None else f'{ratio:.2f}'} | {goal} | "
        f"{'yes' if met else '**no**'} |"
    )


def _faster(lines: list[str], results: dict[str, Any], work: str, name: str, bound: float) -> None:
    """Append the row of a work convbank must do ``bound`` times faster than Hugging Face."""
    ours, theirs = results.get(f"convbank_{work}"), results.get(f"hf_{work}")
    if ours and theirs:
        ratio = theirs["median_s"] / ours["median_s"]
        _row(
            lines,
            name,
            ours["median_s"] * 1e3,
            theirs["median_s"] * 1e3,
            ratio,
            goal=f"HF ÷ convbank >= {bound:g}",
            met=ratio >= bound,
        )


def goals(dataset: str, results: dict[str, Any]) -> str:
    """The rows of issue 33, each with its goal and whether this run meets it, from medians:
    1,000 random ``corpus[i]`` cold and warm against Hugging Face (1.5 times faster), the
    peak memory of those runs (Hugging Face's plus 50 MiB), the bank on disk against the bank
    without its record files (1.5 times at most), open + get one conversation (under 20 ms),
    a polars scan against ``polars.scan_parquet`` of a Hugging Face Parquet export (at least
    as fast), the build against Hugging Face's (twice as fast) and against the floor (three
    times it at most)."""
    lines = [
        f"Goals, {dataset} (medians of this run):",
        "",
        "| row | convbank | peer | ratio | goal | met |",
        "|---|---:|---:|---:|---|---|",
    ]

    row = partial(_row, lines)
    faster = partial(_faster, lines, results)
    faster("getitem_cold", "1,000 random `corpus[i]`, cold (ms)", 1.5)
    faster("getitem_warm", "1,000 random `corpus[i]`, warm (ms)", 1.5)
    ours_peak = [
        results[n]["peak_rss_mib"] for n in ("convbank_getitem_cold", "convbank_getitem_warm") if n in results
    ]
    hf_peak = [results[n]["peak_rss_mib"] for n in ("hf_getitem_cold", "hf_getitem_warm") if n in results]
    if ours_peak and hf_peak:
        row(
            "peak memory of those runs (MiB)",
            max(ours_peak),
            max(hf_peak),
            None,
            goal="<= HF + 50",
            met=max(ours_peak) <= max(hf_peak) + 50,
        )
    size = results.get("bank_size")
    if size:
        before = size["mib"] - size["records_mib"]
        row(
            "bank on disk (MiB; peer: without its record files)",
            size["mib"],
            before,
            size["mib"] / before,
            goal="<= 1.5× without them",
            met=size["mib"] <= 1.5 * before,
        )
    ours, theirs = results.get("convbank_open_get"), results.get("hf_open_get")
    if ours:
        ms = ours["median_s"] * 1e3
        ratio = theirs["median_s"] / ours["median_s"] if theirs else None
        row(
            "open a corpus and get one conversation (ms)",
            ms,
            theirs["median_s"] * 1e3 if theirs else None,
            ratio,
            goal="< 20 ms",
            met=ms < 20,
        )
    faster("scan", "polars scan, filtered, first collect (ms; peer: scan_parquet)", 1.0)
    faster("build", "build (ms)", 2.0)
    build, floor = results.get("convbank_build"), results.get("floor")
    if build and floor:
        times = build["median_s"] / floor["median_s"]
        row(
            "build over the floor (ms; peer: the floor)",
            build["median_s"] * 1e3,
            floor["median_s"] * 1e3,
            times,
            goal="<= 3× the floor",
            met=times <= 3,
        )
    return "\n".join(lines)


def pairs(results: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """convbank's contenders by the work they do (``convbank_iterate`` -> ``iterate``)."""
    return {
        name.removeprefix("convbank_"): r
        for name, r in results.items()
        if name.startswith("convbank_") and name != "convbank_build_1" and "min_s" in r
    }


def _parser() -> argparse.ArgumentParser:
    """The harness's options."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help=f"PEC at {PEC_QUICK:,} conversations, 1 run each"
    )
    parser.add_argument("--reps", type=int, default=None, help="runs per contender (default 3; quick 1)")
    parser.add_argument("--datasets", default="casino,convai2,pec")
    parser.add_argument(
        "--import-turns",
        default=None,
        help=f"turns of the chat JSONL of the import rows, comma-separated (default "
        f"{','.join(map(str, SIZES))}; quick {SIZES[0]}; 0: none)",
    )
    parser.add_argument(
        "--spark-sizes",
        default=None,
        help=f"PEC sizes of the Spark rows (default {SPARK_SIZES}, quick {SPARK_QUICK}; 0: none)",
    )
    parser.add_argument(
        "--startup-only", action="store_true", help="only the start-up table (results/startup.json)"
    )
    parser.add_argument(
        "--storage-only",
        action="store_true",
        help="only the storage layer's goals table (build, open + get, random access, scan, bank "
        "size, against Hugging Face): what CI runs with --quick (results/storage.json; quick: "
        "storage-quick.json, untracked)",
    )
    parser.add_argument(
        "--startup-reps", type=int, default=None, help="runs per start-up command (default 10; quick 1)"
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated contenders (default all); 'training' names the training rows and "
        "'examples' the example-view rows (they need floor, convbank_build and hf_build first)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: results/latest.json; --quick: results/quick.json (untracked)",
    )
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the harness; return the results."""
    args = _parser().parse_args(argv)
    reps = args.reps or (1 if args.quick else 3)
    out_name = "startup.json" if args.startup_only else ("quick.json" if args.quick else "latest.json")
    if args.storage_only:
        args.only, args.import_turns, args.spark_sizes = ",".join(STORAGE), "0", "0"
        out_name = "storage-quick.json" if args.quick else "storage.json"
    out = args.out or RESULTS / out_name
    results: dict[str, Any] = {"measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    everything = [*CONTENDERS, *TRAINING, *EXAMPLES]
    named = (args.only or ",".join(everything)).replace("training", ",".join(TRAINING))
    wanted = set(named.replace("examples", ",".join(EXAMPLES)).split(","))
    if wanted - set(everything):
        raise SystemExit(f"unknown contenders: {', '.join(sorted(wanted - set(everything)))}")
    env = environment()
    datasets = [] if args.startup_only else args.datasets.split(",")
    with tempfile.TemporaryDirectory(prefix="convbank-bench-") as tmp:
        for dataset in datasets:
            work = Path(tmp) / dataset
            work.mkdir()
            if dataset == "pec":
                from convbank.datasets.pec.synthetic import write_pec

                total = PEC_QUICK if args.quick else PEC_FULL
                write_pec(work / "pec-src", total * 5 // 6, seed=0)
            results[dataset] = {}
            for name in (n for n in everything if n in wanted):
                n = 1 if name.startswith("convokit_") and dataset == "pec" else reps
                results[dataset][name] = measure(_module(name), name, dataset, work, n, env=env)
                print(f"{dataset} {name}: {results[dataset][name]}", file=sys.stderr, flush=True)
                if name == "convbank_build":
                    results[dataset]["bank_size"] = bank_size(work / "bank")
            print(table(dataset, results[dataset]) + "\n", flush=True)
            print(goals(dataset, results[dataset]) + "\n", flush=True)
    turns = args.import_turns or ",".join(map(str, SIZES[:1] if args.quick else SIZES))
    sizes = () if args.startup_only else tuple(int(t) for t in turns.split(",") if int(t))
    if sizes:
        results["imports"] = run_imports(sizes, reps, env)
        print(imports_table(results["imports"]) + "\n", flush=True)
    if not args.startup_only:
        spark = spark_rows(args.spark_sizes, args.quick, env)
        results |= {"spark": spark} if spark else {}
    if not args.storage_only:
        results["startup"] = measure_startup(args.startup_reps or (1 if args.quick else 10), env)
        print(startup_table(results["startup"]) + "\n", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
