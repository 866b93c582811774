"""The typed proxies of a typed channel (``CosTypedNotifyChannelAdmin``), in process.

Strategy: a typed proxy is an ordinary proxy of the channel -- filters, QoS,
counters and the event path are the untyped ones -- that also speaks the
interface its key names:

- :class:`TypedProxyPushConsumer` (key: ``supported_interface``):
  ``get_typed_consumer()`` returns an object with ``<I>``'s operations; each
  call becomes the Structured Event of Table 2-2 (``%TYPED``,
  ``events.to_structured``) and enters the channel through the proxy, as a
  ``push_structured_event`` would. It is also a ``CosEventComm::PushConsumer``:
  ``push(any)`` takes an untyped event.
- :class:`TypedProxyPullSupplier` (key: ``supported_interface``):
  ``get_typed_supplier()`` returns an object with ``Pull<I>``'s operations.
  Each event the proxy's queue gives is read as a call of ``<I>``
  (``events.call_of``, or ``call_of_any`` for an event supplied as an Any)
  and kept for its operation, so ``pull_op``/``try_op`` return the next call
  of *that* operation, in channel order (as JacORB keeps a queue per
  operation). An event that is no call of ``<I>`` reaches no typed client
  (Table 2-2): it is dropped and counted (``not_typed``). It is also a
  ``CosEventComm::PullSupplier``: ``pull``/``try_pull`` give the next event
  as an Any, whatever its form.

The objects the two ``get_typed_*`` operations return are plain Python
objects in process; the server gives them a servant of the generated
skeleton (``<I>``, ``Pull<I>``).
"""

from __future__ import annotations

import keyword
import logging
import math
import threading
from collections import deque
from typing import Any

from omniORB import CORBA

import CosEventChannelAdmin
import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.channel import consumer_proxy as cp
from cosnotify.channel import pull_supplier as pls
from cosnotify.channel import push_supplier as pss
from cosnotify.channel.event import from_structured, typed_sequence
from cosnotify.typed.events import call_of, call_of_any, empty_value, to_structured
from cosnotify.typed.interfaces import Operation, TypedInterface

log = logging.getLogger("cosnotify.typed")

#: Calls a TypedProxyPullSupplier keeps for operations not being pulled, at most.
WAITING = 10_000
#: What an untyped ``pull`` waits for (``_interrupted``): any kept call.
_ANY_OPERATION = object()

__all__ = ["TypedProxyPullConsumer", "TypedProxyPullSupplier", "TypedProxyPushConsumer",
           "TypedProxyPushSupplier"]


class TypedProxyPushConsumer(cp._PushConsumer):
    """``CosTypedNotifyChannelAdmin::TypedProxyPushConsumer``."""

    proxy_type = CA.PUSH_TYPED
    client_disconnect = "disconnect_push_supplier"

    def __init__(self, admin: Any, proxy_id: int | None, interface: TypedInterface) -> None:
        super().__init__(admin, proxy_id)
        self.interface = interface
        self._typed_consumer = _typed_caller(self, interface)

    def connect_typed_push_supplier(self, push_supplier: Any) -> None:
        self._connect_supplier(push_supplier)

    def get_typed_consumer(self) -> Any:
        """The object whose ``<I>`` operations supply typed events (module docstring)."""
        return self._typed_consumer

    def push(self, data: Any) -> None:
        if not self._connected:
            self._require_connected()
        self._inject_any(data)

    def disconnect_push_consumer(self) -> None:
        self._client_disconnected()

    def _typed_call(self, operation: Operation, arguments: list[Any]) -> None:
        """The call enters as Table 2-2's %TYPED event (see ``_typed_event``)."""
        if not self._connected:
            _not_connected(self)
        self._inject(_typed_event(self, operation, arguments))

    def _on_teardown(self) -> None:
        self._service.object_destroyed(self._typed_consumer)  # its servant goes too
        super()._on_teardown()


