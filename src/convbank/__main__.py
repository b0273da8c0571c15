"""``python -m convbank``: the command line, as the ``convbank`` script runs it."""

from convbank.cli import main

main()
