"""Public-API snapshots: a plain-text listing of every public name's signature.

griffe does not see the constructors attrs generates, so packages snapshot
their own API with this and compare it to a committed file: any change to a
public function, class, attrs field or hook spec shows up as a diff in review.

    from cladelog.core.testing.api import check_snapshot
    def test_public_api():
        check_snapshot(["cladelog.core", "cladelog.core.hookspecs"], SNAPSHOT_FILE)

Set ``CLADELOG_UPDATE_API_SNAPSHOT=1`` to rewrite the file after an intended change.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

__all__ = ["check_snapshot", "describe", "snapshot"]


def _sig(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def describe(name: str, obj: Any) -> list[str]:
    """Lines describing one public object."""
    if inspect.isclass(obj):
        lines = [f"class {name}{_bases(obj)}"]
        if attrs.has(obj):
            for f in attrs.fields(obj):
                default = "" if f.default is attrs.NOTHING else f" = {_default(f.default)}"
                lines.append(f"    field {f.name}: {_annotation(obj, f.name, f.type)}{default}")
        elif hasattr(obj, "_fields") and issubclass(obj, tuple):
            hints = getattr(obj, "__annotations__", {})
            lines.extend(f"    field {n}: {_type(hints.get(n))}" for n in getattr(obj, "_fields"))  # noqa: B009
        else:
            lines.append(f"    __init__{_sig(obj)}")
        for attr, member in sorted(vars(obj).items()):
            if attr.startswith("_") or not (
                inspect.isfunction(member)
                or isinstance(member, classmethod | staticmethod | property)
            ):
                continue
            if isinstance(member, property):
                lines.append(f"    property {attr}")
            else:
                fn = member.__func__ if isinstance(member, classmethod | staticmethod) else member
                kind = "classmethod " if isinstance(member, classmethod) else ""
                lines.append(f"    {kind}def {attr}{_sig(fn)}")
        return lines
    if callable(obj):
        return [f"def {name}{_sig(obj)}"]
    return [f"{name}: {type(obj).__name__} = {_default(obj)}"]


def _bases(cls: type) -> str:
    names = [b.__name__ for b in cls.__bases__ if b is not object]
    return f"({', '.join(names)})" if names else ""


def _annotation(cls: type, name: str, resolved: Any) -> str:
    """The field's annotation as written: cattrs resolves string annotations in place
    (``dict[str, Any]`` would then render as ``dict``), so read the class's own record."""
    for klass in cls.__mro__:
        written = vars(klass).get("__annotations__", {}).get(name)
        if written is not None:
            return written if isinstance(written, str) else _type(written)
    return _type(resolved)


def _type(tp: Any) -> str:
    if tp is None:
        return "?"
    return tp if isinstance(tp, str) else getattr(tp, "__name__", repr(tp))


def _default(value: Any) -> str:
    if isinstance(value, attrs.Factory):  # type: ignore[arg-type]
        return f"Factory({getattr(value.factory, '__name__', repr(value.factory))})"
    if isinstance(value, int | float | str | bool | type(None)):
        return repr(value)
    return type(value).__name__


def snapshot(modules: Iterable[str]) -> str:
    """The text snapshot of the ``__all__`` names of ``modules``."""
    out: list[str] = []
    for mod_name in modules:
        module = importlib.import_module(mod_name)
        names = getattr(module, "__all__", None)
        if names is None:
            raise AssertionError(f"{mod_name} has no __all__: list its public names")
        out.append(f"# {mod_name}")
        for name in sorted(names):
            if name == "__version__":
                continue
            out.extend(describe(name, getattr(module, name)))
        out.append("")
    return "\n".join(out)


def check_snapshot(modules: Iterable[str], path: str | os.PathLike[str]) -> None:
    """Compare the snapshot with ``path``; rewrite it when CLADELOG_UPDATE_API_SNAPSHOT=1."""
    current = snapshot(modules)
    file = Path(path)
    if os.environ.get("CLADELOG_UPDATE_API_SNAPSHOT") == "1" or not file.exists():
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(current, encoding="utf-8")
        if os.environ.get("CLADELOG_UPDATE_API_SNAPSHOT") != "1":
            raise AssertionError(f"{file} did not exist; written now, review and commit it")
        return
    recorded = file.read_text(encoding="utf-8")
    if recorded != current:
        import difflib

        diff = "\n".join(difflib.unified_diff(recorded.splitlines(), current.splitlines(),
                                              "recorded", "current", lineterm=""))
        raise AssertionError(
            f"the public API changed (if intended, rerun with CLADELOG_UPDATE_API_SNAPSHOT=1 "
            f"and note it in the CHANGELOG):\n{diff}"
        )
