"""convbank's version, in a module of its own so that every layer can read it without
importing the package's API."""

__version__ = "0.1.0"
