"""Fingerprints: what a :meth:`~convbank.examples.Examples.map` result is cached under.

A function is fingerprinted by what it computes with, not by where it lives: its code (the
bytecode, constants and names, nested functions included), its defaults, the values its
closure and the globals it names hold (modules by name), and for a ``functools.partial`` or a
bound method the function and what is bound, and for a wrapper (``functools.lru_cache``) the
function it wraps. A class of one's own (defined in the script, a notebook or a module
outside the standard library and the installed packages) by its bases, its methods' code (a
``functools.cached_property``'s and a ``partialmethod``'s too) and its class attributes'
values (a constant read as ``Config.suffix`` or ``self.suffix``; one that neither is code
nor pickles, a lock, by its type); an installed one by its name. Any other object (a
tokenizer, a dict of settings) by its pickle and its class.
So editing the body of a function, of a method of a class of one's own (an instance given
as the function, a class it calls), a constant it uses or a setting it closes over gives a
new fingerprint; re-running the same script gives the same one, whatever Python's hash seed
(a set or frozenset, such as the constant of ``x in {"a", "b"}``, is fed by its items in an
order of their own, not in its iteration order, which the seed decides).
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any

__all__ = ["UnhashableError", "fingerprint"]


class UnhashableError(TypeError):
    """An object whose content cannot be fingerprinted (it neither is code nor pickles)."""


def fingerprint(*objects: Any) -> str:
    """The hex sha256 of these objects' content (see the module doc).

    >>> fingerprint(lambda x: x + 1) == fingerprint(lambda x: x + 1)
    True
    >>> fingerprint(lambda x: x + 1) == fingerprint(lambda x: x + 2)
    False
    """
    digest = hashlib.sha256()
    seen: set[int] = set()
    for obj in objects:
        _feed(digest, obj, seen)
    return digest.hexdigest()


def _feed(digest: Any, obj: Any, seen: set[int]) -> None:  # noqa: PLR0911 (one return per kind)
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        digest.update(repr((type(obj).__name__, obj)).encode())
        return
    if id(obj) in seen:
        digest.update(b"<seen>")
        return
    seen.add(id(obj))
    if isinstance(obj, types.ModuleType):
        digest.update(f"module:{obj.__name__}".encode())
        return
    if isinstance(obj, (list, tuple)):
        digest.update(f"{type(obj).__name__}:{len(obj)}".encode())
        for item in obj:
            _feed(digest, item, seen)
        return
    if isinstance(obj, (set, frozenset)):  # in an order of their own: a set's order is the hash seed's
        digest.update(f"{type(obj).__name__}:{len(obj)}".encode())
        for part in sorted(_alone(item, seen) for item in obj):
            digest.update(part)
        return
    if isinstance(obj, dict):
        digest.update(f"dict:{len(obj)}".encode())
        for key, value in obj.items():
            _feed(digest, key, seen)
            _feed(digest, value, seen)
        return
    if isinstance(obj, functools.partial):
        digest.update(b"partial")
        _feed(digest, obj.func, seen)
        _feed(digest, obj.args, seen)
        _feed(digest, obj.keywords, seen)
        return
    if isinstance(obj, types.MethodType):
        digest.update(b"method")
        _feed(digest, obj.__func__, seen)
        _feed(digest, obj.__self__, seen)
        return
    if isinstance(obj, types.FunctionType):
        _feed_function(digest, obj, seen)
        return
    if isinstance(obj, types.CodeType):
        _feed_code(digest, obj, seen)
        return
    if isinstance(obj, type) and _own(obj):
        _feed_class(digest, obj, seen)
        return
    if isinstance(obj, (types.BuiltinFunctionType, type)):
        digest.update(f"ref:{getattr(obj, '__module__', '')}.{obj.__qualname__}".encode())
        return
    try:
        data = pickle.dumps(obj, protocol=5)
    except Exception as exc:
        raise UnhashableError(f"{type(obj).__name__} object: {exc}") from None
    digest.update(f"pickle:{type(obj).__module__}.{type(obj).__qualname__}:".encode())
    digest.update(hashlib.sha256(data).digest())
    _feed(digest, type(obj), seen)  # a pickle names its class; the class's code is fed here
    wrapped = getattr(obj, "__wrapped__", None) if callable(obj) else None
    if wrapped is not None:  # a wrapper pickled by name (``functools.lru_cache``): its function
        digest.update(b"wrapped")
        _feed(digest, wrapped, seen)


def _alone(obj: Any, seen: set[int]) -> bytes:
    """The sha256 of one item of a set, fed on its own (so the items can be put in order)."""
    digest = hashlib.sha256()
    _feed(digest, obj, set(seen))
    return digest.digest()


_LIBRARIES = tuple(
    {Path(p) for p in (sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")) if p}
)
"""Where the standard library and installed packages live (their classes go by name)."""


def _own(cls: type) -> bool:
    """Whether ``cls`` is a class of one's own: defined in ``__main__`` or in a module file
    outside the standard library and the installed packages."""
    if cls.__module__ == "__main__":
        return True
    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not file:
        return False  # a built-in module's
    return not any(Path(file).is_relative_to(library) for library in _LIBRARIES)


def _feed_class(digest: Any, cls: type, seen: set[int]) -> None:
    """A class of one's own by its bases, the code of its methods (functions, static and
    class methods, properties, cached properties, partial methods, nested classes) and the
    values of its other attributes: a constant the function reads through the class
    (``Config.suffix``, ``self.suffix``) is part of what it computes with. An attribute that
    neither is code nor pickles (a lock) goes by its type; one that is state (a count of
    calls) makes the next call compute again, never serves another's result."""
    digest.update(f"class:{cls.__module__}.{cls.__qualname__}".encode())
    for base in cls.__bases__:
        _feed(digest, base, seen)
    for name, member in vars(cls).items():
        parts = _member_parts(member)
        plain = len(parts) == 1 and parts[0] is member and not isinstance(member, (types.FunctionType, type))
        if plain and name.startswith("__") and name.endswith("__"):
            continue  # the class's own machinery (``__module__``, ``__doc__``, ``__dict__``)
        digest.update(f"attr:{name}".encode())
        for part in parts:
            try:
                _feed(digest, part, seen)
            except UnhashableError:
                digest.update(f"unhashable:{type(part).__module__}.{type(part).__qualname__}".encode())


