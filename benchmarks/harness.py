"""What every benchmark module shares: where the data is, what each dataset's measured work
reads (its config and the conversation looked up), how one contender runs once in its own
process and prints its measurement, and how the harness runs it several times. Below the
contenders, the training and example rows and ``python -m benchmarks``, importing none of
them, so that no benchmark module imports another that imports it back.
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

SPECS: dict[str, dict[str, Any]] = {
    "casino": {"config": "default", "lookup": "157", "sources": "casino"},
    "convai2": {"config": "volunteers", "lookup": "volunteers-00500", "sources": "convai2"},
    "pec": {"config": "happy", "lookup": "happy-train-012345", "sources": "pec"},
}


def sources(dataset: str, work: Path) -> Path:
    """The folder of source files: shared data, or the synthetic PEC corpus in ``work``."""
    return work / "pec-src" if dataset == "pec" else SHARED / SPECS[dataset]["sources"]


def source_fetcher(dataset: str, work: Path) -> Any:
    """A convbank fetcher of ``dataset``'s sources, its home in ``work``."""
    from convbank.fetch import Fetcher

    return Fetcher(sources=[sources(dataset, work)], verify=False, root=work / "home", progress=False)


def measure_once(contender: Callable[[str, Path], Callable[[], None]], dataset: str, work: Path) -> None:
    """Prepare ``contender`` on ``dataset``, time its work once and print ``{"seconds",
    "peak_rss_mib", "peak_worker_rss_mib"}`` (what the harness reads back)."""
    import pyarrow as pa

    pa.table({"warm-up": [1]})  # pyarrow's first table imports pandas (0.2 s): an import, excluded
    go = contender(dataset, work)
    start = time.perf_counter()
    go()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        json.dumps(
            {"seconds": seconds, "peak_rss_mib": round(peak, 1), "peak_worker_rss_mib": round(worker, 1)}
        )
    )


def environment() -> dict[str, str]:
    """The contenders' environment: bytecode caches on, as in an installed package. pip
    byte-compiles the peers' packages when it installs them; an editable convbank is compiled
    here first, so that no contender pays for compiling its modules (a few milliseconds a
    dataset package, which an open + get would otherwise count)."""
    compileall.compile_dir(ROOT / "src" / "convbank", quiet=1)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(
    module: str, name: str, dataset: str, work: Path, reps: int, *, env: dict[str, str] | None = None
) -> dict[str, float]:
    """min and median seconds and the largest peak RSS over ``reps`` runs of ``python -m
    module name dataset work``."""
    runs = []
    for _ in range(reps):
        done = subprocess.run(
            [sys.executable, "-m", module, name, dataset, str(work)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        if done.returncode != 0:
            raise SystemExit(f"{name} on {dataset} failed:\n{done.stderr[-3000:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    seconds = [r["seconds"] for r in runs]
    return {
        "min_s": round(min(seconds), 4),
        "median_s": round(statistics.median(seconds), 4),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
        "peak_worker_rss_mib": max(r["peak_worker_rss_mib"] for r in runs),
    }


def flatness(peak: str, peaks: list[float], bound: float) -> list[str]:
    """The lines saying whether a ``peak`` (what it is the peak of) stays flat across the
    sizes measured: the largest size's over the smallest's, flat if at most ``bound``; none
    for one size.

    >>> flatness("convbank's peak memory", [160, 168], 1.25)[1].split(" is ")[1]
    "1.05\u00d7 the smallest's: flat."
    """
    if len(peaks) < 2:
        return []
    ratio = peaks[-1] / peaks[0]
    verdict = "flat" if ratio <= bound else "NOT flat"
    return ["", f"{peak} at the largest size is {ratio:.2f}× the smallest's: {verdict}."]
