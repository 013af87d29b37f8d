"""The header's documentation in the docstrings: a method that wraps a C function says which with
@from_header("appstore_..."); its docstring becomes the first paragraph of that function's comment in
include/appstoreserver.h (_generated/docs.py, rendered by scripts/generate), then the method's own docstring, which
keeps what only Python says (exceptions, None, Apple's names). CONTRIBUTING.md, "Documenting a C export"."""

import inspect
from typing import Any, Callable, TypeVar

from ._generated.docs import SUMMARIES

F = TypeVar("F", bound=Callable[..., Any])


def from_header(c_function: str) -> Callable[[F], F]:
    """Puts the header's summary of `c_function` before the decorated function's docstring."""
    summary = SUMMARIES[c_function]  # a KeyError at import: scripts/generate was not run after the annotation changed

    def apply(fn: F) -> F:
        notes = inspect.cleandoc(fn.__doc__ or "")
        fn.__doc__ = summary + ("\n\n" + notes if notes else "")
        setattr(fn, "__c_function__", c_function)
        return fn

    return apply
