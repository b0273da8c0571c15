"""Modules imported when first used: ``pa = lazy("pyarrow")`` at the top of a module costs
nothing until ``pa.table(...)`` runs, so that commands which never touch Arrow (``convbank
list``, ``info``, ``--help``) start without importing pyarrow and NumPy (about half a second).

Write it beside the real import, for the type checker::

    if TYPE_CHECKING:
        import pyarrow as pa
    else:
        pa = lazy("pyarrow")
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["lazy"]


class _Lazy(ModuleType):
    """Stands for a module until an attribute is read, then hands over the real one's."""

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self.__name__)
        # the real module's names copied in: from now on a name is found without this call
        # (a build reads pa.* thousands of times: 0.11 s of PEC's, profiled, went here)
        self.__dict__.update((k, v) for k, v in vars(module).items() if not k.startswith("__"))
        return getattr(module, attribute)


def lazy(name: str) -> ModuleType:
    """A stand-in for the module ``name``, imported on its first attribute access."""
    return _Lazy(name)
