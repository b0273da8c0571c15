"""Clients that send half a request's headers and reconnect as soon as the server closes the
connection (issue 35.4), and probes that time real requests meanwhile; loopback only, bounded
in clients and seconds.

Run the attackers in a process of their own, so that they do not share the probes' GIL::

    python tests/web/flood.py PORT CLIENTS SECONDS   # prints {"connects": ..., ...} as JSON
"""

from __future__ import annotations

import errno
import http.client
import json
import selectors
import socket
import statistics
import sys
import threading
import time

HALF = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: flood\r\n"
"""The first lines of a request's headers, never the blank line that ends them."""


def attack(port: int, clients: int, seconds: float) -> dict[str, int]:
    """Keep ``clients`` connections to 127.0.0.1:``port`` that each send :data:`HALF` and,
    once the server closes them (or refuses them), connect again at once; for ``seconds``."""
    selector = selectors.DefaultSelector()
    counts = {"connects": 0, "closed": 0, "failed": 0}
    missing = 0

    def connect() -> bool:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if s.connect_ex(("127.0.0.1", port)) not in (0, errno.EINPROGRESS):
            s.close()
            counts["failed"] += 1
            return False
        selector.register(s, selectors.EVENT_WRITE, False)
        return True

    def drop(s: socket.socket) -> None:
        selector.unregister(s)
        s.close()

    for _ in range(clients):
        missing += not connect()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        for key, _ in selector.select(timeout=0.2):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            if not key.data:  # connecting: send half the headers
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    counts["failed"] += 1
                    drop(s)
                    missing += 1
                    continue
                try:
                    s.send(HALF)
                except OSError:
                    counts["failed"] += 1
                    drop(s)
                    missing += 1
                    continue
                counts["connects"] += 1
                selector.modify(s, selectors.EVENT_READ, True)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:  # closed by the server: again
                counts["closed"] += 1
                drop(s)
                missing += 1
        while missing and time.monotonic() < stop:
            if not connect():
                break
            missing -= 1
    for key in list(selector.get_map().values()):
        drop(key.fileobj)  # type: ignore[arg-type]
    selector.close()
    return counts


def probe(port: int, seconds: float, threads: int = 3, pause: float = 0.05) -> list[tuple[float, int | str]]:
    """Real requests (``GET /``, a new connection each, 10 s timeout) from ``threads`` threads
    for ``seconds``: (seconds taken, status or the error's name) for each."""
    results: list[tuple[float, int | str]] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def run() -> None:
        while time.monotonic() < stop:
            start = time.monotonic()
            outcome: int | str
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.request("GET", "/")
                response = conn.getresponse()
                response.read()
                outcome = response.status
            except (OSError, http.client.HTTPException) as exc:
                outcome = type(exc).__name__
            finally:
                conn.close()
            with lock:
                results.append((time.monotonic() - start, outcome))
            time.sleep(pause)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + 15)
    return results


def summary(results: list[tuple[float, int | str]]) -> dict[str, object]:
    """How many probes were answered 200, how long they took (p50, p95, max; ms; None when
    none was), what the others got."""
    ok = sorted(t for t, outcome in results if outcome == 200)
    others: dict[str, int] = {}
    for _, outcome in results:
        if outcome != 200:
            others[str(outcome)] = others.get(str(outcome), 0) + 1
    return {
        "probes": len(results),
        "ok": len(ok) / max(len(results), 1),
        "p50_ms": round(1000 * statistics.median(ok)) if ok else None,
        "p95_ms": round(1000 * ok[int(0.95 * (len(ok) - 1))]) if ok else None,
        "max_ms": round(1000 * ok[-1]) if ok else None,
        "others": others,
    }


if __name__ == "__main__":
    print(json.dumps(attack(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))), flush=True)