def _typed_event(proxy: Any, operation: Operation, arguments: list[Any]) -> Any:
    """A typed call as the channel's event: Table 2-2's %TYPED Structured Event, which
    every filter it meets -- the supplier side's, the consumer side's, mapping filters
    -- gets through ``match_typed`` with the sequence section 2.7 describes
    (``event_type`` = interface and operation, then the parameters): "The match_typed
    operation is invoked by a Proxy object upon receipt of a typed event" (2.3)."""
    structured = to_structured(operation, arguments)
    event = from_structured(structured, proxy._service.clock.now())
    event.typed = typed_sequence(structured)  # never None: operation comes first
    return event


class _TypedObject:
    """What a typed proxy gives its client (``get_typed_consumer``/``_supplier``): one
    class per interface (``_CLASSES``), the proxy on the instance. It is destroyed
    with its proxy (the server's forwarder answers OBJECT_NOT_EXIST then), and a call
    while the proxy is not connected is BAD_INV_ORDER: the user's operations declare
    no exception a CORBA client could be given instead."""

    _skeleton: Any = None
    #: Its object key is its proxy's with this after it (server/objects.py), so a
    #: reference to it names it again once a store has restored the proxy.
    _spec_suffix = "typed"

    def __init__(self, proxy: Any) -> None:
        self._proxy = proxy
        self._owner = proxy  # server/objects.py: destroyed with its owner

    @property
    def _destroyed(self) -> bool:
        return bool(self._proxy._destroyed)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._proxy!r}>"


#: The class of the typed objects of each interface: (kind, repository id) -> class.
_CLASSES: dict[tuple[str, str], type] = {}
_CLASSES_LOCK = threading.Lock()


def _not_connected(proxy: Any) -> None:
    if proxy._destroyed:
        raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, "the proxy was destroyed")
    raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_NO, "the typed proxy is not connected")


def _python_name(name: str) -> str:
    return "_" + name if keyword.iskeyword(name) else name


def _typed_caller(proxy: TypedProxyPushConsumer, interface: TypedInterface) -> Any:
    """An object with a method per operation of ``interface`` that calls ``proxy``."""
    key = ("caller", interface.repo_id)
    with _CLASSES_LOCK:
        cls = _CLASSES.get(key)
        if cls is None or getattr(cls, "_skeleton", None) is not interface.skeleton:

            def method(operation: Operation) -> Any:
                def call(self: Any, *arguments: Any) -> None:
                    self._proxy._typed_call(operation, list(arguments))
                call.__name__ = _python_name(operation.name)
                return call

            namespace: dict[str, Any] = {_python_name(name): method(op)
                                         for name, op in interface.operations.items()}
            namespace["_skeleton"] = interface.skeleton  # served with <I>'s skeleton
            cls = _CLASSES[key] = type(f"Typed_{interface.scoped_name.replace('::', '_')}",
                                       (_TypedObject,), namespace)
    return cls(proxy)


