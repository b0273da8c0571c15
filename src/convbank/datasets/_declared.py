"""What a dataset declares, checked as its plugin is loaded, so that no command meets a
declaration it cannot use (before, each was found where it was first used: a traceback from
``info``, a config built twice, a size of ``-5`` taken, a sha256 of ``'ZZ'`` blamed on the file):

- its card (``title``, ``description``, ``license``, ``citation``, ``homepage``, ``version``)
  is text, its ``raw_type`` a msgspec Struct, its ``presentation_class`` a :class:`Presentation`;
- its configs are one or more :class:`ConfigSpec` of distinct names, each with a description,
  one or more splits whose published counts are whole numbers from 0 or None, and a union's
  parts other configs of the dataset that are no unions;
- its dataset, config and split names are each one folder of the bank;
- its source files are each a :class:`SourceFile` whose name is one file of the download cache
  and of a source folder, no two of one name, with a URL of text, a sha256 of 64 lowercase
  hexadecimal digits or none, a size of a whole number of bytes or none; its
  ``optional_files`` name files it declares.

:func:`declared_problem` says the first that does not hold in one line naming the field."""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from convbank._names import name_problem
from convbank._wording import article, shown
from convbank.datasets._base import ConfigSpec, Dataset, SourceFile, UndeclaredError
from convbank.datasets._present import Presentation
from convbank.model import Part

__all__ = ["counts_of", "declared_problem"]

_SHA256 = re.compile(r"[0-9a-f]{64}")
_CARD = ("title", "description", "license", "citation", "homepage", "version")


def declared_problem(cls: type[Dataset]) -> str | None:
    """Why the dataset class ``cls`` declares what no command can use, in one line beginning
    with its module and name, or None."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    for field in _CARD:
        value = getattr(cls, field, None)
        if not isinstance(value, str):
            return f"{where}: its {field} {shown(value)} is not text; fix it"
    configs = getattr(cls, "configs", None)
    problem = (
        _types_problem(cls)
        or _configs_problem(configs)
        or _names_problem(cls)
        or _counts_and_parts_problem(cls.configs)
        or _files_problem(getattr(cls, "files", ()))
        or _optional_problem(cls)
    )
    return None if problem is None else f"{where}: {problem}"


def _types_problem(cls: type[Dataset]) -> str | None:
    """Why the dataset's ``raw_type`` is no msgspec Struct, or its ``presentation_class`` no
    :class:`Presentation`, or None."""
    raw = getattr(cls, "raw_type", None)
    if not (isinstance(raw, type) and issubclass(raw, msgspec.Struct)):
        return f"its raw_type {shown(raw)} is not a msgspec.Struct class; fix it"
    presented = cls.presentation_class
    if not (isinstance(presented, type) and issubclass(presented, Presentation)):
        return (
            f"its presentation_class {shown(presented)} is not a convbank.datasets.Presentation class; fix it"
        )
    return _presented_problem(presented)


def _presented_problem(presented: type[Presentation]) -> str | None:
    """Why one of the presentation's settings (a class attribute :class:`Presentation`
    declares: ``example_views``, ``viewer_filters``...) is not of the kind of Presentation's
    own (a tuple, a mapping, a set, a flag), or None."""
    for name, annotation in vars(Presentation).get("__annotations__", {}).items():
        if not str(annotation).startswith("ClassVar"):
            continue
        default, value = getattr(Presentation, name), getattr(presented, name)
        kind = next((k for k in _KINDS if isinstance(default, k[0])), (type(default),))
        if not isinstance(value, kind):
            return (
                f"its presentation {presented.__qualname__}'s {name} {shown(value)} is not a "
                f"{kind[0].__name__}, as Presentation's is; fix it"
            )
    return None


_KINDS: tuple[tuple[type, ...], ...] = ((bool,), (tuple, list), (frozenset, set), (Mapping,))
"""The kinds of a presentation's settings: each value may be any type of its kind."""


def _optional_problem(cls: type[Dataset]) -> str | None:
    """Why the dataset's ``optional_files`` are not names of files it declares, or None."""
    optional, declared = cls.optional_files, {f.name for f in cls.files}
    if not isinstance(optional, (tuple, list)):
        return (
            f"its optional_files are {article(type(optional).__name__)}, not a tuple of file names; fix them"
        )
    for name in optional:
        if name not in declared:
            return (
                f"its optional file {shown(name)} is not one of the source files it declares (files); fix it"
            )
    return None


def _configs_problem(configs: object) -> str | None:
    """Why ``configs`` is not one or more configs of distinct names, each with a
    description, its splits and a tuple of parts, or None."""
    if not isinstance(configs, (tuple, list)):
        return f"its configs are {article(type(configs).__name__)}, not a tuple of ConfigSpec; fix them"
    if not configs:
        return "it declares no config; declare at least one ConfigSpec"
    names: list[object] = []
    for cfg in configs:
        if not isinstance(cfg, ConfigSpec):
            return f"a config is {article(type(cfg).__name__)}, not a ConfigSpec: {shown(cfg)}; fix it"
        if cfg.name in names:
            return f"two configs are named {cfg.name!r}; rename one"
        names.append(cfg.name)
        problem = _shape_problem(cfg)
        if problem is not None:
            return f"config {shown(cfg.name)}: {problem}"
    return None


