"""``convbank serve`` as a running server for the viewer's tests: a :class:`Server` on a free
loopback port, and :func:`_load`, a load of real page requests from many clients at once
(``from viewer import Server``)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from testsupport import ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """``convbank serve`` in its own process; what it writes to stderr goes to a file (a pipe
    nobody reads would block a server that logs more than the pipe holds)."""

    def __init__(self, home: Path, *args: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = home.parent / f"serve-{self.port}.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from convbank.cli import main; main()",
                    "serve",
                    "--port",
                    str(self.port),
                    *args,
                ],
                env={**os.environ, "CONVBANK_HOME": str(home), "PYTHONPATH": str(ROOT / "src")},
                stderr=log,
            )
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                httpx.get(self.url + "/", timeout=2)
                self.banner = self.stderr().partition("\n")[0] + "\n"
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"the server did not start: {self.stderr()}")

    def stderr(self) -> str:
        """What the server has written to stderr so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        finally:
            self.proc.kill()  # no-op when it exited


PAGES = [
    "/datasets/casino/conversations/{casino}",
    "/datasets/convai2/conversations/{convai2}",
    "/datasets/ccpe/conversations/CCPE-8e113",
    "/datasets/curiosity/conversations/21922",
    "/datasets/pec/conversations/happy-train-000000",
    "/datasets/casino?label=strategy%3Auv-part&page=2",
    "/datasets/convai2?field=eval_score&value=5",
    "/",
    "/sql?q=SELECT+dataset%2C+count(*)+FROM+conversations+GROUP+BY+1",
]


def _load(url: str, clients: int, seconds: float) -> dict[str, object]:
    casino = [str(i) for i in range(0, 1030, 7)]
    convai2 = [f"volunteers-{i:05d}" for i in range(0, 1111, 11)]

    async def run() -> tuple[list[float], dict[int | str, int]]:
        latencies: list[float] = []
        statuses: dict[int | str, int] = {}
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            stop = time.perf_counter() + seconds

            async def one(n: int) -> None:
                i = n
                while time.perf_counter() < stop:
                    path = PAGES[i % len(PAGES)].format(
                        casino=casino[i % len(casino)], convai2=convai2[i % len(convai2)]
                    )
                    i += clients
                    start = time.perf_counter()
                    try:
                        response = await client.get(path)
                    except httpx.TransportError as exc:  # counted; this client stops
                        statuses[type(exc).__name__] = statuses.get(type(exc).__name__, 0) + 1
                        return
                    latencies.append(time.perf_counter() - start)
                    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

            await asyncio.gather(*(one(n) for n in range(clients)))
        return latencies, statuses

    begin = time.perf_counter()
    latencies, statuses = asyncio.run(run())
    elapsed = time.perf_counter() - begin
    latencies = sorted(latencies) or [float("nan")]  # none answered: the figures say so
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
        "statuses": statuses,
    }
