"""A ``map()`` result is cached under the fingerprint of what its function computes with; a
class of one's own is part of that by its content: editing a method of a class defined in
the script (an instance given as the function, a class the function calls) computes again,
never serves the result of the code before the edit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from convbank.examples._fingerprint import fingerprint
from convbank.store import Bank

SCRIPT = """
import sys, convbank
class Count:
    def __call__(self, c):
        sys.argv.append("call")  # counted where no fingerprint looks
        return {"n": c.num_turns * FACTOR}
class Helper:
    @staticmethod
    def f(x):
        return x * FACTOR
def via_helper(c):
    sys.argv.append("call")  # counted where no fingerprint looks
    return {"n": Helper.f(c.num_turns)}
corpus = convbank.load("casino", split="valid")
print(corpus.map(Count())["n"][0], corpus.map(via_helper)["n"][0], len(sys.argv) - 1)
"""


def _runner(template: str, bank: Bank, tmp_path: Path) -> Callable[[int], str]:
    """Runs ``template`` with ``FACTOR`` replaced, as a script of its own, in a fresh process."""
    env = {**os.environ, "CONVBANK_HOME": str(bank.root.parent)}

    def run(factor: int) -> str:
        script = tmp_path / "job.py"
        script.write_text(template.replace("FACTOR", str(factor)))
        done = subprocess.run(
            [sys.executable, str(script)], check=True, capture_output=True, text=True, env=env
        )
        return done.stdout.strip()

    return run


def test_editing_a_method_of_ones_own_class_computes_the_map_again(casino_home: Bank, tmp_path: Path) -> None:
    run = _runner(SCRIPT, casino_home, tmp_path)
    assert run(1) == "12 12 60"
    assert run(2) == "24 24 60"  # before: "12 12 0", the first script's results
    assert run(2) == "24 24 0"  # the same code again: read from the cache
    assert run(1) == "12 12 0"


def test_an_installed_class_goes_by_name_and_a_fingerprint_is_stable() -> None:
    assert fingerprint(Path) == fingerprint(Path)
    assert fingerprint(fingerprint) == fingerprint(fingerprint)


WRAPPED = """
import functools, sys, convbank
@functools.lru_cache(maxsize=None)
def scaled(x):
    return x * FACTOR
def via_cached(c):
    sys.argv.append("call")  # counted where no fingerprint looks
    return {"n": scaled(c.num_turns)}
print(convbank.load("casino", split="valid").map(via_cached)["n"][0], len(sys.argv) - 1)
"""


def test_editing_a_function_behind_lru_cache_computes_the_map_again(
    casino_home: Bank, tmp_path: Path
) -> None:
    run = _runner(WRAPPED, casino_home, tmp_path)
    assert run(1) == "12 30"
    assert run(3) == "36 30"  # before: "12 0", the first script's results
    assert run(3) == "36 0"


SETS = """
import sys, convbank
STOP = {"the", "a", "and", "to", "i", "you", "of", "is", "it", "for", "that", "we"}
PAIRS = frozenset({("water", 1), ("food", 2), ("firewood", 3), ("hello", 4)})
def words(c, skip=frozenset({"ok", "yes", "no", "hi", "hey"})):
    sys.argv.append("call")  # counted where no fingerprint looks
    text = " ".join(t.text.lower() for t in c.turns)
    kept = [w for w in text.split() if w not in STOP and w not in skip and w not in {"um", "uh", "oh", "so"}]
    return {"n": len(kept) + len(PAIRS)}
print(convbank.load("casino", split="valid").map(words)["n"][0], len(sys.argv) - 1)
"""


def test_a_function_using_sets_is_read_back_whatever_the_hash_seed(casino_home: Bank, tmp_path: Path) -> None:
    """A set (a global, a default, the constant of ``w not in {...}``) is fingerprinted by its
    items, not its iteration order, which Python's hash seed decides (before: each run with a
    new seed, the default, computed the map again and wrote another cache entry, 3 of 3
    runs)."""
    script = tmp_path / "job.py"
    script.write_text(SETS)

    def run(seed: str) -> str:
        env = {**os.environ, "CONVBANK_HOME": str(casino_home.root.parent), "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script)], check=True, capture_output=True, text=True, env=env
        )
        return done.stdout.strip()

    first = run("1")
    assert first.endswith(" 30")  # computed: 30 conversations
    assert [run(seed) for seed in ("2", "3", "4")] == [first.replace(" 30", " 0")] * 3  # read back
    assert fingerprint({"b", "a"}) == fingerprint({"a", "b"}) != fingerprint(frozenset({"a", "b"}))


CLASS_DATA = """
import functools, threading
class Config:
    suffix = SUFFIX
    guard = threading.Lock()  # neither code nor a pickle: goes by its type
class Holder:
    @functools.cached_property
    def offset(self):
        return OFFSET
def via_class(c):
    return {"s": f"{c.num_turns + Holder().offset}{Config.suffix}"}
"""


def _script(suffix: str, offset: int) -> dict[str, object]:
    """``CLASS_DATA`` run as a script's ``__main__`` would be, with these values."""
    space: dict[str, object] = {"__name__": "__main__"}
    exec(CLASS_DATA.replace("SUFFIX", repr(suffix)).replace("OFFSET", str(offset)), space)
    return space


def test_a_class_attributes_value_and_a_cached_propertys_code_are_part_of_a_map_fingerprint(
    casino_home: Bank,
) -> None:
    """A constant read through a class of one's own (``Config.suffix``) and the body of a
    ``functools.cached_property`` are what the function computes with (before: editing either
    served the result of the script before the edit, 2 of 2 edits each: ``'12!'`` for ``?``,
    ``12`` for an offset of 5); an attribute that does not pickle (a lock) goes by its type."""
    import convbank

    corpus = convbank.load("casino", split="valid")
    runs = [(suffix, offset) for suffix, offset in (("!", 0), ("?", 0), ("!", 5), ("?", 5), ("!", 0))]
    got = [corpus.map(_script(*values)["via_class"])["s"][0] for values in runs]  # type: ignore[arg-type]
    assert got == ["12!", "12?", "17!", "17?", "12!"]
    assert fingerprint(_script("!", 0)["Config"]) == fingerprint(_script("!", 0)["Config"])
    assert fingerprint(_script("!", 0)["Config"]) != fingerprint(_script("?", 0)["Config"])
    assert fingerprint(_script("!", 0)["Holder"]) != fingerprint(_script("!", 5)["Holder"])
