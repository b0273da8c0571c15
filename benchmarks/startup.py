"""Start-up of the command line: wall-clock seconds of whole commands (interpreter start,
imports, work, exit), convbank's beside the DuckDB CLI's and sqlite-utils', in the same run.

Each command runs ``reps`` times in a fresh process with the harness's environment (bytecode
caches on); convbank runs as ``python -m convbank`` on an empty ``CONVBANK_HOME``, offline.
The DuckDB CLI is the ``duckdb-cli`` package from PyPI: timed both through the launcher pip
installs (a Python script that execs the binary) and as the binary itself. sqlite-utils is
the ``sqlite-utils`` package. A peer that is not installed is left out of the table.
"""

from __future__ import annotations

import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONVBANK_COMMANDS = (["--version"], ["--help"], ["where"], ["list"], ["info", "casino"])
"""The commands that only read the catalog or print: each should start in under 0.25 s."""


def _which(command: str) -> str | None:
    """A command beside this interpreter (its virtualenv), else on the PATH."""
    return shutil.which(command, path=str(Path(sys.executable).parent)) or shutil.which(command)


def _peers(tmp: Path) -> dict[str, list[str]]:
    """The peers' commands, by the name the table gives them (those installed)."""
    peers: dict[str, list[str]] = {}
    launcher = _which("duckdb")
    if launcher:
        peers["duckdb --version (pip launcher)"] = [launcher, "--version"]
        peers["duckdb -c 'SELECT 42' (pip launcher)"] = [launcher, "-c", "SELECT 42"]
    try:
        import duckdb_cli  # type: ignore[import-not-found]

        binary = Path(duckdb_cli.__file__).parent / "duckdb"
        if binary.is_file():
            peers["duckdb --version (binary)"] = [str(binary), "--version"]
    except ImportError:
        pass
    utils = _which("sqlite-utils")
    if utils:
        db = tmp / "empty.db"
        subprocess.run([utils, "create-database", str(db)], check=True, capture_output=True)
        peers["sqlite-utils --version"] = [utils, "--version"]
        peers["sqlite-utils tables"] = [utils, "tables", str(db)]
    return peers


def _cpu() -> float:
    """CPU seconds (user and system) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str], reps: int, env: dict[str, str]) -> dict[str, float]:
    """Wall-clock seconds of ``reps`` runs (min and median), and the least CPU seconds one
    took: on a loaded machine the CPU time still compares the commands' own work."""
    seconds, cpu = [], []
    for _ in range(reps):
        used = _cpu()
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, env=env, check=False)
        seconds.append(time.perf_counter() - start)
        cpu.append(_cpu() - used)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr.decode(errors='replace')[-2000:]}")
    return {
        "min_s": round(min(seconds), 4),
        "median_s": round(statistics.median(seconds), 4),
        "cpu_s": round(min(cpu), 4),
    }


def measure_startup(reps: int, env: dict[str, str]) -> dict[str, Any]:
    """``{"convbank": {command: {min_s, median_s}}, "peers": {name: {...}}}``."""
    with tempfile.TemporaryDirectory(prefix="convbank-startup-") as tmp:
        home = Path(tmp) / "home"
        run_env = {**env, "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
        ours = {
            "convbank " + " ".join(args): _time([sys.executable, "-m", "convbank", *args], reps, run_env)
            for args in CONVBANK_COMMANDS
        }
        peers = {name: _time(cmd, reps, run_env) for name, cmd in _peers(Path(tmp)).items()}
    return {"convbank": ours, "peers": peers}


def startup_table(results: dict[str, Any]) -> str:
    """A Markdown table: every command's min and median wall-clock seconds and least CPU
    seconds, and convbank's commands as multiples of each peer's ``--version`` (min wall-clock;
    below 1: convbank starts faster)."""
    bases = {name: r["min_s"] for name, r in results["peers"].items() if "--version" in name}
    head = "| command | min s | median s | CPU s |" + "".join(f" ÷ {name} |" for name in bases)
    lines = ["### start-up", "", head, "|---|---:|---:|---:|" + "---:|" * len(bases)]
    for name, r in results["convbank"].items():
        ratios = "".join(f" {r['min_s'] / base:.2f} |" for base in bases.values())
        lines.append(f"| {name} | {r['min_s']:.3f} | {r['median_s']:.3f} | {r['cpu_s']:.3f} |{ratios}")
    for name, r in results["peers"].items():
        cells = f"| {name} | {r['min_s']:.3f} | {r['median_s']:.3f} | {r['cpu_s']:.3f} |"
        lines.append(cells + " |" * len(bases))
    return "\n".join(lines)
