"""The ``convbank`` command line: a thin shell over the library."""

from convbank.cli.main import cli, main

__all__ = ["cli", "main"]
