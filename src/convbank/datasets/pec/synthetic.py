"""A synthetic PEC corpus in the publisher's exact format, for scale tests and benchmarks."""

from __future__ import annotations

import random
from pathlib import Path

from convbank.datasets.pec.records import END, SEPARATOR

__all__ = ["write_pec"]

_WORDS = (
    "i feel so happy today because my friend finally came back home after a long year "
    "away and we talked about everything that happened work family dogs cats music "
    "running cooking"
).split()


def write_pec(root: Path, conversations: int, *, seed: int = 0, speakers: int = 5000) -> Path:
    """Write ``hf_pec/happy/{train,valid,test,persona}.txt`` with ``conversations`` examples
    in the train split (a tenth of that in valid and test) and return the ``hf_pec`` folder.

    Contexts have 1 to 6 utterances, some spread over continuation lines; every speaker but
    every 50th has a persona of 3 to 8 sentences.
    """
    rng = random.Random(seed)
    folder = root / "hf_pec" / "happy"
    folder.mkdir(parents=True, exist_ok=True)
    (root / "hf_pec" / "offmychest").mkdir(exist_ok=True)
    names = [f"user_{i:06d}" for i in range(speakers)]

    def sentence(n: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(n))

    with (folder / "persona.txt").open("w", encoding="utf-8") as f:
        for i, name in enumerate(names):
            if i % 50 == 49:
                continue
            f.write(name + "\n")
            f.writelines(sentence(rng.randint(4, 10)) + ".\n" for _ in range(rng.randint(3, 8)))
            f.write(END + "\n")
    for split, n in (
        ("train", conversations),
        ("valid", max(1, conversations // 10)),
        ("test", max(1, conversations // 10)),
    ):
        with (folder / f"{split}.txt").open("w", encoding="utf-8") as f:
            for _ in range(n):
                for _ in range(rng.randint(2, 7)):
                    f.write(f"{rng.choice(names)} {SEPARATOR} {sentence(rng.randint(3, 25))}\n")
                    if rng.random() < 0.05:
                        f.write(sentence(rng.randint(2, 8)) + "\n")
                f.write(END + "\n")
    for name in ("train", "valid", "test", "persona"):
        (root / "hf_pec" / "offmychest" / f"{name}.txt").write_text("", encoding="utf-8")
    return root / "hf_pec"
