"""Dict-shaped configurations (grid points, profiles' parts, job records) checked as a whole.

A configuration is described by its keys, each a :class:`Key`: the check of its value (a function
``check(name, value)`` in the style of :mod:`memcap._checks`, which returns the value or raises naming
``name``), what the key holds (said when it is missing) and whether it is needed: always, never (optional)
or only when other keys ask for it (``needed`` a function of the checked keys that says who needs it,
e.g. "the table kind 'random'", or returns None). :func:`keyed` refuses, naming the argument and the key
(``grid[2]['count']``):

* a value that is not a dict (``TypeError``);
* a key the configuration does not know (``ValueError``, with the closest known key);
* a needed key that is missing (``ValueError``, saying who needs it and what it holds);
* a value of the wrong type or out of range (the key's check: ``TypeError`` or ``ValueError``; a bool is
  never an int).

:func:`tagged` does the same for records whose kind is named by one key (``{"model": "aot", ...}``).
The checks only validate: callers build their objects from the values they were given, so that a valid
configuration gives exactly what it gave before.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from memcap._checks import listed

Check = Callable[[str, object], object]
"""``check(name, value)``: ``value`` checked (and converted), or an error whose message names ``name``."""


@dataclass(frozen=True)
class Key:
    """One key of a configuration: ``check`` of its value, what it ``holds`` (a phrase such as "the
    vocabulary size N, a positive int") and whether it is ``needed``: True, False (optional) or a function
    of the other keys' checked values returning who needs it ("the table kind 'random'") or None."""

    check: Check
    holds: str
    needed: bool | Callable[[dict], str | None] = True


def _hint(unknown: list, known: list) -> str:
    """The closest known key of each unknown one (difflib), then the known keys."""
    names = [str(k) for k in known]
    close = [f"{match[0]!r} for {k!r}" for k in unknown
             if (match := difflib.get_close_matches(str(k), names, n=1, cutoff=0.6))]
    return (f" (did you mean {', '.join(close)}?)" if close else "") + f". Known keys: {names}"


def keyed(name: str, value: object, keys: Mapping[str, Key], what: str) -> dict:
    """The checked values of the configuration ``value`` (a dict; ``what`` it is, e.g. "a grid point"),
    whose keys are described by ``keys``; refused as the module docstring says, naming ``name``."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be {what} (a dict), got {type(value).__name__}")
    unknown = [k for k in value if k not in keys]
    if unknown:
        raise ValueError(f"{name} has keys {unknown} that {what} does not know{_hint(unknown, list(keys))}")
    missing = [k for k, key in keys.items() if key.needed is True and k not in value]
    if missing:
        holds = "; ".join(f"{k!r} is {keys[k].holds}" for k in missing)
        raise ValueError(f"{name} must be {what}; it lacks {missing}: {holds}")
    checked = {k: key.check(f"{name}[{k!r}]", value[k]) for k, key in keys.items() if k in value}
    for k, key in keys.items():
        who = key.needed(checked) if callable(key.needed) and k not in value else None
        if who:
            raise ValueError(f"{name} must be {what}; it lacks [{k!r}]: {who} needs {k!r}, {key.holds}")
    return checked


def tagged(name: str, value: object, tag: str, kinds: Mapping[str, tuple[Mapping[str, Key], str]]) -> tuple[str, dict]:
    """``(kind, checked values)`` of a record whose kind is ``value[tag]``, one of ``kinds`` (each kind:
    its keys, the tag excepted, and what such a record is); checked by :func:`keyed`."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict ({' or '.join(w for _, w in kinds.values())}), "
                        f"got {type(value).__name__}")
    kind = value.get(tag)
    if kind not in tuple(kinds):
        raise ValueError(f"{name}[{tag!r}] must be one of {tuple(kinds)}, got {kind!r}")
    keys, what = kinds[kind]
    return kind, keyed(name, value, {tag: Key(one_of((kind,)), f"the kind {kind!r}"), **keys}, what)


def one_of(choices: tuple) -> Check:
    """A check that the value is one of ``choices`` (compared with ==)."""
    def check(name: str, value: object) -> object:
        if isinstance(value, bool) or value not in choices:
            raise ValueError(f"{name} must be one of {choices}, got {value!r}")
        return value
    return check


def optional(check: Check) -> Check:
    """``check``, or None (a key whose None means a documented default)."""
    return lambda name, value: None if value is None else check(name, value)


def text(name: str, value: object) -> str:
    """``value`` if it is a string, else ``TypeError`` naming ``name``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r} of type {type(value).__name__}")
    return value


def list_of(check: Check, what: str, *, length: int | None = None, nonempty: bool = False) -> Check:
    """A check that the value is a list (or tuple) of items that pass ``check`` (``what`` they are), of
    ``length`` items when given, of at least one when ``nonempty``; items are named ``name[i]``."""
    def check_list(name: str, value: object) -> list:
        items = listed(name, value, what)
        if length is not None and len(items) != length:
            raise ValueError(f"{name} must be a list of {length} {what}, got {len(items)} items")
        if nonempty and not items:
            raise ValueError(f"{name} must be a non-empty list of {what}, got an empty list")
        return [check(f"{name}[{i}]", item) for i, item in enumerate(items)]
    return check_list


def nested(keys: Mapping[str, Key], what: str) -> Check:
    """A check that the value is a nested configuration with ``keys`` (:func:`keyed`)."""
    return lambda name, value: keyed(name, value, keys, what)
