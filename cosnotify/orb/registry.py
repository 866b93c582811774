"""Repository id -> Python type registry.

Strategy: generated modules register each struct, union, enum, exception and
interface class under its repository id at import time. Unmarshalling (CDR)
and TypeCode helpers look classes up here, so a value received over the wire
becomes an instance of the generated class when one is loaded, and of a
dynamically made class otherwise. Object-reference stubs are registered
separately (``register_stub``) because one repository id has both an
interface class and its stub class.
"""

from __future__ import annotations

import threading
from typing import Any

_types: dict[str, Any] = {}
_stubs: dict[str, type] = {}
_lock = threading.Lock()
#: Bumped on every registration, so caches of "no class registered" can expire.
generation = 0


def register_type(repo_id: str, obj: Any) -> None:
    """Record the Python class (or Enum) for ``repo_id``; last registration wins."""
    global generation
    with _lock:
        _types[repo_id] = obj
        generation += 1


def lookup_type(repo_id: str) -> Any | None:
    """The class registered for ``repo_id``, or None."""
    return _types.get(repo_id)


def register_stub_class(repo_id: str, stub: type) -> None:
    """Record the object-reference stub class for interface ``repo_id``."""
    with _lock:
        _stubs[repo_id] = stub


def lookup_stub(repo_id: str) -> type | None:
    """The stub class for interface ``repo_id``, or None."""
    return _stubs.get(repo_id)
