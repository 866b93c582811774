"""Servants for every interface of the service, forwarding to the in-process core.

Strategy: the core objects already implement their IDL operations under the
mapping names, so a servant is omniORB's generated skeleton (from the bundled
COS stubs) plus one generic forwarder: omniORB finds each operation on the
servant by name, and ``__getattr__`` answers for every operation of the
skeleton's ``_omni_op_d`` table. The first call of an operation builds its
forwarding function from the operation's descriptor (in-parameter,
result/out and exception descriptors): operations that carry no object
references call the core method directly, after one check that a
destroyable object (a proxy, admin or channel) still exists -- the hot path,
``push_structured_event``, pays only that; the others translate references
on the way in (a reference to one
of our own filters becomes the local filter object, so it is never called
remotely: spec footnote 2 of section 2.3) and core objects on the way out
(into references made by the :class:`ObjectMap`). A destroyed core object
answers ``OBJECT_NOT_EXIST`` and its servant is deactivated.

Reference parameters are checked against their IDL type: one of our own
objects of the wrong interface is ``BAD_PARAM`` (``TypeError`` where the
operation declares it, the connect operations). A filter or mapping filter
that lives in a client's process is verified to be one and wrapped in a
guard (``remote.py``) so it cannot stall the event path.
"""

from __future__ import annotations

import functools
import keyword
from collections.abc import Callable
from typing import Any

import omniORB
from omniORB import CORBA

import CosEventChannelAdmin
import CosEventChannelAdmin__POA
import CosNotifyChannelAdmin__POA
import CosNotifyChannelAdminAck__POA
import CosNotifyComm__POA
import CosNotifyFilter__POA
import CosNotifyGrammars__POA
import CosNotifyHistory__POA
import CosNotifyMonitor__POA
import CosTypedEventChannelAdmin__POA
import CosTypedNotifyChannelAdmin__POA
import NotifyMonitoringExt__POA

from cosnotify.channel import ack
from cosnotify.channel import admin as admins
from cosnotify.channel import consumer_proxy as cp
from cosnotify.channel import pull_supplier as pls
from cosnotify.channel import push_supplier as pss
from cosnotify.channel.channel import EventChannel
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.subscriptions import FilterCallback
from cosnotify.corba import descriptors as D
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.filter import Filter
from cosnotify.filter.mapping import MappingFilter
from cosnotify.history.corba import History
from cosnotify.ops.stats import stats_json
from cosnotify.server import remote
from cosnotify.server.objects import destroyed
from cosnotify.typed import channel as typed
from cosnotify.typed import event_service as typed_es
from cosnotify.typed import proxies as typed_proxies

__all__ = ["SKELETONS", "ServantFactory"]

NCA = CosNotifyChannelAdmin__POA
ECA = CosEventChannelAdmin__POA
ACK = CosNotifyChannelAdminAck__POA
#: TAO's most derived interfaces (idl/NotifyMonitoringExt.idl) serve the factory, channels
#: and admins; a TAO client narrows to them (docs/server.md, "TAO's extensions").
TAO = NotifyMonitoringExt__POA
#: The factory is one step more derived: cosnotify's CosNotifyMonitor::EventChannelFactory
#: adds the snapshot `cosnotify ls` and `top` read (idl/CosNotifyMonitor.idl).
MONITOR = CosNotifyMonitor__POA
TCA = CosTypedNotifyChannelAdmin__POA
TECA = CosTypedEventChannelAdmin__POA
#: The type id their references carry: the OMG base's, so an OMG client's ORB types the
#: reference exactly as before without asking (omniORBpy's ``string_to_object`` gives an
#: untyped ``CORBA.Object`` for an id it has no stubs for); ``_is_a`` answers for both.
ADVERTISED_IDS = {MONITOR.EventChannelFactory: NCA.EventChannelFactory._NP_RepositoryId,
                  TAO.EventChannel: NCA.EventChannel._NP_RepositoryId,
                  TAO.ConsumerAdmin: NCA.ConsumerAdmin._NP_RepositoryId,
                  TAO.SupplierAdmin: NCA.SupplierAdmin._NP_RepositoryId}

