"""A plugin's own fault on the command line: one line naming the plugin, not a traceback.

A dataset installed from another package (an entry point of ``convbank.datasets``) runs its
own code inside convbank's commands (``files_for``, ``read``, ``to_conversation``), and so
does an engine (``convbank.engines``: ``build --engine``). When that
code raises something other than a convbank error (its bug), the command says whose code
failed, in one line, exit 1; convbank's own faults keep their tracebacks (``--debug`` shows
the plugin's too).
"""

from __future__ import annotations

from convbank import catalog

__all__ = ["plugin_fault"]


def _plugin_packages() -> dict[str, str]:
    """The top-level package of each plugin dataset's class and each plugin engine's class,
    with the plugin's origin."""
    from convbank import registry

    owners: dict[str, str] = {}
    try:
        for ds in catalog.catalog:
            owners[type(ds).__module__.partition(".")[0]] = catalog.catalog.origin(ds.name)
    except Exception:  # a catalog that cannot be listed blames no one
        return {}
    try:
        for engine in registry.engines:
            owners[engine.__module__.partition(".")[0]] = registry.engines.origin(engine.name)
    except Exception:  # nor do engines that cannot be listed
        pass
    return {package: origin for package, origin in owners.items() if origin.startswith("entry point")}


def plugin_fault(exc: BaseException) -> str | None:
    """The line that says a plugin's code raised ``exc``: the innermost frame of its traceback
    in a plugin's package names it; None when no plugin's code is in it (convbank's fault).
    Example: ``plugin_fault(KeyError("train"))`` is None (no traceback through a plugin)."""
    from convbank.datasets._base import UndeclaredError

    owners = _plugin_packages()
    blamed = _origin(exc.dataset) if isinstance(exc, UndeclaredError) else None
    tb = exc.__traceback__
    while tb is not None:
        package = str(tb.tb_frame.f_globals.get("__name__", "")).partition(".")[0]
        blamed = owners.get(package, blamed)
        tb = tb.tb_next
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
