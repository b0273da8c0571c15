"""Fingerprints: what a :meth:`~convbank.examples.Examples.map` result is cached under.

A function is fingerprinted by what it computes with, not by where it lives: its code (the
bytecode, constants and names, nested functions included), its defaults, the values its
closure and the globals it names hold (modules by name), and for a ``functools.partial`` or a
bound method the function and what is bound. Any other object (a tokenizer, a dict of
settings) by its pickle. So editing the body of a function, a constant it uses or a setting
it closes over gives a new fingerprint; re-running the same script gives the same one.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import types
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
    if isinstance(obj, (types.BuiltinFunctionType, type)):
        digest.update(f"ref:{getattr(obj, '__module__', '')}.{obj.__qualname__}".encode())
        return
    try:
        data = pickle.dumps(obj, protocol=5)
    except Exception as exc:
        raise UnhashableError(f"{type(obj).__name__} object: {exc}") from None
    digest.update(f"pickle:{type(obj).__module__}.{type(obj).__qualname__}:".encode())
    digest.update(hashlib.sha256(data).digest())


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
