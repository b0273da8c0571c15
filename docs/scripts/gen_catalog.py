"""Write one catalog page per dataset of the registry (mkdocs-gen-files runs this at build),
and the page of the tutorial's imported corpus: the pages themselves are made by
``catalog_pages.py`` beside this script."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalog_pages import catalog, cell, here, imported, page

names = catalog.names()
with mkdocs_gen_files.open("datasets/index.md", "w") as index:
    index.write(
        "# Datasets\n\nOne page per dataset of the catalog, generated from the registry at build "
        "time: a dataset another package adds as a plugin gets its page too.\n\n"
        "| dataset | title | licence | configs |\n|---|---|---|---|\n"
    )
    for name in names:
        d = catalog.get(name)
        index.write(
            f"| [`{name}`]({name}.md) | {cell(d.title)} | {cell(d.license)} | "
            f"{', '.join(c.name for c in d.configs)} |\n"
        )
with here() as bank:
    for name in names:
        with mkdocs_gen_files.open(f"datasets/{name}.md", "w") as f:
            f.write(page(name, bank.dataset(name)))
        mkdocs_gen_files.set_edit_path(f"datasets/{name}.md", "scripts/gen_catalog.py")
    # an imported dataset's page, made as a researcher's own corpus gets it: the tutorial's
    mine, found = imported(bank.root)
    with mkdocs_gen_files.open(f"datasets/{mine.name}.md", "w") as f:
        f.write(page(mine.name, found, mine))
    mkdocs_gen_files.set_edit_path(f"datasets/{mine.name}.md", "scripts/gen_catalog.py")
    with mkdocs_gen_files.open("datasets/index.md", "a") as index:
        index.write(
            f"\nAnd a dataset imported into a bank (`convbank import`), with the page any imported corpus "
            f"gets: [`{mine.name}`]({mine.name}.md), {cell(mine.title)} ({cell(mine.origin)}).\n"
        )
