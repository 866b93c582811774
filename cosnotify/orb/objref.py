"""Object references: the delegate behind every stub, and the client call path.

Strategy: a stub (``_objref_X``) holds an :class:`ObjectRef` delegate, made
from an IOR and bound to one ORB. ``invoke(operation, args)`` marshals the
in and inout arguments by the operation's TypeCodes (CDR, sans-IO), sends a
GIOP Request over the pooled connection for the first reachable address of
the IOR (profiles in order, then their alternate addresses, as corbaloc
URLs with several addresses require), waits for the Reply and unmarshals the
result and out values, packed as the mapping returns them
(``Operation.pack_result``). Object references in results become stubs of
the class registered for the *static* type (the TypeCode's repository id).

Replies steer the call (CORBA 3.0 15.4.3.1): USER_EXCEPTION raises the
operation's exception class with its members (an exception the operation
does not declare becomes ``UNKNOWN``); SYSTEM_EXCEPTION raises the CORBA
class with the peer's minor code and completion status;
LOCATION_FORWARD(_PERM) re-sends to the forwarded IOR (kept for later calls;
if the forwarded target later fails with TRANSIENT/COMM_FAILURE/
OBJECT_NOT_EXIST before completing, the original is tried again, 15.4.3.2);
NEEDS_ADDRESSING_MODE re-sends with the addressing disposition asked for.
A request that certainly was not processed (the connection was found
closed, or the server sent CloseConnection) is retried once.

A reference to an object of this same ORB is *collocated*: the call goes
straight to the servant through its POA (manager states, servant managers
and exception rules as for a remote call), without marshalling, except that
operations passing object references or Anys are copied through CDR so the
servant sees references, never servants.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cosnotify.orb import poa as poa_module
from cosnotify.orb.cdr import Decoder, Encoder
from cosnotify.orb.cdr_core import DecodeState, EncodeState
from cosnotify.orb.codesets import negotiate
from cosnotify.orb.dispatch import PSEUDO_OPERATIONS, method_name
from cosnotify.orb.exceptions import (
    BAD_PARAM,
    COMM_FAILURE,
    COMPLETED_MAYBE,
    COMPLETED_NO,
    COMPLETED_YES,
    INV_OBJREF,
    MARSHAL,
    NO_IMPLEMENT,
    OBJECT_NOT_EXIST,
    OMGVMCID,
    TRANSIENT,
    UNKNOWN,
    SystemException,
    UserException,
)
from cosnotify.orb.fastpath import OperationPlan, RawReply, plan_for, request_prefix
from cosnotify.orb.giop_messages import (
    MessageFormatError,
    ProfileAddr,
    ReferenceAddr,
    Reply,
    ReplyStatus,
    Request,
    ServiceContext,
    decode_message,
)
from cosnotify.orb.interface import Operation, exception_typecode
from cosnotify.orb.ior import IOR, AlternateAddressComponent, IIOPProfile
from cosnotify.orb.PortableServer import ForwardRequest
from cosnotify.orb.typecode import (
    K_ABSTRACT_INTERFACE,
    K_ALIAS,
    K_ANY,
    K_ARRAY,
    K_EXCEPT,
    K_OBJREF,
    K_SEQUENCE,
    K_STRUCT,
    K_UNION,
    K_VOID,
    TypeCode,
    resolve,
)

if TYPE_CHECKING:
    from cosnotify.orb.runtime import ORBCore

__all__ = ["ObjectRef", "Target", "set_timeout", "targets_of", "with_timeout"]

log = logging.getLogger("cosnotify.orb")
MAX_FORWARDS = 16


class Target:
    """One address to send requests for an object to."""

    __slots__ = ("code_sets", "host", "key", "port", "profile", "profile_index", "version")

    def __init__(self, profile: IIOPProfile, profile_index: int, host: str, port: int) -> None:
        self.profile = profile
        self.profile_index = profile_index
        self.host = host
        self.port = port
        self.key = profile.object_key
        self.version = max(min(profile.version, (1, 2)), (1, 0))
        self.code_sets = profile.code_sets()


_targets: dict[IOR, tuple[Target, ...]] = {}


def targets_of(ior: IOR) -> tuple[Target, ...]:
    """Every address of every IIOP profile of ``ior``, in the order to try them."""
    found = _targets.get(ior)
    if found is None:
        entries: list[Target] = []
        for index, profile in enumerate(ior.profiles):
            if not isinstance(profile, IIOPProfile):
                continue
            entries.append(Target(profile, index, profile.host, profile.port))
            entries.extend(Target(profile, index, c.host, c.port) for c in profile.components
                           if isinstance(c, AlternateAddressComponent))
        found = tuple(entries)
        if len(_targets) > 4096:
            _targets.clear()
        _targets[ior] = found
    return found


_copy_needed: dict[int, bool] = {}


def _holds_references(tc: TypeCode, seen: set[int] | None = None) -> bool:
    """True if values of ``tc`` may contain object references (or Anys, which may)."""
    tc = resolve(tc)
    seen = seen if seen is not None else set()
    if id(tc) in seen:
        return False
    seen.add(id(tc))
    kind = tc._k
    if kind in (K_OBJREF, K_ANY, K_ABSTRACT_INTERFACE) or kind > 28:
        return True
    if kind in (K_ALIAS, K_SEQUENCE, K_ARRAY):
        return _holds_references(tc.content_type(), seen)
    if kind in (K_STRUCT, K_EXCEPT, K_UNION):
        return any(_holds_references(tc.member_type(i), seen) for i in range(tc.member_count()))
    return False


def _needs_copy(operation: Operation) -> bool:
    key = id(operation)
    found = _copy_needed.get(key)
    if found is None:
        types = [operation.result] + [p.tc for p in operation.params]
        found = _copy_needed[key] = any(_holds_references(t) for t in types)
    return found


class ObjectRef:
    """The delegate of a stub: an IOR, the ORB it is bound to, and an optional timeout."""

    __slots__ = ("_bound", "_core", "_forward", "_local", "_mode", "ior", "timeout")

    def __init__(self, core: ORBCore, ior: IOR, timeout: float | None = None) -> None:
        self._core = core
        self.ior = ior
        self.timeout = timeout
        self._forward: IOR | None = None
        self._mode = 0  # addressing disposition: 0 key, 1 profile, 2 reference
        #: id(operation) -> what the last remote call of it used (see _send_bound)
        self._bound: dict[int, tuple[Any, ...]] = {}
        self._local: tuple[IOR, bytes | None] | None = None

    @property
    def type_id(self) -> str:
        return self.ior.type_id

    def __repr__(self) -> str:
        found = targets_of(self.ior)
        where = f"{found[0].host}:{found[0].port}" if found else "nowhere"
        return f"<ObjectRef {self.ior.type_id or '?'} at {where}>"

    def with_timeout(self, timeout: float | None) -> ObjectRef:
        """The same reference with another call timeout (seconds; None: the ORB's)."""
        twin = ObjectRef(self._core, self.ior, timeout)
        twin._forward = self._forward
        return twin

    # -- the Delegate protocol --------------------------------------------------------------
    def is_a(self, repo_id: str) -> bool:
        return bool(self.invoke(PSEUDO_OPERATIONS["_is_a"], (repo_id,)))

    def non_existent(self) -> bool:
        try:
            return bool(self.invoke(PSEUDO_OPERATIONS["_non_existent"], ()))
        except OBJECT_NOT_EXIST:
            return True

    def is_equivalent(self, other: Any) -> bool:
        other_ior = getattr(other, "ior", None)
        if not isinstance(other_ior, IOR):
            return False
        if other_ior == self.ior:
            return True
        mine, theirs = targets_of(self.ior), targets_of(other_ior)
        return bool(mine and theirs) and (mine[0].host, mine[0].port, mine[0].key) == (
            theirs[0].host, theirs[0].port, theirs[0].key)

    def hash(self, maximum: int) -> int:
        found = targets_of(self.ior)
        basis = found[0].key if found else self.ior.type_id.encode()
        return hash(basis) % max(1, maximum + 1)

    # -- invocation -------------------------------------------------------------------------
    def invoke(self, operation: Operation, args: tuple[Any, ...]) -> Any:
        bound = self._bound.get(id(operation))
        forwards = 0
        if bound is not None and not bound[0].closed:
            try:
                return self._send_bound(bound, operation, args)
            except TRANSIENT as exc:
                if not getattr(exc, "retryable", False):
                    raise
                self._bound.clear()  # certainly not processed: the full path retries it
            except _Forwarded as forwarded:  # not processed either: follow it below
                forwards = 1
                self._follow(forwarded)
        if len(args) != len(operation.in_params):
            raise BAD_PARAM(OMGVMCID | 41, COMPLETED_NO,
                            f"{operation.name} takes {len(operation.in_params)} arguments, "
                            f"got {len(args)}")
        core = self._core
        timeout = self.timeout if self.timeout is not None else core.call_timeout
        while True:
            target_ior = self._forward or self.ior
            local = self._local_key(target_ior)
            try:
                if local is not None:
                    return self._collocated(local, operation, args)
                return self._remote(target_ior, operation, args, timeout)
            except _Forwarded as forwarded:
                forwards += 1
                if forwards > MAX_FORWARDS:
                    raise TRANSIENT(OMGVMCID | 1, COMPLETED_NO, "too many LOCATION_FORWARDs") from None
                self._follow(forwarded)
            except (TRANSIENT, COMM_FAILURE, OBJECT_NOT_EXIST, INV_OBJREF) as exc:
                if self._forward is None or exc.completed is not COMPLETED_NO:
                    raise
                self._bound.clear()
                self._forward = None  # the forwarded target failed: back to the original

    def _follow(self, forwarded: _Forwarded) -> None:
        """Send later calls where a LOCATION_FORWARD(_PERM) reply says."""
        self._bound.clear()
        if forwarded.permanent:
            self.ior = forwarded.ior
            self._forward = None
        else:
            self._forward = forwarded.ior

    def _local_key(self, ior: IOR) -> bytes | None:
        cached = self._local
        if cached is not None and cached[0] is ior:
            return cached[1]
        key = self._core.local_key(ior)
        self._local = (ior, key)
        return key

    def _send_bound(self, bound: tuple[Any, ...], operation: Operation, args: tuple[Any, ...]
                    ) -> Any:
        """A call on the connection, codec and request prefix the last one used."""
        connection, prefix, rid_at, version, plan, expects, tcs = bound
        if len(args) != len(plan.in_types):
            raise BAD_PARAM(OMGVMCID | 41, COMPLETED_NO,
                            f"{operation.name} takes {len(plan.in_types)} arguments, "
                            f"got {len(args)}")
        core = self._core
        buffer = bytearray(prefix)
        plan.encode(buffer, plan.in_encoders, plan.in_types, args,
                    EncodeState(core.objref_encoder, core.max_depth))
        reply = connection.call_raw(buffer, rid_at, version, expects,
                                    self.timeout if self.timeout is not None else core.call_timeout)
        if reply is None:
            return None
        return self._finish(reply, operation, plan, version, tcs)

    def _remote(self, ior: IOR, operation: Operation, args: tuple[Any, ...],
                timeout: float | None) -> Any:
        found = targets_of(ior)
        if not found:
            raise INV_OBJREF(OMGVMCID | 1, COMPLETED_NO, "the reference has no IIOP profile"
                             if not ior.is_nil() else "nil object reference")
        core = self._core
        error: SystemException | None = None
        for target in found:
            for _attempt in range(2):
                try:
                    connection = core.pool.get(target.host, target.port)
                except TRANSIENT as exc:
                    error = exc
                    break  # try the next address
                try:
                    return self._send(connection, target, ior, operation, args, timeout)
                except TRANSIENT as exc:
                    if not getattr(exc, "retryable", False):
                        raise
                    error = exc
        assert error is not None
        raise error

    def _send(self, connection: Any, target: Target, ior: IOR, operation: Operation,
              args: tuple[Any, ...], timeout: float | None) -> Any:
        core = self._core
        version = target.version
        contexts: tuple[ServiceContext, ...] = ()
        tcs = connection.tcs
        if version >= (1, 1):
            if tcs is None and target.code_sets is not None:
                tcs = negotiate(target.code_sets)
                connection.tcs = tcs
            if tcs is not None:
                contexts = core.codeset_contexts(tcs)
        codec = core.codec(tcs, True, version)
        flags = 0 if operation.oneway else 3
        plan = plan_for(operation, codec)
        if self._mode == 0 or version < (1, 2):
            prefix, rid_at = request_prefix(target.key, operation.name, flags, contexts, version)
            buffer = bytearray(prefix)
            plan.encode(buffer, plan.in_encoders, plan.in_types, args,
                        EncodeState(core.objref_encoder, core.max_depth))
            reply = connection.call_raw(buffer, rid_at, version, flags != 0, timeout)
            if len(self._bound) < 64:
                self._bound[id(operation)] = (connection, prefix, rid_at, version, plan, flags != 0,
                                              tcs)
        else:
            reply = connection.call(self._builder(target, ior, operation, args, flags, contexts,
                                                  codec), timeout)
        if reply is None:
            return None
        return self._finish(reply, operation, plan, version, tcs)

    def _finish(self, reply: Any, operation: Operation, plan: OperationPlan,
                version: tuple[int, int], tcs: Any) -> Any:
        """The outcome of a reply: the unpacked values, or the exception it carries."""
        if type(reply) is RawReply:
            if reply.reply_status == 0:
                if not reply.little_endian or reply.version != version:
                    plan = plan_for(operation, self._core.codec(tcs, reply.little_endian,
                                                                reply.version))
                try:
                    values, _ = plan.decode(reply.data, 24, plan.out_decoders,
                                            DecodeState(self._core.objref_factory,
                                                        self._core.max_depth))
                except MARSHAL as exc:
                    raise MARSHAL(exc.minor, COMPLETED_YES,
                                  f"bad reply to {operation.name}: {exc.detail}") from exc
                return plan.pack(values)
            try:
                reply = decode_message(reply.data)
            except MessageFormatError as exc:
                raise MARSHAL(exc.minor, COMPLETED_MAYBE, f"malformed reply: {exc}") from exc
        return self._unpack(reply, operation, tcs)

    def _builder(self, target: Target, ior: IOR, operation: Operation, args: tuple[Any, ...],
                 flags: int, contexts: tuple[ServiceContext, ...], codec: Any) -> Any:
        """A Request builder for the profile and reference addressing modes (GIOP 1.2)."""
        address: Any = (ProfileAddr(target.profile) if self._mode == 1
                        else ReferenceAddr(target.profile_index, ior))
        encoder = Encoder(codec, objref_encoder=self._core.objref_encoder,
                          max_depth=self._core.max_depth)
        for param, arg in zip(operation.in_params, args):
            encoder.write(param.tc, arg)
        body = encoder.getvalue()
        name = operation.name

        def build(request_id: int) -> Request:
            return Request(request_id, address, name, body, flags, contexts, b"", (1, 2), True)

        return build

    def _unpack(self, reply: Reply, operation: Operation, tcs: Any) -> Any:
        core = self._core
        status = reply.reply_status
        if status is ReplyStatus.SYSTEM_EXCEPTION:
            raise _marshal_safe(reply.system_exception)
        if status in (ReplyStatus.LOCATION_FORWARD, ReplyStatus.LOCATION_FORWARD_PERM):
            raise _Forwarded(_marshal_safe(reply.forward_ior),
                             status is ReplyStatus.LOCATION_FORWARD_PERM)
        decoder = Decoder(reply.body, core.codec(tcs, reply.little_endian, reply.version),
                          offset=reply.body_offset, objref_factory=core.objref_factory,
                          max_depth=core.max_depth)
        try:
            if status is ReplyStatus.NO_EXCEPTION:
                result = decoder.read(operation.result) if operation.result._k != K_VOID else None
                outs = tuple(decoder.read(p.tc) for p in operation.out_params)
                return operation.pack_result(result, outs)
            if status is ReplyStatus.USER_EXCEPTION:
                repo_id = decoder.read_string()
                for cls in operation.raises:
                    if getattr(cls, "_NP_RepositoryId", None) == repo_id:
                        typecode = exception_typecode(cls)
                        if typecode is not None:
                            raise decoder.read(typecode)
                raise UNKNOWN(OMGVMCID | 1, COMPLETED_YES,
                              f"{operation.name} raised the undeclared user exception {repo_id}")
            # NEEDS_ADDRESSING_MODE: the body is the disposition wanted (15.4.3.1)
            mode: int = decoder.read_short()
        except MARSHAL as exc:
            raise MARSHAL(exc.minor, COMPLETED_YES, f"bad reply to {operation.name}: {exc.detail}"
                          ) from exc
        if mode not in (0, 1, 2) or mode == self._mode:
            raise MARSHAL(OMGVMCID | 1, COMPLETED_NO, f"server asks for addressing mode {mode}")
        self._mode = mode
        raise _Forwarded(self._forward or self.ior, False)

    # -- collocated calls -------------------------------------------------------------------
    def _collocated(self, key: bytes, operation: Operation, args: tuple[Any, ...]) -> Any:
        core = self._core
        registry = core.registry
        poa, oid = registry.locate(key)
        manager = poa.the_POAManager
        manager.enter()
        try:
            try:
                servant, cookie = poa.locate_servant(oid, operation.name)
            except ForwardRequest as forward:
                raise _Forwarded(core.objref_encoder(forward.forward_reference), False) from None
            try:
                return self._upcall(poa, oid, servant, operation, args)
            finally:
                poa.release_servant(oid, operation.name, servant, cookie)
        finally:
            manager.leave()

    def _upcall(self, poa: Any, oid: bytes, servant: Any, operation: Operation,
                args: tuple[Any, ...]) -> Any:
        core = self._core
        name = operation.name
        if name == "_is_a":
            return servant._is_a(args[0])
        if name == "_non_existent":
            return servant._non_existent()
        if name == "_repository_id":
            return servant._NP_RepositoryId
        method = getattr(servant, method_name(type(servant), name), None)
        if method is None:
            raise NO_IMPLEMENT(OMGVMCID | 3, COMPLETED_NO,
                               f"{type(servant).__name__} does not implement {name!r}")
        copy = _needs_copy(operation)
        if copy:
            args = core.copy_values([p.tc for p in operation.in_params], args)
        poa_module.push_upcall(poa, oid, servant)
        try:
            value = poa.run_upcall(method, args)
        except ForwardRequest as forward:
            raise _Forwarded(core.objref_encoder(forward.forward_reference), False) from None
        except UserException as exc:
            if any(isinstance(exc, raised) for raised in operation.raises):
                raise
            raise UNKNOWN(OMGVMCID | 1, COMPLETED_MAYBE,
                          f"undeclared user exception {type(exc).__name__}") from exc
        except SystemException:
            raise
        except Exception as exc:
            log.exception("unexpected error in collocated call %s", name)
            raise UNKNOWN(OMGVMCID | 2, COMPLETED_MAYBE, f"{type(exc).__name__}: {exc}") from exc
        finally:
            poa_module.pop_upcall()
        if operation.oneway:
            return None
        if copy:
            result, outs = operation.unpack_result(value)
            types = ([operation.result] if operation.result._k != K_VOID else []) + [
                p.tc for p in operation.out_params]
            values = ((result,) if operation.result._k != K_VOID else ()) + tuple(outs)
            copied = core.copy_values(types, values)
            if operation.result._k != K_VOID:
                return operation.pack_result(copied[0], tuple(copied[1:]))
            return operation.pack_result(None, tuple(copied))
        return value


class _Forwarded(Exception):
    """Internal: send the request again, to ``ior``."""

    def __init__(self, ior: IOR, permanent: bool) -> None:
        super().__init__(ior)
        self.ior = ior
        self.permanent = permanent


def _marshal_safe(read: Any) -> Any:
    """Run a reply-body reader; a malformed body is MARSHAL (COMPLETED_MAYBE)."""
    try:
        return read()
    except MARSHAL as exc:
        raise MARSHAL(exc.minor, COMPLETED_MAYBE, f"malformed reply: {exc.detail}") from exc



def with_timeout(obj: Any, seconds: float | None) -> Any:
    """A reference like ``obj`` (same class) whose calls time out after ``seconds``.

    ``None`` means the ORB's ``-ORBclientCallTimeOutPeriod``. ``obj`` itself
    is unchanged; a nil reference stays None.
    """
    if obj is None:
        return None
    delegate = obj._NP_delegate
    if not isinstance(delegate, ObjectRef):
        raise BAD_PARAM(OMGVMCID | 41, COMPLETED_NO, f"{obj!r} is not an ORB object reference")
    return type(obj)(delegate.with_timeout(seconds))


def set_timeout(obj: Any, seconds: float | None) -> None:
    """Set the call timeout of ``obj`` in place (omniORB's ``setClientCallTimeout``)."""
    delegate = getattr(obj, "_NP_delegate", None)
    if not isinstance(delegate, ObjectRef):
        raise BAD_PARAM(OMGVMCID | 41, COMPLETED_NO, f"{obj!r} is not an ORB object reference")
    delegate.timeout = seconds
