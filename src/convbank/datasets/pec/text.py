"""PEC's text format: ``speaker ---+--- utterance`` lines, continuation lines, closing
``*`` lines, ``persona.txt`` blocks; parsing (streamed, with one-line errors naming the line)
and writing them the publisher's way, and cutting a file into pieces at conversation ends."""

from __future__ import annotations

import mmap
import threading
from collections.abc import Iterable, Iterator
from itertools import pairwise
from pathlib import Path

from convbank._atomic import open_regular
from convbank.datasets.pec.records import END, END_LINE, SEPARATOR, Utterance
from convbank.errors import FormatError

__all__ = [
    "PersonaIndex",
    "boundaries",
    "conversation_block",
    "parse_lines",
    "persona_block",
    "persona_blocks",
    "trailer",
]


def _decode(raw: bytes, where: str, lineno: int, offset: int, path: Path) -> str:
    """A line as text; invalid UTF-8 is a one-line error with its line and byte (``where``
    names ``path`` in the message)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{where}: line {lineno}, byte {offset + exc.start}: invalid UTF-8 ({exc.reason}); "
            "expected UTF-8 text as published — re-fetch hf_pec.zip",
            path=path,
            line=lineno,
        ) from exc


_SHARED: dict[str, tuple[tuple[str, int, int], PersonaIndex]] = {}
_SHARED_LOCK = threading.Lock()


class PersonaIndex:
    """Byte offsets of each speaker's persona in a ``persona.txt``; sentences are decoded on
    demand, so the file is never held in memory as Python strings."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open_regular(path)
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size else b""
        self._offsets: dict[str, tuple[int, int]] = {}
        self._cache: dict[str, list[str]] = {}
        data = self._map
        pos = 0
        lineno = 0
        speaker: str | None = None
        start = 0
        size = len(data)
        while pos < size:
            nl = data.find(b"\n", pos)
            end = size if nl < 0 else nl
            lineno += 1
            line = _decode(data[pos:end], str(path), lineno, pos, path).strip()
            nxt = end + 1
            if line == END:
                if speaker is None:
                    raise FormatError(
                        f"{path}: line {lineno}: a '{END}' line with no speaker before it",
                        path=path,
                        line=lineno,
                    )
                self._offsets[speaker] = (start, pos)
                speaker = None
            elif line and speaker is None:
                speaker, start = line, nxt
            pos = nxt
        if speaker is not None:
            raise FormatError(
                f"{path}: ends inside the persona of {speaker!r}; expected a closing '{END}' "
                "line — the file may be truncated, re-fetch it",
                path=path,
            )

    @classmethod
    def shared(cls, path: Path) -> PersonaIndex:
        """The index of ``path``, made once per process while the file is unchanged (the
        splits of a config, and the pieces a build worker reads, share one ``persona.txt``);
        the index kept before it is closed."""
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        with _SHARED_LOCK:
            current = _SHARED.get("index")
            if current is not None and current[0] == key:
                return current[1]
            index = cls(path)
            if current is not None:
                current[1].close()
            _SHARED["index"] = (key, index)
            return index

    def __contains__(self, speaker: str) -> bool:
        return speaker in self._offsets

    def __len__(self) -> int:
        return len(self._offsets)

    def speakers(self) -> list[str]:
        """The speakers with a persona, in file order."""
        return list(self._offsets)

    CACHE = 8192
    """Personas kept decoded (speakers recur across conversations); the cache is emptied
    when it fills, so memory stays bounded whatever the file's size."""

    def get(self, speaker: str) -> list[str] | None:
        """The persona sentences of a speaker, or ``None`` if the file has none (the same
        list for the same speaker while it is cached: do not change it)."""
        cached = self._cache.get(speaker)
        if cached is not None:
            return cached
        span = self._offsets.get(speaker)
        if span is None:
            return None
        text = self._map[span[0] : span[1]].decode("utf-8")
        sentences = [s for s in (line.strip() for line in text.split("\n")) if s]
        if len(self._cache) >= self.CACHE:
            self._cache.clear()
        self._cache[speaker] = sentences
        return sentences

    def close(self) -> None:
        """Release the file."""
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._file.close()


