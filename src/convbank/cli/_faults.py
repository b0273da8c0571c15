"""A plugin's own fault on the command line: one line naming the plugin, not a traceback.

A dataset installed from another package (an entry point of ``convbank.datasets``) runs its
own code inside convbank's commands (``files_for``, ``read``, ``to_conversation``), and so
does an engine (``convbank.engines``: ``build --engine``). When that
code raises something other than a convbank error (its bug), the command says whose code
failed, in one line, exit 1; convbank's own faults keep their tracebacks (``--debug`` shows
the plugin's too).
"""

from __future__ import annotations

from types import FrameType

from convbank import catalog

__all__ = ["plugin_fault"]


def _plugins() -> tuple[dict[int, str], dict[str, str]]:
    """Each plugin dataset and engine class by ``id`` (instances: a dataset is one object), and
    the top-level package of each, with the plugin's origin: the entry point that loaded it."""
    from convbank import registry

    things: dict[int, str] = {}
    owners: dict[str, str] = {}
    try:
        for ds in catalog.catalog:
            things[id(ds)] = owners[type(ds).__module__.partition(".")[0]] = catalog.catalog.origin(ds.name)
    except Exception:  # a catalog that cannot be listed blames no one
        return {}, {}
    try:
        for engine in registry.engines:
            things[id(engine)] = owners[engine.__module__.partition(".")[0]] = registry.engines.origin(
                engine.name
            )
    except Exception:  # nor do engines that cannot be listed
        pass
    return (
        {key: origin for key, origin in things.items() if origin.startswith("entry point")},
        {package: origin for package, origin in owners.items() if origin.startswith("entry point")},
    )


def _whose(frame: FrameType, things: dict[int, str]) -> str | None:
    """The plugin whose dataset or engine a frame runs a method of (its ``self``, or its
    ``cls`` for an engine's class method), whichever class defined that method: a dataset
    that subclasses another plugin's runs the other's code as its own."""
    for name in ("self", "cls"):
        owner = frame.f_locals.get(name)
        if owner is not None and (found := things.get(id(owner)) or things.get(id(type(owner)))):
            return found
    return None


def plugin_fault(exc: BaseException) -> str | None:
    """The line that says a plugin's code raised ``exc``: the plugin whose dataset or engine
    the innermost of its methods in the traceback ran for (the entry point that loaded that
    dataset, not the one whose class it inherits the method from), else the plugin whose
    package holds the innermost frame; None when no plugin's code is in it (convbank's fault).
    Example: ``plugin_fault(KeyError("train"))`` is None (no traceback through a plugin)."""
    from convbank.datasets._base import UndeclaredError

    things, owners = _plugins()
    blamed = _origin(exc.dataset) if isinstance(exc, UndeclaredError) else None
    by_package, by_method = blamed, None
    tb = exc.__traceback__
    while tb is not None:
        package = str(tb.tb_frame.f_globals.get("__name__", "")).partition(".")[0]
        if package in owners:  # a plugin's code (convbank's own methods of its dataset are not)
            by_package = owners[package]
            by_method = _whose(tb.tb_frame, things) or by_method
        tb = tb.tb_next
    blamed = by_method or by_package
    if blamed is None:
        return None
    return f"{catalog.code_failed(blamed, exc)}; report it to its authors (--debug shows the traceback)"


def _origin(dataset: str) -> str | None:
    """The entry point of the plugin whose dataset is named ``dataset`` (None: convbank's own)."""
    try:
        origin = catalog.catalog.origin(dataset)
    except Exception:  # a catalog that cannot be listed blames no one
        return None
    return origin if origin.startswith("entry point") else None
