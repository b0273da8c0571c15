"""The catalog page of an imported dataset: the corpus the tutorial of
``docs/guide/your-conversations.md`` writes and imports (its own code and command), as a bank
holds it, and the sections only an imported dataset's page has (``catalog_pages.page`` makes
the rest as for any dataset)."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from page_parts import Found, cell

from convbank.datasets import Dataset
from convbank.datasets._imported import ImportedDataset

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "guide" / "your-conversations.md"
"""The guide whose tutorial writes the corpus of the imported dataset's catalog page."""


def tutorial_import() -> tuple[str, str]:
    """The tutorial's first Python block (it writes the corpus) and its ``convbank import``
    command, as the guide gives them."""
    text = TUTORIAL.read_text(encoding="utf-8")
    code = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
    command = re.search(r"^convbank import .*$", text, re.M)
    assert code is not None and command is not None, f"{TUTORIAL}: no corpus written and imported"
    return code.group(1), command.group(0)


def imported(root: Path) -> tuple[Dataset, Found]:
    """The tutorial's corpus, written and imported as the tutorial does (its own code and
    ``convbank import`` command, run in ``root``), as the bank under ``root`` lists it, with
    its statistics."""
    from convbank.catalog import every
    from convbank.query import load
    from convbank.stats import stats
    from convbank.store import Bank

    code, command = tutorial_import()
    folder = root / "tutorial"
    folder.mkdir()
    with contextlib.chdir(folder):
        exec(compile(code, str(TUTORIAL), "exec"), {"__name__": "__docs__"})  # the guide's own block
    argv = shlex.split(command)
    env = {**os.environ, "CONVBANK_HOME": str(root)}
    subprocess.run(
        [sys.executable, "-m", "convbank", *argv[1:]], cwd=folder, env=env, check=True, capture_output=True
    )
    bank = Bank(root / "bank")
    name = argv[argv.index("--name") + 1]
    ds = next(d for d in every(bank.manifest()) if d.name == name)
    assert isinstance(ds, ImportedDataset)
    files = ", ".join(f"`{Path(f.path).name}`" for f in ds.entry.inputs)
    found = Found(
        folder,
        files,
        True,
        list(ds.stored),
        stats([name], bank=bank)[name],
        what=f"**the files it was imported from**, {files}, which the tutorial of "
        "[Your own conversations](../guide/your-conversations.md) writes",
        example=load(name, bank=bank)[0],
    )
    return ds, found


def import_it(d: ImportedDataset, found: Found) -> list[str]:
    """An imported dataset's "import it" section: the code that wrote its files and the
    ``convbank import`` that took them in (the tutorial's own), then what to do with it; the
    tests run the blocks."""
    code, command = tutorial_import()
    name = d.name
    return [
        "## Import it",
        "",
        f"This dataset is not published: it is the corpus the tutorial of [Your own conversations]"
        f"(../guide/your-conversations.md) writes and imports, and this page is what convbank makes of "
        f"any corpus imported into a bank. The tutorial's code writes {found.source}:",
        "",
        "```python",
        code.rstrip(),
        "```",
        "",
        "and one command imports it (the format is detected from the content):",
        "",
        "```bash",
        command,
        f"convbank info {name}                      # card, the files it was imported from, their sha256",
        f"convbank raw {name} -n 1                  # a record as it was read",
        'convbank query "SELECT config, split, count(*) FROM conversations '
        f"WHERE dataset = '{name}' GROUP BY ALL\"",
        f"convbank export {name} --format {d.entry.format} -o out/   # back to the format it came from",
        "```",
        "",
        "```python",
        "import convbank",
        "",
        f'corpus = convbank.load("{name}")',
        "print(corpus[0].conversation_id)   # a Conversation",
        'turns = corpus.to_pandas("turns")  # pandas (extra pandas)',
        "print(len(corpus), len(turns))",
        "```",
        "",
    ]


def imported_files(d: ImportedDataset) -> list[str]:
    """The files an imported dataset was read from (as the bank recorded them) and what
    their format does not carry."""
    out = ["## The files it was imported from", "", "| file | size | sha256 |", "|---|---|---|"]
    out += [f"| `{cell(Path(f.path).name)}` | {f.bytes:,} bytes | `{f.sha256}` |" for f in d.entry.inputs]
    return [
        *out,
        "",
        f"Read as `{d.entry.format}`; what that format does not carry: "
        f"{cell(d.entry.loses or 'not stated')}.",
    ]