#: Which skeleton serves which core class (most derived classes first).
SKELETONS: list[tuple[type, type]] = [
    # Typed channels (docs/typed.md): before the untyped classes they derive from, the
    # Event Service style typed proxies before the notification style they derive from.
    (typed_es.EventServiceTypedProxyPushConsumer, TECA.TypedProxyPushConsumer),
    (typed_es.EventServiceTypedProxyPullSupplier, TECA.TypedProxyPullSupplier),
    (typed_es.EventServiceTypedProxyPushSupplier, ECA.ProxyPushSupplier),
    (typed_es.EventServiceTypedProxyPullConsumer, ECA.ProxyPullConsumer),
    (typed.TypedFactory, TCA.TypedEventChannelFactory),
    (typed.TypedEventChannel, TCA.TypedEventChannel),
    # for_consumers/for_suppliers: CosTypedEventChannelAdmin's admins (no MyID; section 2.7).
    (typed.EventServiceTypedConsumerAdmin, TECA.TypedConsumerAdmin),
    (typed.EventServiceTypedSupplierAdmin, TECA.TypedSupplierAdmin),
    (typed.TypedConsumerAdmin, TCA.TypedConsumerAdmin),
    (typed.TypedSupplierAdmin, TCA.TypedSupplierAdmin),
    (typed_proxies.TypedProxyPushConsumer, TCA.TypedProxyPushConsumer),
    (typed_proxies.TypedProxyPullSupplier, TCA.TypedProxyPullSupplier),
    (typed_proxies.TypedProxyPushSupplier, TCA.TypedProxyPushSupplier),
    (typed_proxies.TypedProxyPullConsumer, TCA.TypedProxyPullConsumer),
    (EventChannelFactory, MONITOR.EventChannelFactory),
    (EventChannel, TAO.EventChannel),
    (admins.EventServiceConsumerAdmin, ECA.ConsumerAdmin),
    (admins.EventServiceSupplierAdmin, ECA.SupplierAdmin),
    (admins.ConsumerAdmin, TAO.ConsumerAdmin),
    (admins.SupplierAdmin, TAO.SupplierAdmin),
    (ack.StructuredProxyPushSupplierAck, ACK.StructuredProxyPushSupplierAck),
    (ack.SequenceProxyPushSupplierAck, ACK.SequenceProxyPushSupplierAck),
    (ack.StructuredProxyPullSupplierAck, ACK.StructuredProxyPullSupplierAck),
    (ack.SequenceProxyPullSupplierAck, ACK.SequenceProxyPullSupplierAck),
    (pss.EventServiceProxyPushSupplier, ECA.ProxyPushSupplier),
    (pss.ProxyPushSupplier, NCA.ProxyPushSupplier),
    (pss.StructuredProxyPushSupplier, NCA.StructuredProxyPushSupplier),
    (pss.SequenceProxyPushSupplier, NCA.SequenceProxyPushSupplier),
    (pls.EventServiceProxyPullSupplier, ECA.ProxyPullSupplier),
    (pls.ProxyPullSupplier, NCA.ProxyPullSupplier),
    (pls.StructuredProxyPullSupplier, NCA.StructuredProxyPullSupplier),
    (pls.SequenceProxyPullSupplier, NCA.SequenceProxyPullSupplier),
    (cp.EventServiceProxyPushConsumer, ECA.ProxyPushConsumer),
    (cp.ProxyPushConsumer, NCA.ProxyPushConsumer),
    (cp.StructuredProxyPushConsumer, NCA.StructuredProxyPushConsumer),
    (cp.SequenceProxyPushConsumer, NCA.SequenceProxyPushConsumer),
    (cp.EventServiceProxyPullConsumer, ECA.ProxyPullConsumer),
    (cp.ProxyPullConsumer, NCA.ProxyPullConsumer),
    (cp.StructuredProxyPullConsumer, NCA.StructuredProxyPullConsumer),
    (cp.SequenceProxyPullConsumer, NCA.SequenceProxyPullConsumer),
    # Channel facets (idl/CosNotifyHistory.idl).
    (History, CosNotifyHistory__POA.History),
    # CosNotifyFilter::FilterFactory, plus the list of its grammars (idl/CosNotifyGrammars.idl).
    (FilterFactory, CosNotifyGrammars__POA.GrammarFilterFactory),
    (Filter, CosNotifyFilter__POA.Filter),
    (MappingFilter, CosNotifyFilter__POA.MappingFilter),
    (FilterCallback, CosNotifyComm__POA.NotifySubscribe),
]


_FILTER = "IDL:omg.org/CosNotifyFilter/Filter:1.0"
_MAPPING_FILTER = "IDL:omg.org/CosNotifyFilter/MappingFilter:1.0"
_ANY_OBJECT = "IDL:omg.org/CORBA/Object:1.0"


def _objref_id(d: Any) -> str | None:
    """The interface id if descriptor ``d`` is an object reference type, else None."""
    d = D.unalias(d)
    if type(d) is tuple and d[0] in (D.OBJREF, D.ABSTRACT_INTERFACE):
        return d[1] or _ANY_OBJECT
    return None


def _class_is_a(cls: type, repo_id: str) -> bool:
    return repo_id == _ANY_OBJECT or any(
        getattr(c, "_NP_RepositoryId", None) == repo_id for c in cls.__mro__)