def _shape_problem(cfg: ConfigSpec) -> str | None:
    """Why one config's description, splits or parts are not of their types, or None."""
    if not isinstance(cfg.description, str):
        return f"its description {shown(cfg.description)} is not text; fix it"
    if not isinstance(cfg.splits, Mapping) or not cfg.splits:
        return f"its splits {shown(cfg.splits)} are not split names with their published counts; fix them"
    if not isinstance(cfg.union_of, (tuple, list)):
        return f"its parts (union_of) {shown(cfg.union_of)} are not a tuple of config names; fix them"
    return None


def _counts_and_parts_problem(configs: tuple[ConfigSpec, ...]) -> str | None:
    """Why a config's published count is no count, or a union's part no other config of
    the dataset that is no union, or None."""
    stored = {c.name for c in configs if not c.union_of}
    for cfg in configs:
        problem = _config_problem(cfg, stored)
        if problem is not None:
            return f"config {shown(cfg.name)}: {problem}"
    return None


def _config_problem(cfg: ConfigSpec, stored: set[str]) -> str | None:
    """Why one config's counts or parts cannot be built or read, or None; ``stored``: the
    names of the dataset's configs that are no unions."""
    for split, count in cfg.splits.items():
        if count is not None and (type(count) is not int or count < 0):
            return (
                f"split {shown(split)}: its count {shown(count)} is not a whole number of conversations "
                "from 0, or None where none is published; fix it"
            )
    for part in cfg.union_of:
        if part not in stored or part == cfg.name:
            return f"its part (union_of) {shown(part)} is not another config of the dataset that is no union; fix it"
    return None


def _names_problem(cls: type[Dataset]) -> str | None:
    """Why the dataset's name or one of its configs' or splits' names cannot be one folder of
    the bank (:func:`convbank._names.name_problem`), or None: checked as the plugin is
    loaded, so no command reaches a path made of it."""
    named = [("its name", getattr(cls, "name", None))]
    for cfg in cls.configs:
        named.append(("a config", cfg.name))
        named += [(f"config {cfg.name!r}: a split", split) for split in cfg.splits]
        named += [(f"config {cfg.name!r}: a part (union_of)", part) for part in cfg.union_of]
    for what, value in named:
        problem = name_problem(value)
        if problem is not None:
            return f"{what} {value!r} cannot name a folder of the bank: {problem}; rename it"
    return None


def _files_problem(files: object) -> str | None:
    """Why the source files ``files`` cannot be fetched as declared, or None."""
    if not isinstance(files, (tuple, list)):
        return f"its files are {article(type(files).__name__)}, not a tuple of SourceFile; fix them"
    seen: set[str] = set()
    for file in files:
        if not isinstance(file, SourceFile):
            return f"a source file is {article(type(file).__name__)}, not a SourceFile: {shown(file)}; fix it"
        problem = _file_names(file) or _fields(file)
        if problem is not None:
            return problem
        if file.name in seen:
            return f"two source files are named {file.name!r}; a name is one file of the cache; rename one"
        seen.add(file.name)
    return None


def _file_names(file: SourceFile) -> str | None:
    """Why the file's name, or its archive's folder, is not one file of the download cache
    and of a source folder (``..``, ``/`` or an absolute name would have a download written
    outside ``CONVBANK_HOME``), or None."""
    for what, value in (("a source file", file.name), ("an archive's folder", file.extract_to)):
        problem = None if value is None and what != "a source file" else name_problem(value)
        if problem is not None:
            return (
                f"{what} {value!r} cannot name one file of the download cache and of a "
                f"source folder: {problem.split(';')[0]}; rename it"
            )
    return None


def _fields(file: SourceFile) -> str | None:
    """Why the file's URL, sha256 or size is not what a download checks against, or None."""
    url, sha, size = file.url, file.sha256, file.size
    wrong: tuple[str, object, str]
    if not isinstance(url, str):
        wrong = ("url", url, "text (the publisher's URL)")
    elif sha is not None and not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
        wrong = ("sha256", sha, "64 lowercase hexadecimal digits, or None where the publisher gives none")
    elif size is not None and (type(size) is not int or size < 0):
        wrong = ("size", size, "a whole number of bytes from 0, or None where it is not known")
    else:
        return None
    field, value, expected = wrong
    return f"source file {file.name!r}: its {field} {shown(value)} is not {expected}; fix it"


def counts_of(ds: Dataset, part: Part, conversations: int) -> tuple[int | None, str | None]:
    """``ds.published_count(part)`` and ``ds.count_problem(part, conversations)`` (the bank's
    count), each checked where it is handed back: a whole number from 0 or None, and a message
    (text) or None. Anything else is an :class:`UndeclaredError` blaming the dataset (one line
    naming its plugin, exit 1), never a traceback from the code that shows it (``validate``)."""
    published = ds.published_count(part)
    if published is not None and not (type(published) is int and published >= 0):
        said = (
            f"{shown(published, 40)}"
            if isinstance(published, (int, float))
            else article(type(published).__name__)
        )
        raise UndeclaredError(
            f"published_count gave {said} for {ds.name}/{part.config}/{part.split}, not a number of "
            "conversations or None",
            dataset=ds.name,
        )
    problem = ds.count_problem(part, conversations)
    if problem is not None and not isinstance(problem, str):
        raise UndeclaredError(
            f"count_problem gave {article(type(problem).__name__)} for {ds.name}/{part.config}/{part.split}, "
            "not a message (text) or None",
            dataset=ds.name,
        )
    return published, problem