def _member_parts(member: Any) -> list[Any]:
    """What of a class's member its fingerprint is fed: a method's function (and a partial
    method's arguments), a property's accessors, else the member itself (a value, a class)."""
    if isinstance(member, (staticmethod, classmethod)):
        return [member.__func__]
    if isinstance(member, property):
        return [member.fget, member.fset, member.fdel]
    if isinstance(member, functools.cached_property):
        return [member.func]
    if isinstance(member, functools.partialmethod):
        return [member.func, member.args, member.keywords]
    return [member]


def _feed_code(digest: Any, code: types.CodeType, seen: set[int]) -> None:
    digest.update(b"code")
    digest.update(code.co_code)
    digest.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_argcount)).encode())
    for const in code.co_consts:
        _feed(digest, const, seen)


def _feed_function(digest: Any, fn: types.FunctionType, seen: set[int]) -> None:
    digest.update(f"function:{fn.__qualname__}".encode())
    _feed_code(digest, fn.__code__, seen)
    _feed(digest, fn.__defaults__, seen)
    _feed(digest, fn.__kwdefaults__, seen)
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            value = None
        _feed(digest, value, seen)
    named = _global_names(fn.__code__)
    for name in sorted(named):
        if name in fn.__globals__:
            digest.update(f"global:{name}".encode())
            _feed(digest, fn.__globals__[name], seen)


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names
