"""Commands that look after the bank and the catalog: ``doctor`` (check every bank file) and
``new-dataset`` (a new dataset package with its test)."""

from __future__ import annotations

from pathlib import Path

import click

from convbank._wording import counted
from convbank.errors import DamagedBankError

__all__ = ["doctor", "new_dataset"]


@click.command()
@click.option("--quick", is_flag=True, help="Skip the sha256 of every file (sizes, footers and counts only).")
@click.option("--clean", is_flag=True, help="Also remove what killed builds left behind.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def doctor(quick: bool, clean: bool, as_json: bool) -> None:
    """Check the bank: every file the manifest names is present, of its size, a readable
    Parquet file whose footer and row count are the manifest's, each split's counts those of
    its files, and (unless --quick) each file's sha256; list leftovers of killed builds.
    Exit 4 when a file is damaged (rebuild that dataset)."""
    from convbank.cli._console import echo_json, say
    from convbank.store.bank import Bank

    bank = Bank()
    if clean:
        with bank.lock(timeout=5):
            pass  # taking the build lock clears leftovers
    checkup = bank.doctor(deep=not quick)
    if as_json:
        echo_json(
            {
                "bank": str(bank.root),
                "files": checkup.files,
                "bytes": checkup.bytes,
                "problems": checkup.problems,
                "leftovers": [str(p) for p in checkup.leftovers],
            }
        )
    else:
        for problem in checkup.problems:
            say(f"damaged: {problem}")
        for path in checkup.leftovers:
            say(f"leftover: {path} (removed by `convbank doctor --clean` or the next build)")
        state = "sound" if not checkup.problems else f"{len(checkup.problems)} damaged"
        checked = f"{counted(checkup.files, 'file')}, {counted(checkup.bytes, 'byte')} checked"
        say(f"bank at {bank.root}: {checked}, {state}")
    if checkup.problems:
        raise click.exceptions.Exit(DamagedBankError.exit_code)


@click.command("new-dataset")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to write: the plugin project goes in DIR/convbank-NAME; with --builtin, DIR is a "
    "convbank checkout.",
)
@click.option(
    "--builtin",
    is_flag=True,
    help="Write src/convbank/datasets/NAME and tests/test_dataset_NAME.py of a convbank checkout instead.",
)
@click.option("--title", default=None, help="The dataset's title on its card.")
def new_dataset(name: str, directory: Path, builtin: bool, title: str | None) -> None:
    """Create a new dataset package with sample files and its test, which pass as generated:
    by default a plugin project (pip install -e it and convbank has the dataset); prints the
    files written. docs/adding-a-dataset.md says what to edit next."""
    from convbank.cli._console import err, one_line
    from convbank.scaffold import new_dataset as scaffold

    made = scaffold(name, directory, builtin=builtin, title=title)
    for path in made.files:
        click.echo(one_line(str(path)))  # a path's ESC drives no terminal
    project = made.package if builtin else made.package.parent.parent
    err.print(
        f"next: edit {made.package / 'dataset.py'} and the samples, then run "
        + (f"pytest {made.test}" if builtin else f"pip install -e '{project}[test]' && pytest {made.test}"),
        highlight=False,
        markup=False,
    )