class TypedProxyPullSupplier(pls.ProxyPullSupplier):
    """``CosTypedNotifyChannelAdmin::TypedProxyPullSupplier``."""

    proxy_type = CA.PULL_TYPED
    client_disconnect = "disconnect_pull_consumer"

    def __init__(self, admin: Any, proxy_id: int | None, interface: TypedInterface) -> None:
        super().__init__(admin, proxy_id)
        self.interface = interface
        #: Calls read from the queue, waiting for their operation's pull (lock held):
        #: (queue entry, arguments). The entry is released when the call is given, so
        #: a persistent event kept here is still in the store across a restart.
        self._calls: dict[str, deque[tuple[Any, list[Any]]]] = {
            op: deque() for op in interface.operations}
        self._waiting = 0
        #: The operation each pulling thread waits for (``_interrupted``).
        self._pulling_for = threading.local()
        #: Events that were no call of the interface (Table 2-2: dropped).
        self.not_typed = 0
        #: Calls kept for an operation nobody pulled, dropped past ``WAITING``.
        self.dropped_calls = 0
        self._typed_supplier = _typed_puller(self, interface)

    def connect_typed_pull_consumer(self, pull_consumer: Any) -> None:
        self._connect_consumer(pull_consumer)

    def get_typed_supplier(self) -> Any:
        """The object whose ``Pull<I>`` operations give typed events (module docstring)."""
        return self._typed_supplier

    def _next_call(self, operation: str, block: bool) -> list[Any] | None:
        """The next call of ``operation``: kept, or read from the queue (others kept).

        A call read for another operation is kept for it (at most ``WAITING`` in all,
        past that the oldest call of the operation with the most kept ones is
        dropped and counted), and wakes a pull of it that waits: ``_interrupted``
        ends a blocking take when the puller's own calls are there. A kept call's
        queue entry is released when the call is given, dropped or expired; a call
        counts as delivered when it is given.
        """
        while True:
            with self._lock:
                self._require_connected()
                waiting = self._calls[operation]
                kept = waiting.popleft() if waiting else None
                if kept is not None:
                    self._waiting -= 1
            if kept is not None:
                entry, arguments = kept
                due = self._still_due(entry)
                self._channel._released([entry])
                if due:
                    self._given()
                    return arguments
                continue
            self._pulling_for.operation = operation
            try:
                batch = self._take(1, block=block)  # counted as delivered: see _keep
            finally:
                self._pulling_for.operation = None
            if not batch:
                if block:
                    continue  # woken for a call kept for this operation
                return None
            entry = batch[0]
            found_call = _call_of_event(self.interface, entry.event)
            if found_call is None:
                self._channel._released(batch)
                self._channel._delivered(1)  # taken from the queue (docs/typed.md)
                with self._lock:
                    self.not_typed += 1
                continue
            found, arguments = found_call
            with self._lock:
                if found.name == operation and not self._calls[operation]:
                    kept = None
                else:  # another operation's, or one of this operation was kept
                    dropped = self._keep(found.name, entry, arguments)  # meanwhile (older)
                    kept = (entry, arguments)
            if kept is None:
                self._channel._released(batch)
                self._channel._delivered(1)
                return arguments
            self._channel._released(dropped)

    def pull(self) -> Any:
        """``CosEventComm::PullSupplier::pull``: the next event as an Any, a call kept
        for another operation's pull included (the oldest first, in channel order)."""
        while True:
            kept = self._oldest_kept()
            if kept is not None:
                return kept
            self._pulling_for.operation = _ANY_OPERATION  # a kept call ends the wait
            try:
                batch = self._take(1, block=True)
            finally:
                self._pulling_for.operation = None
            if batch:
                self._taken(batch)
                return batch[0].event.as_any()

    def try_pull(self) -> tuple[Any, bool]:
        kept = self._oldest_kept()
        if kept is not None:
            return kept, True
        return super().try_pull()

    def _oldest_kept(self) -> Any | None:
        """The oldest call kept for an operation's pull, as the Any ``pull`` gives, or
        None: released and counted as ``_next_call`` gives one (review 107: ``pull``
        and ``try_pull`` read the queue only, and a kept call never came out of
        them)."""
        while True:
            with self._lock:
                self._require_connected()
                oldest = self._oldest_operation()
                if oldest is None:
                    return None
                entry, _ = self._calls[oldest].popleft()
                self._waiting -= 1
            due = self._still_due(entry)
            self._channel._released([entry])
            if due:
                self._given()
                return entry.event.as_any()

    def _oldest_operation(self) -> Any:
        """The operation whose kept call came first (channel order), or None (lock held)."""
        heads = [(waiting[0][0].seq, operation)
                 for operation, waiting in self._calls.items() if waiting]
        return min(heads)[1] if heads else None

    def _given(self) -> None:
        """A kept call was given: it counts as delivered now (``_keep`` took it back)."""
        with self._lock:
            if self._counting:
                self._n_delivered += 1
        self._channel._delivered(1)

    @property
    def kept_calls(self) -> int:
        """Calls read from the queue and kept for their operation's pull (its depth)."""
        return self._waiting

    def _still_due(self, entry: Any) -> bool:
        """May a kept call still be given? Not once its deadline passed (counted as
        expired). MaxQueueLength counts a kept call until it is given, or until the
        channel's sweep finds it expired (``_expire_held``)."""
        if entry.deadline is not None and entry.deadline <= self._service.clock.now():
            with self._lock:
                self._queue.expired += 1
            return False
        return True

    def _expire_held(self, now: float) -> tuple[list[Any], float]:
        """The channel's sweep: kept calls past their deadline leave now, counted as
        expired, not when a pull meets them (review 141: they filled MaxQueueLength)."""
        gone: list[Any] = []
        soonest = math.inf
        for operation, waiting in self._calls.items():
            late = [kept for kept in waiting
                    if kept[0].deadline is not None and kept[0].deadline <= now]
            if late:
                self._calls[operation] = deque(
                    kept for kept in waiting if kept[0].deadline is None
                    or kept[0].deadline > now)
                gone.extend(entry for entry, _ in late)
            for entry, _ in self._calls[operation]:
                if entry.deadline is not None and entry.deadline < soonest:
                    soonest = entry.deadline
        self._waiting -= len(gone)
        self._queue.expired += len(gone)
        return gone, soonest

    def _keep(self, operation: str, entry: Any, arguments: list[Any]) -> list[Any]:
        """Keep a call for its operation's pull (lock held); see ``_next_call``. Past
        ``WAITING`` kept calls, the oldest call of the operation with the most kept
        ones is dropped and counted. Returns the entries to release: the dropped one,
        or this one if the proxy was torn down meanwhile. A kept persistent call stays
        in the store (and out of the memory window: ``DurableQueue.held``)."""
        if self._counting:
            self._n_delivered -= 1  # _take counted it; it counts once given (_given)
        if self._destroyed or not self._connected:
            return [entry]
        self._calls[operation].append((entry, arguments))
        self._waiting += 1
        self._holds([entry])
        durable = self._queue.durable
        if durable is not None and entry.stored:
            durable.held.add(entry.stored)
        dropped = []
        # The queue's limit (MaxEventsPerConsumer, or the service's cap) bounds the kept
        # calls too, on their own (with the queue, a consumer may be held twice the
        # limit): past it the oldest kept call is discarded, and counted so (review 107).
        # Past WAITING, the oldest call of the operation with the most kept ones goes.
        limit = self._queue.max_events
        bound = min(WAITING, limit) if limit > 0 else WAITING
        while self._waiting > bound:
            if bound < WAITING:
                dropped.append(self._calls[self._oldest_operation()].popleft()[0])
                self._queue.discarded += 1
            else:
                dropped.append(max(self._calls.values(), key=len).popleft()[0])
                self.dropped_calls += 1
            self._waiting -= 1
        self._cond.notify_all()
        return dropped

    def _typed_next(self, operation: str, block: bool) -> list[Any] | None:
        """``_next_call`` for the ``Pull<I>`` object: not connected is BAD_INV_ORDER."""
        try:
            return self._next_call(operation, block)
        except CosEventComm.Disconnected:
            _not_connected(self)
            raise  # not reached

    def _interrupted(self) -> bool:
        operation = getattr(self._pulling_for, "operation", None)
        if operation is _ANY_OPERATION:  # an untyped pull: any kept call is its next
            return self._waiting > 0
        return operation is not None and bool(self._calls.get(operation))

    def _on_teardown(self) -> None:
        with self._lock:
            gone = [entry for waiting in self._calls.values() for entry, _ in waiting]
            for waiting in self._calls.values():
                waiting.clear()
            self._waiting = 0
        self._channel._released(gone)
        self._service.object_destroyed(self._typed_supplier)  # its servant goes too
        super()._on_teardown()

