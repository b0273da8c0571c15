"""Where convbank keeps its files, and what the environment tells it.

Every ``CONVBANK_*`` variable is read here, and only here:

- ``CONVBANK_HOME``: convbank's folder (default: the user's cache folder for convbank); the
  bank is ``$CONVBANK_HOME/bank``, downloads ``$CONVBANK_HOME/downloads``;
- ``CONVBANK_OFFLINE``: a true value (1, true, yes, on) forbids downloads;
- ``CONVBANK_SOURCE``: a path list of folders holding source files;
- ``CONVBANK_EXTRACT_MAX_BYTES`` and ``CONVBANK_EXTRACT_MAX_MEMBERS``: what an archive may
  expand to (see :mod:`convbank._archive`).

A module of its own, at the bottom of the layers, so that readers of the bank (``load``,
``sql``, the viewer) need not import the build or the fetcher to find it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import platformdirs

from convbank.errors import SetupError

__all__ = [
    "bank_root",
    "check",
    "downloads_root",
    "env_flag",
    "env_number",
    "home",
    "is_offline",
    "source_dirs",
]


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    """Whether an environment variable is set to a true value (1, true, yes, on); unset or
    a false value (0, false, no, off) is False, anything else a :class:`SetupError`."""
    text = os.environ.get(name, "").strip()
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise SetupError(
        f"{name}={text!r} is neither true ({', '.join(_TRUE)}) nor false ({', '.join(_FALSE[1:])}); "
        "fix or unset it"
    )


def home() -> Path:
    """convbank's folder: ``$CONVBANK_HOME``, else the user's cache folder for convbank."""
    env = os.environ.get("CONVBANK_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("convbank"))


def bank_root() -> Path:
    """The bank folder: ``$CONVBANK_HOME/bank``."""
    return home() / "bank"


def downloads_root() -> Path:
    """Where downloads are cached: ``$CONVBANK_HOME/downloads``."""
    return home() / "downloads"


def is_offline() -> bool:
    """Whether ``CONVBANK_OFFLINE`` forbids network access."""
    return env_flag("CONVBANK_OFFLINE")


def source_dirs() -> list[Path]:
    """The folders ``CONVBANK_SOURCE`` lists (a path list), in order."""
    env = os.environ.get("CONVBANK_SOURCE", "")
    return [Path(p).expanduser() for p in env.split(os.pathsep) if p]


_SIZE = re.compile(r"(\d+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


def env_number(name: str, default: int, *, size: bool) -> int:
    """A positive number from the environment: bytes (``8G``, ``500M``, powers of 1024) when
    ``size``, else a plain count; ``default`` when unset. Anything else is a
    :class:`SetupError` naming the variable."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    match = _SIZE.fullmatch(text) if size else re.fullmatch(r"(\d+)()", text)
    if match is None or int(match[1]) == 0:
        what = "a size in bytes, optionally with K, M, G or T (powers of 1024), e.g. 8G"
        raise SetupError(
            f"{name}={text!r} is not {what if size else 'a positive whole number'}; fix or unset it"
        )
    return int(match[1]) << 10 * " kmgt".index(match[2].lower() or " ")  # K = 2**10, M = 2**20...


def check() -> None:
    """Read every ``CONVBANK_*`` setting once, so that a bad value is a :class:`SetupError`
    when a command starts, not only when (or if) the setting is first used."""
    is_offline()
    env_number("CONVBANK_EXTRACT_MAX_BYTES", 1, size=True)
    env_number("CONVBANK_EXTRACT_MAX_MEMBERS", 1, size=False)
