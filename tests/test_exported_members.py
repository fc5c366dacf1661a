"""Guard: the public surface is complete and documented."""

from __future__ import annotations

import importlib
import inspect
import types

import pytest

PUBLIC_MODULES = [
    "contractsdk",
    "contractsdk.models",
    "contractsdk.testing",
    "contractsdk.validation",
    "contractsdk.resources",
    "contractsdk.bulk",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_complete(name: str) -> None:
    """Every public name a module defines or re-exports is in its __all__, and exists."""
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    for item in exported:
        assert hasattr(module, item), item
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and (inspect.isclass(v) or inspect.isfunction(v))
        and getattr(v, "__module__", "").startswith(name)
    }
    assert public <= exported, public - exported


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_names_have_docstrings(name: str) -> None:
    """Every exported class and function, and their public methods, have a docstring."""
    module = importlib.import_module(name)
    missing = []
    for item in module.__all__:
        value = getattr(module, item)
        if isinstance(value, types.GenericAlias):
            continue  # a type alias (a class to inspect.isclass before 3.11): a #: comment
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if not inspect.getdoc(value):
            missing.append(item)
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if attr.startswith("_") or not callable(member):
                    continue
                if not inspect.getdoc(member):
                    missing.append(f"{item}.{attr}")
    assert missing == []
