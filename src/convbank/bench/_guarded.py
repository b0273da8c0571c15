"""Every contact with a model's objects, guarded: looking up its methods, calling them,
iterating what they return and reading its predictions run the model's code (a property,
``__getattr__``, a ``list`` subclass's ``__iter__``, a ``str`` subclass's ``__eq__``), so each
happens inside one guard that makes whatever it raises (``sys.exit()`` and any other
:class:`BaseException` but Ctrl-C) one line naming the task, the fold and the model, and
ends a process it forked there. What leaves the guard is plain data (:func:`plain`), whose
use runs none of the model's code."""

from __future__ import annotations

import decimal
import fractions
import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from convbank._forksafe import this_process_only
from convbank._wording import article, counted
from convbank.bench._kept import kept
from convbank.errors import BenchError, ConvbankError

__all__ = ["MAX_DEPTH", "TooDeepError", "answers_of", "call", "method_of", "plain", "what"]

MAX_DEPTH = 64
"""The deepest a model's prediction may nest (as a predictions file's line may)."""


class TooDeepError(ValueError):
    """A value nested more than :data:`MAX_DEPTH` deep."""


def what(exc: BaseException) -> str:
    """``ValueError: the message`` on one line (a message's newlines as spaces)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def _guard(task: str, model: str, fold: str, doing: str) -> Iterator[None]:
    try:
        with this_process_only(), kept():  # a process the model forks never goes on
            yield
    except (ConvbankError, KeyboardInterrupt):  # Ctrl-C, SIGTERM, SIGHUP: a partial result
        raise
    except BaseException as exc:  # sys.exit(), GeneratorExit: the model's run ends, not the command
        where = f"{task}, {fold}" if fold else task
        message = f"{where}: the model {model} failed {doing}: {what(exc)}"
        raise BenchError(message, task=task, model=model) from exc


def method_of(task: str, model: str, fold: str, obj: Any, method: str) -> Callable[..., Any] | None:
    """``obj.method`` if it is callable, else None; what the lookup raises (a property, a
    ``__getattr__``) is one line, as a call's is."""
    with _guard(task, model, fold, f"as its {method}() was looked up"):
        found = getattr(obj, method, None)
        return found if callable(found) else None
    raise AssertionError("unreachable")  # pragma: no cover - the guard raises or returns


def call(task: str, model: str, fold: str, obj: Any, method: str, *args: Any) -> Any:
    """``obj.method(*args)``, guarded."""
    with _guard(task, model, fold, f"in {method}()"):
        return getattr(obj, method)(*args)
    raise AssertionError("unreachable")  # pragma: no cover


def answers_of(task: str, model: str, fold: str, method: str, answers: Any, *, ids: list[str]) -> list[Any]:
    """What ``predict``/``rank`` returned, as a list of plain predictions (:func:`plain`), one
    per example of ``ids``: anything but a sequence or an iterator of them (None, a number,
    a string, another count) is one line naming the model and the fold, and so is whatever
    iterating or reading them raises; no more than one prediction beyond the examples is
    read (an endless iterator is refused in bounded memory)."""
    if isinstance(answers, (str, bytes, Mapping)) or not isinstance(answers, Iterable):
        kind = "None" if answers is None else article(type(answers).__name__)
        raise BenchError(
            f"{task}, {fold}: the model {model}'s {method}() returned {kind}, "
            "not a list of one prediction per example",
            task=task,
            model=model,
        )
    with _guard(task, model, fold, f"in {method}()"):  # a generator's body is the model's too
        items = list(itertools.islice(answers, len(ids) + 1))  # an endless one: one too many
    if len(items) != len(ids):
        many = len(items) > len(ids)
        count = f"more than {counted(len(ids), 'prediction')}" if many else counted(len(items), "prediction")
        raise BenchError(
            f"{task}, {fold}: the model {model} returned {count} for {counted(len(ids), 'example')}",
            task=task,
            model=model,
        )
    out = []
    with _guard(task, model, fold, f"as its {method}() predictions were read"):
        for example_id, item in zip(ids, items, strict=True):
            try:
                out.append(plain(item))
            except TooDeepError as exc:
                raise BenchError(
                    f"{task}, {fold}: the model {model} returned a prediction {exc} (example {example_id!r})",
                    task=task,
                    model=model,
                ) from None
    return out


