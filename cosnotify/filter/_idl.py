"""The generated IDL modules the filter package uses, typed as ``Any``.

Strategy: generated stubs are untyped (mypy skips ``cosnotify.stubs``), so
calling their constructors from strictly typed code would need an ignore at
every call; binding the modules to ``Any``-typed names here keeps that in one
place.
"""

from __future__ import annotations

from typing import Any

from cosnotify.stubs import CosNotification as _CosNotification
from cosnotify.stubs import CosNotifyComm as _CosNotifyComm
from cosnotify.stubs import CosNotifyFilter as _CosNotifyFilter
from cosnotify.stubs import TimeBase as _TimeBase

__all__ = ["CosNotification", "CosNotifyComm", "CosNotifyFilter", "TimeBase"]

CosNotification: Any = _CosNotification
CosNotifyComm: Any = _CosNotifyComm
CosNotifyFilter: Any = _CosNotifyFilter
TimeBase: Any = _TimeBase
