"""The ``source`` export reads a config's side table rows with its names quoted whatever they
hold: a (plugin) config named ``x' OR '1'='1`` is a name, not SQL. Before: the name was put
into the query as it was, so such a config read every config's rows (38 of PEC's personas, not
none), ``happy' --`` read happy's, and one holding a lone ``'`` was a query error taken as
"not built", 3 of 3 names."""

from __future__ import annotations

import convbank
from convbank.export.source import side_reader
from convbank.store import Bank


def test_a_configs_name_holding_a_quote_is_a_name_in_the_side_tables_query(built: Bank) -> None:
    pec = convbank.load("pec")
    happy = side_reader(pec, "happy")("pec_personas")
    assert happy is not None and happy.num_rows > 0
    every = pec.sql("SELECT count(*) AS n FROM pec_personas WHERE dataset = 'pec'")["n"][0].as_py()
    assert happy.num_rows < every
    assert side_reader(pec, "x' OR '1'='1")("pec_personas") is None
    assert side_reader(pec, "happy' --")("pec_personas") is None
