"""An omniORBpy typed push consumer of the Coffee interfaces (tests/typed/data/Coffee.idl).

Shared by tests/typed/test_cxx_peer.py, test_server.py and benchmarks/typed_bench.py: a
``CosTypedEventComm::TypedPushConsumer`` servant whose ``get_typed_consumer``
is a Coffee servant (of the skeleton the channel's IDL was compiled to),
calling ``drinking`` for each ``drinking_coffee``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import omniORB  # noqa: F401 - puts the COS stubs on sys.path

import CosTypedEventComm__POA


def typed_push_consumer(skeleton: Any, drinking: Callable[[str, int], None]) -> Any:
    """A reference to a TypedPushConsumer servant in this process's RootPOA."""

    class Coffee(skeleton):  # type: ignore[misc,valid-type]
        def drinking_coffee(self, name: str, minutes: int) -> None:
            drinking(name, minutes)

        def cancel_coffee(self, name: str) -> None:
            pass

    class Consumer(CosTypedEventComm__POA.TypedPushConsumer):  # type: ignore[misc]
        def __init__(self) -> None:
            self.coffee = Coffee()._this()

        def get_typed_consumer(self) -> Any:
            return self.coffee

        def push(self, data: Any) -> None:
            pass

        def disconnect_push_consumer(self) -> None:
            pass

    return Consumer()._this()


class Calls:
    """The ``drinking_coffee`` calls a typed push consumer got, under a condition."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.cond = threading.Condition()

    def drinking(self, name: str, minutes: int) -> None:
        with self.cond:
            self.calls.append((name, minutes))
            self.cond.notify_all()

    def wait_for(self, count: int, timeout: float = 60) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.calls) >= count, timeout)


def typed_pull_supplier(pull_skeleton: Any, drinks: list[tuple[str, int]],
                        lock: threading.Lock) -> Any:
    """A reference to a TypedPullSupplier servant whose ``get_typed_supplier`` is a
    PullCoffee servant giving ``drinks`` (popped under ``lock``) to ``try_`` polls."""
    import CosEventComm

    class PullCoffee(pull_skeleton):  # type: ignore[misc,valid-type]
        def try_drinking_coffee(self) -> tuple[bool, str, int]:
            with lock:
                return (True, *drinks.pop(0)) if drinks else (False, "", 0)

        def try_cancel_coffee(self) -> tuple[bool, str]:
            return False, ""

        def drinking_coffee(self) -> tuple[str, int]:
            raise CosEventComm.Disconnected()

        def cancel_coffee(self) -> str:
            raise CosEventComm.Disconnected()

    class Supplier(CosTypedEventComm__POA.TypedPullSupplier):  # type: ignore[misc]
        def __init__(self) -> None:
            self.pull = PullCoffee()._this()

        def get_typed_supplier(self) -> Any:
            return self.pull

        def pull(self) -> Any:
            raise CosEventComm.Disconnected()

        def try_pull(self) -> Any:
            from omniORB import CORBA

            return CORBA.Any(CORBA.TC_null, None), False

        def disconnect_pull_supplier(self) -> None:
            pass

    return Supplier()._this()
