"""Write the exports page's table of formats from the registry (mkdocs-gen-files runs this
at build): the table itself is made by ``formats_table.py`` beside this script."""

from __future__ import annotations

import sys
from pathlib import Path

import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
from formats_table import with_import_table, with_table

with mkdocs_gen_files.open("guide/exports.md", "r") as f:
    page = f.read()
with mkdocs_gen_files.open("guide/exports.md", "w") as f:
    f.write(with_table(page))
with mkdocs_gen_files.open("guide/your-conversations.md", "r") as f:
    page = f.read()
with mkdocs_gen_files.open("guide/your-conversations.md", "w") as f:
    f.write(with_import_table(page))
