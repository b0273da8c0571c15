"""What fetching keeps under ``CONVBANK_HOME`` is checked before it is used: a file standing
where the download cache needs a folder is the home's one-line error (exit 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.cli import cli
from convbank.errors import SetupError
from convbank.fetch import Fetcher

CASINO = catalog.get("casino")


@pytest.mark.parametrize("blocker", ["downloads", "downloads/casino"])
def test_a_file_in_place_of_the_cache_folder_is_the_home_error(tmp_path: Path, blocker: str) -> None:
    """Before: `SourceError` exit 3, `.../downloads/casino/casino_train.json: is unreadable (Not a
    directory) ... remove or rename it`, naming a file that is not there (2 of 2 runs each)."""
    home = tmp_path / "home"
    (home / blocker).parent.mkdir(parents=True, exist_ok=True)
    (home / blocker).write_text("notes", encoding="utf-8")
    said = (
        f"CONVBANK_HOME {home}: {home / blocker} is a file, not a folder; move it away or point "
        "CONVBANK_HOME at a writable folder"
    )
    with pytest.raises(SetupError) as info:
        Fetcher(root=home, offline=True).get(CASINO, CASINO.file("casino_valid.json"))
    assert str(info.value) == said
    done = CliRunner().invoke(
        cli, ["fetch", "casino"], env={"CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    )
    assert (done.exit_code, done.output) == (5, f"error: {said}\n")