class Operation:
    """One IDL operation, from a skeleton's ``_omni_op_d`` descriptor."""

    __slots__ = ("in_refs", "name", "out_refs", "outs", "raises")

    def __init__(self, name: str, descriptor: Any) -> None:
        # omniORBpy adds a fourth item for an operation with a context clause.
        in_descs, out_descs, raises = descriptor[:3]
        self.name = name
        self.raises: frozenset[str] = frozenset(raises or ())
        self.outs = 0 if out_descs is None else len(out_descs)
        self.in_refs = {i: found for i, d in enumerate(in_descs)
                        if (found := _objref_id(d)) is not None}
        self.out_refs = frozenset(i for i, d in enumerate(out_descs or ())
                                  if _objref_id(d) is not None)


class _Forwarder:
    """Mixed into each skeleton: forwards operations to ``self._core``."""

    _omni_op_d: Any
    _NP_RepositoryId: str

    def __init__(self, factory: ServantFactory, core: Any, oid: bytes) -> None:
        self._factory = factory
        self._core = core
        self._oid = oid

    def __getattr__(self, name: str) -> Any:
        if name.startswith(("__", "_omni")):
            raise AttributeError(name)
        operations = type(self)._omni_op_d
        idl_name = name
        descriptor = operations.get(name)
        if descriptor is None and name.startswith("_"):
            idl_name = name[1:]  # an operation named like a Python keyword
            descriptor = operations.get(idl_name)
        if descriptor is None:
            raise AttributeError(name)
        method = self._factory.forwarding(Operation(idl_name, descriptor), self._core,
                                          self._oid)
        self.__dict__[name] = method  # built once per servant and operation
        return method

    def _non_existent(self) -> bool:
        return destroyed(self._core)


