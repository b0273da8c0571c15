"""A name that is no dataset is said with every dataset the bank knows, the imported ones too,
and a name that differs from one only in case is said to be that one."""

from __future__ import annotations

from pathlib import Path

import pytest

import convbank
from convbank.errors import UnknownDatasetError
from convbank.imports import import_conversations


def test_an_unknown_name_lists_the_imported_datasets_and_says_names_are_case_sensitive(
    tmp_path: Path,
) -> None:
    """Nineteenth pass. Before: ``convbank.load("HET")`` with ``het`` imported was `unknown
    dataset 'HET'; known datasets: casino, ccpe, curiosity, pec, convai2`, ``het`` unsaid and
    no word that names are case-sensitive (2 of 2 names)."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    import_conversations(path, name="het")
    with pytest.raises(UnknownDatasetError) as caught:
        convbank.load("HET")
    assert str(caught.value).startswith(
        "unknown dataset 'HET'; did you mean het? (names are case-sensitive) known datasets: casino, "
    )
    assert str(caught.value).endswith(", het")
    with pytest.raises(UnknownDatasetError, match=r"^unknown dataset 'zz'; known datasets: casino, .*, het$"):
        convbank.load("zz")
