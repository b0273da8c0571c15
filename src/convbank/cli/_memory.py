"""A command that runs out of memory says so in one line (exit 5), as one out of files does:
under an address-space limit (``ulimit -v``) the failure shows as a ``MemoryError``, a thread
that cannot start (``RuntimeError: can't start new thread``) or a library that cannot be
loaded (``ImportError: ... failed to map segment from shared object``), each a traceback of
40 to 70 lines before. Failures inside native code (DuckDB's threads, OpenBLAS) end the
process where they happen and cannot be said (reliability.md)."""

from __future__ import annotations

__all__ = ["out_of_memory"]

_SAID = (
    "can't start new thread",
    "failed to map segment from shared object",
    "cannot allocate memory",
    "out of memory",
)
"""What a thread that cannot start and a library that cannot be mapped say, lower case."""


def out_of_memory(exc: BaseException) -> str | None:
    """The one line of ``exc`` when it is a want of memory, else None.

    >>> out_of_memory(MemoryError()).startswith("this process may use no more memory")
    True
    >>> out_of_memory(RuntimeError("boom")) is None
    True
    """
    if not isinstance(exc, MemoryError):
        said = str(exc).lower()
        if not isinstance(exc, (RuntimeError, ImportError)) or not any(s in said for s in _SAID):
            return None
    again = "raise the limit, or ask for less, and run the command again"
    return f"this process may use no more memory{_limit()}; {again}"


def _limit() -> str:
    """`` (its limit is 586 MiB: ulimit -v)`` under an address-space limit, else ``""``."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - no such limit (Windows)
        return ""
    if soft == resource.RLIM_INFINITY:
        return ""
    return f" (its limit is {soft // 2**20:,} MiB: ulimit -v)"
