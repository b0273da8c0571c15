"""``convbank new-dataset``: a new dataset package with sample files and its test, written
from the templates in ``convbank/templates/dataset/``, that pass as generated.

Two shapes, one package:

- a plugin project (the default): ``DIR/convbank-NAME/`` with ``pyproject.toml`` (the
  ``convbank.datasets`` entry point), ``src/convbank_NAME/`` and ``tests/test_NAME.py``;
  ``pip install -e`` it and convbank has the dataset;
- a built-in dataset (``builtin=True``, ``DIR`` a convbank checkout):
  ``src/convbank/datasets/NAME/`` and ``tests/test_dataset_NAME.py``, and its line at the end
  of :data:`convbank.datasets.BUILTIN` (the one way the catalog finds a built-in).

The package follows the Dataset contract: ``records.py`` (the raw types), ``dataset.py``
(card, files, reader taking a :class:`~convbank.model.Part`, mapper both ways, writer) and
``present.py`` (the :class:`~convbank.datasets.Presentation` the dataset holds).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import keyword
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

import msgspec

from convbank import catalog
from convbank.errors import ScaffoldError

__all__ = ["Scaffolded", "new_dataset"]

NAME = re.compile(r"[a-z][a-z0-9_]{1,30}")


@dataclass(frozen=True)
class Scaffolded:
    """What :func:`new_dataset` wrote: the package folder, its test and every file."""

    package: Path
    test: Path
    files: list[Path]


def _samples(name: str) -> dict[str, bytes]:
    """Sample files in the template's format (JSON Lines), two conversations to train, one to
    test: what the generated card's sha256 and counts describe."""
    encode = msgspec.json.encode

    def record(n: int, topic: str, *turns: tuple[str, str]) -> bytes:
        return encode(
            {
                "id": f"{name}-{n:03d}",
                "topic": topic,
                "turns": [{"speaker": s, "text": t} for s, t in turns],
            }
        )

    train = [
        record(
            1,
            "opening hours",
            ("user", "When do you open on Sundays?"),
            ("assistant", "We open at 10 am on Sundays."),
            ("user", "Thanks!"),
        ),
        record(2, "delivery", ("user", "Do you deliver to Ørestad?"), ("assistant", "Yes, within two days.")),
    ]
    test = [
        record(
            3,
            "returns",
            ("user", "Can I return a gift?"),
            ("assistant", "Yes, within 30 days with the receipt."),
        )
    ]
    return {
        f"{name}_train.jsonl": b"".join(r + b"\n" for r in train),
        f"{name}_test.jsonl": b"".join(r + b"\n" for r in test),
    }


def _render(template: str, values: dict[str, str]) -> str:
    text = resources.files("convbank").joinpath("templates", "dataset", template).read_text(encoding="utf-8")
    return Template(text).substitute(values)


_BUILTIN = re.compile(r"^BUILTIN: tuple\[str, \.\.\.\] = \(\n(?:    \"[^\"\n]*\",\n)*", re.M)


def _listed(listing: Path, spec: str) -> str:
    """The text of a checkout's ``convbank/datasets/__init__.py`` with ``spec`` added at the
    end of its ``BUILTIN`` tuple (one ``"module:Class",`` line each)."""
    try:
        text = listing.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(
            f"{listing}: cannot read the list of built-in datasets ({exc.strerror})", path=listing
        ) from exc
    found = _BUILTIN.search(text)
    if found is None:
        raise ScaffoldError(
            f'{listing}: no BUILTIN tuple of one "module:Class" line each; add {spec!r} to it by hand',
            path=listing,
        )
    return text[: found.end()] + f'    "{spec}",\n' + text[found.end() :]


def new_dataset(name: str, directory: Path, *, builtin: bool = False, title: str | None = None) -> Scaffolded:
    """Write a new dataset package named ``name`` with its samples and test under
    ``directory`` (see the module's docstring for the two shapes; a built-in is also added to
    the checkout's ``BUILTIN``); nothing is overwritten.

    Example::

        from pathlib import Path
        from convbank.scaffold import new_dataset

        made = new_dataset("shopchat", Path("."), title="Shop chats")
        print(made.package)  # convbank-shopchat/src/convbank_shopchat
    """
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ScaffoldError(
            f"{name!r} is not a dataset name: use 2 to 31 lowercase letters, digits and underscores, "
            "starting with a letter",
            name=name,
        )
    if name in catalog.catalog:
        raise ScaffoldError(
            f"a dataset named {name!r} is already registered ({catalog.catalog.origin(name)})",
            name=name,
        )
    if builtin:
        if not (directory / "src" / "convbank" / "datasets").is_dir():
            raise ScaffoldError(
                f"{directory} is not a convbank checkout (no src/convbank/datasets)",
                name=name,
                path=directory,
            )
        package_dir = directory / "src" / "convbank" / "datasets" / name
        test = directory / "tests" / f"test_dataset_{name}.py"
        package, root = f"convbank.datasets.{name}", package_dir
    else:
        root = directory / f"convbank-{name}"
        package = f"convbank_{name}"
        package_dir = root / "src" / package
        test = root / "tests" / f"test_{name}.py"
    for path in (root if not builtin else package_dir, test):
        if path.exists():
            raise ScaffoldError(f"{path} exists already; choose another name or folder", name=name, path=path)
    samples = _samples(name)
    values = {
        "name": name,
        "title": title or f"{name}: conversations",
        "class_name": "".join(part.capitalize() for part in name.split("_")),
        "package": package,
        "project": f"convbank-{name}",
        "year": str(dt.date.today().year),
        "sha_train": hashlib.sha256(samples[f"{name}_train.jsonl"]).hexdigest(),
        "sha_test": hashlib.sha256(samples[f"{name}_test.jsonl"]).hexdigest(),
        "size_train": str(len(samples[f"{name}_train.jsonl"])),
        "size_test": str(len(samples[f"{name}_test.jsonl"])),
    }
    texts = {
        package_dir / f"{module}.py": _render(f"{module}.py.tmpl", values)
        for module in ("__init__", "records", "dataset", "present")
    }
    texts[test] = _render("test_dataset.py.tmpl", values)
    listing = directory / "src" / "convbank" / "datasets" / "__init__.py"
    if builtin:
        texts[listing] = _listed(listing, f"{package}:{values['class_name']}")
    if not builtin:
        texts[root / "pyproject.toml"] = _render("pyproject.toml.tmpl", values)
        texts[root / "README.md"] = _render("README.md.tmpl", values)
    written = []
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    (package_dir / "samples").mkdir()
    for file_name, data in samples.items():
        (package_dir / "samples" / file_name).write_bytes(data)
        written.append(package_dir / "samples" / file_name)
    return Scaffolded(package_dir, test, sorted(written))