def _outs(values: list[Any]) -> Any:
    """omniORBpy's form of out parameters: one value, or a tuple of them."""
    return values[0] if len(values) == 1 else tuple(values)


def _typed_puller(proxy: TypedProxyPullSupplier, interface: TypedInterface) -> Any:
    """An object with ``Pull<I>``'s operations (its names, interfaces.py) over ``proxy``."""
    key = ("puller", interface.repo_id)
    with _CLASSES_LOCK:
        cls = _CLASSES.get(key)
        if cls is None or getattr(cls, "_skeleton", None) is not interface.pull_skeleton:

            def pull(name: str) -> Any:
                def call(self: Any) -> Any:
                    values = self._proxy._typed_next(name, block=True)
                    assert values is not None
                    return _outs(values) if values else None
                return call

            def try_(name: str, operation: Operation) -> Any:
                def call(self: Any) -> Any:
                    values = self._proxy._typed_next(name, block=False)
                    if not operation.parameters:  # omniORBpy: a bare boolean then
                        return values is not None
                    if values is None:  # nothing yet: FALSE, and zeros of the out types
                        return (False, *(empty_value(p.typecode) for p in operation.parameters))
                    return (True, *values)
                return call

            namespace: dict[str, Any] = {}
            for name, operation in interface.operations.items():
                pulled, tried = interface.pull_names.get(name, (f"pull_{name}", f"try_{name}"))
                namespace[_python_name(pulled)] = pull(name)
                namespace[_python_name(tried)] = try_(name, operation)
            namespace["_skeleton"] = interface.pull_skeleton  # served with Pull<I>'s skeleton
            cls = _CLASSES[key] = type(f"Pull_{interface.scoped_name.replace('::', '_')}",
                                       (_TypedObject,), namespace)
    return cls(proxy)