def persona_blocks(path: Path) -> Iterator[tuple[str | None, list[str], str]]:
    """``(speaker, sentences, text)`` for each block of a ``persona.txt``, in file order:
    the speaker line, its sentences (stripped, blank lines skipped, as the publisher's loader
    reads them) and the block's exact text up to and including its closing line. Text after
    the last block (blank lines) comes last, with speaker ``None``."""
    speaker: str | None = None
    sentences: list[str] = []
    block: list[str] = []
    lineno = 0
    offset = 0
    with open_regular(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = _decode(raw, str(path), lineno, offset, path)
            offset += len(raw)
            block.append(line)
            content = line.strip()
            if content == END:
                if speaker is None:
                    raise FormatError(
                        f"{path}: line {lineno}: a '{END}' line with no speaker before it",
                        path=path,
                        line=lineno,
                    )
                yield speaker, sentences, "".join(block)
                speaker, sentences, block = None, [], []
            elif not content:
                continue
            elif speaker is None:
                speaker = content
            else:
                sentences.append(content)
    if speaker is not None:
        raise FormatError(
            f"{path}: ends inside the persona of {speaker!r} (line {lineno}); expected a closing "
            f"'{END}' line — the file may be truncated, re-fetch it",
            path=path,
            line=lineno,
        )
    if block:
        yield None, [], "".join(block)


def persona_block(speaker: str, sentences: Iterable[str]) -> str:
    """A persona block as the publisher writes it: speaker, one sentence a line, the end line."""
    return speaker + "\n" + "".join(s + "\n" for s in sentences) + END + "\n"


def conversation_block(utterances: Iterable[Utterance]) -> str:
    """A conversation as the publisher writes it: ``speaker ---+--- text`` a line (further
    lines of a text on lines of their own), then the end line."""
    out = []
    for u in utterances:
        first, _, rest = u.text.partition("\n")
        out.append(f"{u.speaker} {SEPARATOR} {first}\n")
        if rest:
            out.append(rest + "\n")
    out.append(END + "\n")
    return "".join(out)


def parse_lines(
    path: Path, start: int = 0, end: int | None = None
) -> Iterator[tuple[list[Utterance], str | None, int]]:
    """Yield the utterances of each conversation of a PEC text file, its exact text when it
    is not written the publisher's way (:func:`conversation_block`; blank lines before it
    included), else None, and its closing line number (counted from ``start``, a byte offset
    at a line start; ``end`` stops after the conversation that closes at or past that
    offset). Speakers and texts are stripped and blank lines skipped; a line without the
    separator continues the utterance before it."""
    utterances: list[Utterance] = []
    lines: list[str] = []
    block: list[str] = []
    usual = True  # every line so far is what conversation_block writes
    where = f"{path} (from byte {start})" if start else str(path)
    with open_regular(path) as f:
        f.seek(start)
        lineno = 0
        position = start
        for lineno, raw_bytes in enumerate(f, 1):
            if end is not None and position >= end and not utterances:
                return
            line = _decode(raw_bytes, where, lineno, position, path)
            position += len(raw_bytes)
            block.append(line)
            content = line.strip()
            usual = usual and line[:-1] == content and line[-1:] == "\n"
            if not content:
                usual = False
                continue
            if content == END:
                if lines:
                    utterances[-1].text = "\n".join(lines)
                if not utterances:
                    raise FormatError(
                        f"{where}: line {lineno}: a conversation with no utterance", path=path, line=lineno
                    )
                yield utterances, None if usual else "".join(block), lineno
                utterances, lines, block, usual = [], [], [], True
                continue
            speaker, sep, text = content.partition(SEPARATOR)
            if sep:
                if lines:
                    utterances[-1].text = "\n".join(lines)
                utterances.append(Utterance(speaker=speaker.strip(), text=""))
                lines = [text.strip()]
                usual = usual and speaker == utterances[-1].speaker + " " and text == " " + lines[0]
            elif utterances:
                lines.append(content)
            else:
                raise FormatError(
                    f"{where}: line {lineno}: expected 'speaker {SEPARATOR} utterance', got "
                    f"{content[:60]!r} with no utterance before it to continue",
                    path=path,
                    line=lineno,
                )
    if utterances:
        raise FormatError(
            f"{where}: ends inside a conversation (line {lineno}); expected a closing '{END}' "
            "line — the file may be truncated, re-fetch it",
            path=path,
            line=lineno,
        )


def trailer(path: Path) -> str:
    """The text after the last closing line of a PEC text file (normally none)."""
    size = path.stat().st_size
    if not size:
        return ""
    with open_regular(path) as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        last = None
        for m in END_LINE.finditer(data, max(0, size - (1 << 20))):
            last = m
        if last is None:
            for m in END_LINE.finditer(data):
                last = m
        if last is None:
            return data[:].decode("utf-8", "replace")
        after = last.end() + 1 if last.end() < size else size
        return data[after:].decode("utf-8", "replace")


def boundaries(path: Path, count: int) -> list[tuple[int, int]]:
    """Split a PEC text file into at most ``count`` byte ranges that each start right after a
    conversation's closing line (or at 0) and together cover the file."""
    size = path.stat().st_size
    cuts = [0]
    with open_regular(path) as f:
        for k in range(1, count):
            target = max(size * k // count, cuts[-1])
            f.seek(target)
            if target:
                f.readline()  # to the next line start
            while line := f.readline():
                if line.strip() == END.encode():
                    break
            at = f.tell()
            if cuts[-1] < at < size:
                cuts.append(at)
    cuts.append(size)
    return list(pairwise(cuts))
