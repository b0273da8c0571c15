"""One module per dataset: its card, files, configs, reader and mapper."""

from convbank.datasets._base import ConfigSpec, Dataset, SourceFile
from convbank.datasets.casino import Casino
from convbank.datasets.ccpe import Ccpe
from convbank.datasets.convai2 import ConvAI2
from convbank.datasets.curiosity import Curiosity
from convbank.datasets.pec import Pec

BUILTIN: tuple[type[Dataset], ...] = (Casino, Ccpe, Curiosity, Pec, ConvAI2)
"""The dataset classes the catalog registers, in catalog order."""

__all__ = ["BUILTIN", "ConfigSpec", "Dataset", "SourceFile"]