def _typed_object(found: Any, stub: Any, names: list[str]) -> Any:
    """``found`` as an object of ``stub``'s interface: a reference narrowed (one remote
    ``_is_a``), or an in-process object that has every operation; else TypeError."""
    if isinstance(found, CORBA.Object):
        narrowed = found._narrow(stub)
        if narrowed is None:
            raise CosEventChannelAdmin.TypeError()
        return narrowed
    if found is None or not all(callable(getattr(found, name, None)) for name in names):
        raise CosEventChannelAdmin.TypeError()
    return found


def _call_of_event(interface: TypedInterface, event: Any) -> tuple[Operation, list[Any]] | None:
    structured = event.as_structured()
    if structured.header.fixed_header.event_type.type_name == "%ANY":
        return call_of_any(interface, event.as_any())
    return call_of(interface, structured)


class TypedProxyPushSupplier(pss.ProxyPushSupplier):
    """``CosTypedNotifyChannelAdmin::TypedProxyPushSupplier``."""

    proxy_type = CA.PUSH_TYPED
    client_disconnect = "disconnect_push_consumer"
    consumer_method = "get_typed_consumer"
    consumer_interface = "IDL:omg.org/CosTypedEventComm/TypedPushConsumer:1.0"

    def __init__(self, admin: Any, proxy_id: int | None, interface: TypedInterface) -> None:
        super().__init__(admin, proxy_id)
        self.interface = interface
        self._typed: Any = None
        #: Events that were no call of the interface (Table 2-2: dropped).
        self.not_typed = 0

    def connect_typed_push_consumer(self, push_consumer: Any) -> None:
        if push_consumer is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "a nil client reference cannot be served")
        self._refuse_if_connected()  # 3.6.4.1, before the client is asked anything
        try:
            typed = self._narrow(push_consumer)
        except AttributeError:
            raise CosEventChannelAdmin.TypeError() from None

        def attach() -> None:  # with the client, in one step: a refused connect sets none
            self._typed = typed

        self._connect(push_consumer, required=self.consumer_method,
                      interface=self.consumer_interface, allow_nil=False, attach=attach)

    def _narrow(self, client: Any) -> Any:
        """The client's typed object, as ``<I>`` (TypeError if it is none)."""
        return _typed_object(client.get_typed_consumer(), self.interface.stub,
                             [_python_name(n) for n in self.interface.operations])

    def connect_any_push_consumer(self, push_consumer: Any) -> None:
        raise CORBA.NO_IMPLEMENT(0, CORBA.COMPLETED_NO,
                                 "a typed proxy connects with connect_typed_push_consumer")

    def _send(self, consumer: Any, batch: list[Any]) -> None:
        pss._one_by_one(self, self._push_typed, batch, lambda event: event)

    def _push_typed(self, event: Any) -> None:
        call = _call_of_event(self.interface, event)
        if call is None:
            with self._lock:
                self.not_typed += 1
            return
        operation, arguments = call
        typed = self._typed
        if typed is None:  # restored from a store: asked again (a failure is retried)
            typed = self._typed = self._narrow(self._client)
        getattr(typed, _python_name(operation.name))(*arguments)


