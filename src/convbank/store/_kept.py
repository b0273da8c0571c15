"""Entries a reader of record files checked and decompressed, kept to be served again
(:class:`Kept`, one budget for all the record files of a reader: :mod:`convbank.store.records`)."""

from __future__ import annotations

import threading

from convbank._forksafe import renew_after_fork

__all__ = ["KEPT_BYTES", "Kept"]

KEPT_BYTES = 16 * 2**20
"""Decompressed entries kept for the record files of one corpus, in bytes: a speaker's pooled
record (PEC: 13 conversations a speaker) or a conversation read again is then served from
bytes already checked, without reading, hashing and decompressing them again (1,000 random
PEC conversations read twice, measured here: 23 ms the second time without it, 7 ms with)."""


class Kept:
    """Entries checked and decompressed, shared by the record files of a reader, at most
    ``budget`` bytes of them, the oldest dropped first. Thread-safe.

    >>> kept = Kept(10)
    >>> kept.put((0, 1), b"12345"); kept.put((0, 2), b"123456"); kept.get((0, 1)) is None
    True
    """

    def __init__(self, budget: int = KEPT_BYTES) -> None:
        self.budget = budget
        self.held = 0
        self._entries: dict[tuple[int, int], bytes] = {}
        self._lock = threading.Lock()
        renew_after_fork(self, _lock=threading.Lock)  # a lock held at a fork would hang the child

    def get(self, key: tuple[int, int]) -> bytes | None:
        """The entry kept under ``key`` (a file's number and the entry's), or None."""
        return self._entries.get(key)

    def put(self, key: tuple[int, int], data: bytes) -> None:
        """Keep ``data`` under ``key``, dropping the oldest entries past the budget."""
        if len(data) > self.budget:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = data
            self.held += len(data)
            while self.held > self.budget:
                self.held -= len(self._entries.pop(next(iter(self._entries))))

    def order(self) -> list[tuple[int, int]]:
        """The keys kept, oldest first."""
        return list(self._entries)
