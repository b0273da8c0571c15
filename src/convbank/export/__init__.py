"""Exporters from the bank to other formats."""

from convbank.export.source import export_source

__all__ = ["export_source"]