class TypedProxyPullConsumer(cp._PullConsumer):
    """``CosTypedNotifyChannelAdmin::TypedProxyPullConsumer``."""

    proxy_type = CA.PULL_TYPED
    client_disconnect = "disconnect_pull_supplier"
    supplier_method = "get_typed_supplier"
    supplier_interface = "IDL:omg.org/CosTypedEventComm/TypedPullSupplier:1.0"

    def __init__(self, admin: Any, proxy_id: int | None, interface: TypedInterface) -> None:
        super().__init__(admin, proxy_id)
        self.interface = interface
        self._typed: Any = None
        #: Calls pulled whose values their types cannot hold (in process), dropped.
        self.bad_calls = 0

    def connect_typed_pull_supplier(self, pull_supplier: Any) -> None:
        if pull_supplier is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "a nil client reference cannot be served")
        self._refuse_if_connected()  # 3.6.3.1, before the client is asked anything
        try:
            typed = self._narrow(pull_supplier)
        except AttributeError:
            raise CosEventChannelAdmin.TypeError() from None

        def attach() -> None:  # with the client, in one step: a refused connect sets none
            self._typed = typed

        self._connect(pull_supplier, required=self.supplier_method,
                      interface=self.supplier_interface, allow_nil=False, attach=attach)

    def _narrow(self, client: Any) -> Any:
        """The client's typed object, as ``Pull<I>`` (TypeError if it is none)."""
        tries = [_python_name(tried) for _, tried in self.interface.pull_names.values()]
        return _typed_object(client.get_typed_supplier(), self.interface.pull_stub, tries)

    def disconnect_pull_consumer(self) -> None:
        self._client_disconnected()

    def _inject_typed(self, call: tuple[Operation, list[Any]]) -> None:
        try:
            event = _typed_event(self, *call)
        except CORBA.BAD_PARAM as exc:  # a value its type cannot hold: that call goes
            log.warning("%r: dropped a pulled call: %s", self, exc)
            with self._lock:
                self.bad_calls += 1
            return
        self._inject(event)

    def _pull_from(self, supplier: Any) -> bool:
        got = False
        interface = self.interface
        typed = self._typed
        if typed is None:  # restored from a store: asked again (a failure is retried)
            typed = self._typed = self._narrow(supplier)
        for name, operation in interface.operations.items():
            tried = _python_name(interface.pull_names[name][1])
            result = getattr(typed, tried)()
            has_event, values = (result[0], list(result[1:])) if isinstance(result, tuple) \
                else (result, [])
            if has_event:
                self._inject_checked(self._inject_typed, (operation, values))
                got = True
        return got