class ServantFactory:
    """Makes servants for core objects and translates references across them."""

    def __init__(self, filter_timeout: float = 1.0,
                 submit: Callable[..., None] | None = None,
                 call_timeout: float | None = None,
                 lane_for: Callable[[Any], Any] | None = None) -> None:
        self.objects: Any = None  # the ObjectMap, set once both exist
        self.filter_timeout = filter_timeout
        #: Set on each client reference the server receives (None: the ORB's default).
        self.call_timeout = call_timeout
        #: Runs background work (filter probes, detach_callback): the worker pool.
        self.submit: Callable[..., None] = submit or _run_now
        #: The worker lane of a client reference (``Service.lane_for``), so calls to a
        #: client's filters (probes, detach_callback) count against that client's lane.
        self.lane_for: Callable[[Any], Any] = lane_for or _no_lane
        self._classes: dict[type, type] = {}
        #: Factory operations served by objects of their own rather than the core
        #: factory (the tuple spaces' and trees' factories, app.py): name -> function.
        self.extensions: dict[str, Callable[..., Any]] = {}

    def servant_for(self, core: Any, oid: bytes) -> Any:
        cls = self._servant_class(type(core))
        if cls is None:
            return None
        if isinstance(core, pls._PullSupplier):
            # Its events go out through the ORB: none omniORBpy would garble (docs/orb.md).
            core._marshalled = True
        return cls(self, core, oid)

    def _servant_class(self, core_type: type) -> type | None:
        found = self._classes.get(core_type)
        if found is None:
            # The objects a typed proxy gives (get_typed_consumer/_supplier) carry the
            # skeleton of the user's interface that was compiled for them (typed/).
            own: Any = getattr(core_type, "_skeleton", None)
            table: list[tuple[type, Any]] = [(core_type, own)] if own is not None \
                else list(SKELETONS)
            for core_base, skeleton in table:
                if issubclass(core_type, core_base):
                    found = type(f"{skeleton.__name__}Servant", (_Forwarder, skeleton), {
                        "_advertised_id": ADVERTISED_IDS.get(
                            skeleton, skeleton._NP_RepositoryId),
                        "__init__": _Forwarder.__init__,
                        "_non_existent": _Forwarder._non_existent})
                    self._classes[core_type] = found
                    break
        return found

    def repo_id(self, core: Any) -> str:
        cls = self._servant_class(type(core))
        if cls is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"no interface serves {core!r}")
        return str(cls._advertised_id)  # type: ignore[attr-defined]

    # -- reference translation -------------------------------------------------------------
    def to_reference(self, value: Any) -> Any:
        """A core object as a reference; references and None pass unchanged."""
        if value is None or isinstance(value, CORBA.Object):
            return value
        if isinstance(value, remote.GuardedFilter):
            return value.reference  # a client's own filter: its own reference
        # A filter made for a remote client is held by nothing else until destroy().
        keep = isinstance(value, (Filter, MappingFilter))
        return self.objects.reference(value, self.repo_id(value), keep=keep)

    def to_core(self, value: Any) -> Any:
        """A reference to one of our objects as that object; others pass unchanged."""
        return self.objects.core_of(value)

    def checked_core(self, value: Any, repo_id: str, operation: Operation) -> Any:
        """``value``, an in parameter of IDL type ``repo_id``, as the core will use it.

        Our own objects become core objects and must be of that type; a client's
        filter or mapping filter is checked and guarded (remote.py); other
        references (consumers, suppliers) get the call timeout and pass unchanged.
        """
        core = self.to_core(value)
        if core is None:
            return None
        if not isinstance(core, CORBA.Object):
            cls = self._servant_class(type(core))
            if cls is None or not _class_is_a(cls, repo_id):
                raise _wrong_type(operation, f"{type(core).__name__} is not a {repo_id}")
            return core
        if repo_id not in (_FILTER, _MAPPING_FILTER):
            if self.call_timeout is not None:
                omniORB.setClientCallTimeout(core, max(1, round(self.call_timeout * 1000)))
            return core
        try:
            # omniORB answers from the IOR's type id when that proves it, and asks the
            # object otherwise (the stub class a reference arrives as proves nothing).
            omniORB.setClientCallTimeout(core, max(1, round(self.filter_timeout * 1000)))
            verified = bool(core._is_a(repo_id))
        except CORBA.SystemException as exc:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                  f"cannot verify the filter: {type(exc).__name__}") from exc
        if not verified:
            raise _wrong_type(operation, f"the object is not a {repo_id}")
        if repo_id == _FILTER:
            role = "filter"
        else:
            role = "lifetime" if operation.name == "_set_lifetime_filter" else "priority"
        return self.guarded_filter(core, role)

    def guarded_filter(self, reference: Any, role: str) -> Any:
        """A client's filter as the core uses it (remote.py): ``role`` is ``filter``, or
        the mapping filter's ``priority`` or ``lifetime``. Asks the client nothing (a
        restored filter's client may not be running yet)."""
        omniORB.setClientCallTimeout(reference, max(1, round(self.filter_timeout * 1000)))
        lane, submit = self.lane_for(reference), self.submit

        def in_lane(task: Callable[[], Any]) -> None:
            if lane is None:
                submit(task)
            else:
                submit(task, lane)

        if role == "filter":
            return remote.RemoteFilter(reference, self.filter_timeout, in_lane,
                                       self.to_reference, self.objects.forget_core)
        value_range = remote.LIFETIME_RANGE if role == "lifetime" else remote.PRIORITY_RANGE
        return remote.RemoteMappingFilter(reference, self.filter_timeout, in_lane,
                                          self.to_reference, self.objects.forget_core,
                                          value_range)

    def forwarding(self, operation: Operation, core: Any, oid: bytes) -> Callable[..., Any]:
        """The function a servant runs for ``operation`` on ``core``."""
        if operation.name == "snapshot" and isinstance(core, EventChannelFactory):
            # CosNotifyMonitor::Monitor: the ops layer reads the core; the core has no
            # such operation of its own.
            return functools.partial(stats_json, core)
        if operation.name in self.extensions and isinstance(core, EventChannelFactory):
            # CosNotifyEventHeap::TupleSpaceFactory, CosNotifyOES::TreeFactory.
            return self.extensions[operation.name]
        target = getattr(core, _python_name(operation.name))
        in_refs = operation.in_refs
        out_refs = operation.out_refs
        several = operation.outs > 1
        destroyable = hasattr(core, "_destroyed")
        objects = self.objects
        if operation.name == "destroy":
            def destroy() -> Any:
                try:
                    return target()
                finally:
                    objects.release(oid)
            return destroy
        if not (in_refs or out_refs or destroyable):
            return target  # type: ignore[no-any-return]
        checked_core, to_reference = self.checked_core, self.to_reference

        def forward(*args: Any) -> Any:
            if destroyable and core._destroyed:
                objects.forget(oid)
                raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, "the object was destroyed")
            if in_refs:
                args = tuple(checked_core(a, in_refs[i], operation) if i in in_refs else a
                             for i, a in enumerate(args))
            value = target(*args)
            if not out_refs:
                return value
            if not several:
                return to_reference(value)
            return tuple(to_reference(v) if i in out_refs else v for i, v in enumerate(value))

        return forward


def _wrong_type(operation: Operation, detail: str) -> Exception:
    """TypeError where the operation declares it (the connect operations), else BAD_PARAM."""
    error: Exception
    if CosEventChannelAdmin.TypeError._NP_RepositoryId in operation.raises:
        error = CosEventChannelAdmin.TypeError()
    else:
        error = CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"{operation.name}: {detail}")
    return error


def _run_now(task: Callable[[], Any], lane: Any = None) -> None:
    task()


def _no_lane(reference: Any) -> None:
    return None


def _python_name(operation: str) -> str:
    return "_" + operation if keyword.iskeyword(operation) else operation