class Foreign:
    """In a plain value, an object of another kind than JSON's (a model's own class): it
    compares, hashes and prints without running the model's code, and no task takes it as a
    prediction (a malformed one)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind} object>"


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data: ``None``, ``bool``, ``int``, ``float``, ``str``, lists and
    dicts of them (numpy's and PyTorch's values as Python's, a ``Decimal`` or ``Fraction`` as
    a float; a set sorted into a list), read through the
    built-in types' own methods, so that a subclass's (a ``list`` whose ``__iter__`` raises, a
    ``str`` whose ``__eq__`` does) run here and never later; any other object a
    :class:`Foreign`. A value nested more than :data:`MAX_DEPTH` deep raises
    :class:`TooDeepError`, never a RecursionError.

    >>> class Label(str):
    ...     def __eq__(self, other): raise RuntimeError("no")
    >>> out = plain([Label("self-need"), {"a": (1, 2.5)}, {3, 1}, np.int64(4), object()])
    >>> out[:4], type(out[0]) is str, out[4]
    (['self-need', {'a': [1, 2.5]}, [1, 3], 4], True, <object object>)
    """
    if depth > MAX_DEPTH:
        raise TooDeepError(f"nested more than {MAX_DEPTH} deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    for kind, read in _READ:
        if isinstance(value, kind):
            return read(value, depth)
    torch = sys.modules.get("torch")  # a model's tensor (imported by the model, never here)
    if torch is not None and isinstance(value, torch.Tensor):
        return plain(torch.Tensor.tolist(value), depth)
    return Foreign(type(value).__name__)


def _as_float(value: decimal.Decimal | fractions.Fraction) -> float | Foreign:
    """A ``Decimal`` or ``Fraction`` as the float it rounds to, by the standard library's own
    code; one that has none (a signalling NaN, a fraction past a float's range) a
    :class:`Foreign`, refused as any malformed prediction is."""
    try:
        if isinstance(value, decimal.Decimal):
            return decimal.Decimal.__float__(value)
        num, den = fractions.Fraction.numerator.fget(value), fractions.Fraction.denominator.fget(value)  # type: ignore[attr-defined]
        return int.__truediv__(num, den)
    except (ValueError, OverflowError):
        return Foreign(type(value).__name__)


_READ: tuple[tuple[type | tuple[type, ...], Callable[[Any, int], Any]], ...] = (
    (str, lambda v, _: str.__str__(v)),
    (int, lambda v, _: int.__int__(v)),  # an IntEnum: its number
    (float, lambda v, _: float.__float__(v)),
    (dict, lambda v, d: {_key(k, d + 1): plain(x, d + 1) for k, x in dict.items(v)}),
    (list, lambda v, d: [plain(x, d + 1) for x in list.__iter__(v)]),
    (tuple, lambda v, d: [plain(x, d + 1) for x in tuple.__iter__(v)]),
    (set, lambda v, d: _sorted([plain(x, d + 1) for x in set.__iter__(v)])),
    (frozenset, lambda v, d: _sorted([plain(x, d + 1) for x in frozenset.__iter__(v)])),
    (np.ndarray, lambda v, d: plain(v.tolist(), d)),
    (np.generic, lambda v, d: plain(v.item(), d)),
    ((decimal.Decimal, fractions.Fraction), lambda v, _: _as_float(v)),
)
"""How each kind of value is read, by the built-in type's own methods (a subclass's never)."""


def _key(key: Any, depth: int) -> Any:
    """A dict's key as plain data, hashable (a tuple's list is a :class:`Foreign`)."""
    out = plain(key, depth)
    return Foreign(type(key).__name__) if isinstance(out, (list, dict)) else out


def _sorted(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:  # values of kinds that do not compare ([1, "a"]): an order all the same
        return sorted(values, key=repr)
