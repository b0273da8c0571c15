"""A record's or a message's own keys beside those a format names itself, kept whatever they
are called: a key that would take the place of the format's own (a chat message's ``from``
or ``value`` written as ShareGPT, whose messages are ``{"from", "value"}``; a ShareGPT
message's ``role`` or ``content`` written as chat; a chat record's ``conversations``) is
written under :data:`KEPT` instead, and read back from there under its own name. The
exporters and the imported datasets' presentation write with it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["KEPT", "apart", "beside"]

KEPT = "convbank_keys"
"""Where a record's or a message's keys that a format names itself are written (and a key of
this name itself), as an object of them: ``{"from": "human", "value": "hi", "convbank_keys":
{"from": "ann"}}``."""


def beside(own: Mapping[str, Any], keys: Mapping[str, Any]) -> dict[str, Any]:
    """``own`` (the format's keys), then ``keys`` in their order, those that ``own`` names
    (or named :data:`KEPT`) under :data:`KEPT`, so that none takes another's place;
    :func:`apart` reads them back.

    >>> beside({"from": "human", "value": "hi"}, {"from": "ann", "weight": 0})
    {'from': 'human', 'value': 'hi', 'weight': 0, 'convbank_keys': {'from': 'ann'}}
    """
    clashing = {k: v for k, v in keys.items() if k in own or k == KEPT}
    written = {**own, **{k: v for k, v in keys.items() if k not in clashing}}
    if clashing:
        written[KEPT] = clashing
    return written


def apart(written: Mapping[str, Any], own: Collection[str]) -> dict[str, Any]:
    """The keys of ``written`` but the format's ``own``, those :func:`beside` put under
    :data:`KEPT` back under their names: a :data:`KEPT` object naming only ``own`` keys (or
    :data:`KEPT`) is read as them; any other value of :data:`KEPT` is a key like any other.

    >>> apart({"from": "human", "value": "hi", "convbank_keys": {"from": "ann"}}, ("from", "value"))
    {'from': 'ann'}
    """
    keys = {k: v for k, v in written.items() if k not in own}
    kept = keys.get(KEPT)
    if isinstance(kept, dict) and kept and all(k in own or k == KEPT for k in kept):
        del keys[KEPT]
        keys.update(kept)
    return keys
