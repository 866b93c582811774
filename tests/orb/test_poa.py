"""The POA: activation, policies, object keys, POA managers, servant managers, Current."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cosnotify.orb import CORBA, PortableServer
from cosnotify.orb.poa import AdapterRegistry, decode_path, encode_path


def child(poa: Any, name: str, *values: Any, manager: Any = None) -> Any:
    factories = {PortableServer.PERSISTENT: poa.create_lifespan_policy,
                 PortableServer.TRANSIENT: poa.create_lifespan_policy,
                 PortableServer.USER_ID: poa.create_id_assignment_policy,
                 PortableServer.SYSTEM_ID: poa.create_id_assignment_policy,
                 PortableServer.MULTIPLE_ID: poa.create_id_uniqueness_policy,
                 PortableServer.NON_RETAIN: poa.create_servant_retention_policy,
                 PortableServer.USE_SERVANT_MANAGER: poa.create_request_processing_policy,
                 PortableServer.USE_DEFAULT_SERVANT: poa.create_request_processing_policy,
                 PortableServer.IMPLICIT_ACTIVATION: poa.create_implicit_activation_policy}
    return poa.create_POA(name, manager or poa.the_POAManager, [factories[v](v) for v in values])


@pytest.fixture
def root(server_orb: Any) -> Any:
    return server_orb.resolve_initial_references("RootPOA")


class TestActivation:
    def test_activate_and_references(self, root: Any, peer: Any, server_orb: Any) -> None:
        """activate_object gives an id; the id, the servant and the reference map to each other."""
        servant = peer.Thing(server_orb)
        oid = root.activate_object(servant)
        reference = root.id_to_reference(oid)
        assert root.reference_to_id(reference) == oid
        assert root.reference_to_servant(reference) is servant
        assert root.servant_to_id(servant) == oid
        assert root.id_to_servant(oid) is servant
        assert reference._repository_id() == servant._NP_RepositoryId

    def test_unique_id_refuses_a_second_activation(self, root: Any, peer: Any,
                                                   server_orb: Any) -> None:
        """With UNIQUE_ID a servant can be active once: ServantAlreadyActive."""
        servant = peer.Thing(server_orb)
        root.activate_object(servant)
        with pytest.raises(PortableServer.POA.ServantAlreadyActive):
            root.activate_object(servant)

    def test_implicit_activation_and_this(self, root: Any, peer: Any, server_orb: Any) -> None:
        """servant_to_reference activates implicitly in the RootPOA; _this() agrees."""
        servant = peer.Thing(server_orb)
        reference = root.servant_to_reference(servant)
        assert servant._this()._is_equivalent(reference)

    def test_deactivate_then_object_not_exist(self, root: Any, peer: Any, server_orb: Any,
                                              client_orb: Any, interop: Any) -> None:
        """A deactivated object answers OBJECT_NOT_EXIST; deactivating twice is ObjectNotActive."""
        servant = peer.Thing(server_orb)
        oid = root.activate_object(servant)
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(root.id_to_reference(oid))))
        assert remote._get_name() == "py-thing"
        root.deactivate_object(oid)
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            remote._get_name()
        assert remote._non_existent()
        with pytest.raises(PortableServer.POA.ObjectNotActive):
            root.deactivate_object(oid)

    def test_wrong_policy(self, root: Any, peer: Any, server_orb: Any) -> None:
        """activate_object on a USER_ID POA, or a servant manager on an AOM-only POA: WrongPolicy."""
        users = child(root, "users", PortableServer.USER_ID)
        with pytest.raises(PortableServer.POA.WrongPolicy):
            users.activate_object(peer.Thing(server_orb))
        with pytest.raises(PortableServer.POA.WrongPolicy):
            users.set_servant_manager(PortableServer.ServantActivator())

    def test_user_ids(self, root: Any, peer: Any, server_orb: Any) -> None:
        """activate_object_with_id uses the given id; a second activation is ObjectAlreadyActive."""
        users = child(root, "ids", PortableServer.USER_ID)
        users.activate_object_with_id(b"one", peer.Thing(server_orb))
        with pytest.raises(PortableServer.POA.ObjectAlreadyActive):
            users.activate_object_with_id(b"one", peer.Thing(server_orb))
        assert users.reference_to_id(users.id_to_reference(b"one")) == b"one"

    def test_wrong_adapter(self, root: Any, peer: Any, server_orb: Any) -> None:
        """reference_to_id with another POA's reference: WrongAdapter."""
        other = child(root, "other", PortableServer.USER_ID)
        other.activate_object_with_id(b"x", peer.Thing(server_orb))
        with pytest.raises(PortableServer.POA.WrongAdapter):
            root.reference_to_id(other.id_to_reference(b"x"))


class TestPOAs:
    def test_children(self, root: Any) -> None:
        """create_POA, find_POA, AdapterAlreadyExists, AdapterNonExistent, destroy."""
        made = child(root, "kid")
        assert root.find_POA("kid", False) is made and made.the_parent is root
        with pytest.raises(PortableServer.POA.AdapterAlreadyExists):
            child(root, "kid")
        made.destroy(True, True)
        with pytest.raises(PortableServer.POA.AdapterNonExistent):
            root.find_POA("kid", False)

    def test_invalid_policy_combinations(self, root: Any) -> None:
        """Policy combinations CORBA rules out raise InvalidPolicy."""
        with pytest.raises(PortableServer.POA.InvalidPolicy):
            child(root, "a", PortableServer.NON_RETAIN)
        with pytest.raises(PortableServer.POA.InvalidPolicy):
            child(root, "b", PortableServer.USE_DEFAULT_SERVANT)
        with pytest.raises(PortableServer.POA.InvalidPolicy):
            child(root, "c", PortableServer.IMPLICIT_ACTIVATION, PortableServer.USER_ID)

    def test_persistent_keys_have_no_per_process_part(self, root: Any, peer: Any,
                                                      server_orb: Any) -> None:
        """A PERSISTENT POA's keys are its path and the object id only."""
        stable = child(root, "stable", PortableServer.PERSISTENT, PortableServer.USER_ID)
        grand = child(stable, "grand", PortableServer.PERSISTENT, PortableServer.USER_ID)
        grand.activate_object_with_id(b"obj-1", peer.Thing(server_orb))
        key = grand.id_to_reference(b"obj-1")._NP_delegate.ior.object_key
        assert key == b"CNP\x01" + encode_path(("stable", "grand")) + b"obj-1"
        assert decode_path(key, 4) == (("stable", "grand"), len(key) - 5)

    def test_transient_keys_change_with_the_poa(self, root: Any) -> None:
        """A TRANSIENT POA re-created with the same name has new keys."""
        first = child(root, "t")
        key1 = first.create_reference_with_id(b"o", "IDL:x:1.0")._NP_delegate.ior.object_key
        first.destroy(False, False)
        second = child(root, "t")
        key2 = second.create_reference_with_id(b"o", "IDL:x:1.0")._NP_delegate.ior.object_key
        assert key1 != key2

    def test_malformed_keys_do_not_crash(self) -> None:
        """Truncated persistent keys are simply unknown objects."""
        registry = AdapterRegistry(core=None)  # type: ignore[arg-type]
        for key in (b"CNP\x01", b"CNP\x01\x05", b"CNP\x01\x01\x00\x09ab", b"CNT\x01short"):
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                registry.locate(key)


class TestPOAManager:
    def test_states_and_exceptions(self, root: Any, thing: Any, server_orb: Any) -> None:
        """DISCARDING answers TRANSIENT, INACTIVE OBJ_ADAPTER; an inactive manager stays so."""
        manager = root.the_POAManager
        assert thing.poked() == 0
        manager.discard_requests(False)
        assert manager.get_state() == PortableServer.POAManager.DISCARDING
        with pytest.raises(CORBA.TRANSIENT):
            thing.poked()
        manager.activate()
        assert thing.poked() == 0
        manager.deactivate(False, True)
        with pytest.raises(CORBA.OBJ_ADAPTER):
            thing.poked()
        with pytest.raises(PortableServer.POAManager.AdapterInactive):
            manager.activate()

    def test_holding_queues_until_active(self, root: Any, thing: Any) -> None:
        """Requests made while HOLDING wait, and run once the manager is activated."""
        manager = root.the_POAManager
        manager.hold_requests(False)
        result: list[int] = []
        caller = threading.Thread(target=lambda: result.append(thing.poked()))
        caller.start()
        caller.join(0.2)  # it must still be waiting: the manager holds it
        assert caller.is_alive() and result == []
        manager.activate()
        caller.join(30)
        assert result == [0]


class _Activator(PortableServer.ServantActivator):
    def __init__(self, make: Any) -> None:
        self.make = make
        self.incarnated: list[bytes] = []

    def incarnate(self, oid: bytes, adapter: Any) -> Any:
        self.incarnated.append(oid)
        if oid == b"forward":
            raise PortableServer.ForwardRequest(adapter.create_reference_with_id(
                b"real", "IDL:cosnotify.test/Interop/Thing:1.0"))
        if oid == b"missing":
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)
        return self.make()


class TestServantManagers:
    def test_activator_incarnates_once_and_forwards(self, root: Any, peer: Any, server_orb: Any,
                                                    client_orb: Any, interop: Any) -> None:
        """A ServantActivator makes servants on demand; ForwardRequest forwards the client."""
        lazy = child(root, "lazy", PortableServer.USER_ID, PortableServer.USE_SERVANT_MANAGER)
        activator = _Activator(lambda: peer.Thing(server_orb))
        lazy.set_servant_manager(activator)

        def remote(oid: bytes) -> Any:
            reference = lazy.create_reference_with_id(oid, "IDL:cosnotify.test/Interop/Thing:1.0")
            return interop.Thing._narrow(client_orb.string_to_object(
                server_orb.object_to_string(reference)))

        one = remote(b"one")
        assert one._get_name() == "py-thing" and one.poked() == 0
        assert activator.incarnated == [b"one"]
        assert remote(b"forward")._get_name() == "py-thing"
        assert activator.incarnated[-1] == b"real"
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            remote(b"missing")._get_name()

    def test_function_activator(self, root: Any, peer: Any, server_orb: Any, client_orb: Any,
                                interop: Any) -> None:
        """set_servant_activator(fn) maps ids to servants lazily; None means no such object."""
        lazy = child(root, "fn", PortableServer.PERSISTENT, PortableServer.USER_ID)
        made: list[bytes] = []

        def incarnate(oid: bytes) -> Any:
            made.append(oid)
            return peer.Thing(server_orb) if oid.startswith(b"ok") else None

        lazy.set_servant_activator(incarnate)

        def remote(oid: bytes) -> Any:
            reference = lazy.create_reference_with_id(oid, "IDL:cosnotify.test/Interop/Thing:1.0")
            return client_orb.string_to_object(server_orb.object_to_string(reference))

        ok = interop.Thing._narrow(remote(b"ok-1"))
        ok.poke(1)
        assert ok.poked() == 1  # the same servant both times
        assert made == [b"ok-1"]
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            interop.Thing._unchecked_narrow(remote(b"nope")).poked()

    def test_default_servant(self, root: Any, peer: Any, server_orb: Any, client_orb: Any,
                             interop: Any) -> None:
        """USE_DEFAULT_SERVANT: one servant answers for every id; Current says which."""
        ids: list[bytes] = []

        class Echo(peer.Thing):  # type: ignore[misc,name-defined]
            def _get_name(self) -> str:
                current = server_orb.resolve_initial_references("POACurrent")
                ids.append(current.get_object_id())
                return "default"

        shared = child(root, "shared", PortableServer.USER_ID, PortableServer.MULTIPLE_ID,
                       PortableServer.USE_DEFAULT_SERVANT)
        with pytest.raises(PortableServer.POA.NoServant):
            shared.get_servant()
        shared.set_servant(Echo(server_orb))
        for oid in (b"a", b"b"):
            reference = shared.create_reference_with_id(oid, "IDL:cosnotify.test/Interop/Thing:1.0")
            remote = interop.Thing._unchecked_narrow(client_orb.string_to_object(
                server_orb.object_to_string(reference)))
            assert remote._get_name() == "default"
        assert ids == [b"a", b"b"]


class TestCurrent:
    def test_outside_a_request(self, server_orb: Any) -> None:
        """PortableServer::Current outside an upcall raises NoContext."""
        current = server_orb.resolve_initial_references("POACurrent")
        with pytest.raises(PortableServer.Current.NoContext):
            current.get_object_id()


class TestThreadPolicy:
    def test_single_thread_model_serialises_upcalls(self, root: Any, peer: Any,
                                                    server_orb: Any, client_orb: Any,
                                                    interop: Any) -> None:
        """In a SINGLE_THREAD_MODEL POA a second request waits until the first is done."""
        poke, entered = threading.Event(), threading.Event()
        saw: list[bool] = []

        class Waiter(peer.Thing):  # type: ignore[misc,name-defined]
            def poked(self) -> int:
                entered.set()
                saw.append(poke.wait(0.3))  # the other call cannot run meanwhile
                return 0

            def _get_counter(self) -> int:
                poke.set()
                return 0

        single = root.create_POA("single", root.the_POAManager, [
            root.create_thread_policy(PortableServer.SINGLE_THREAD_MODEL)])
        oid = single.activate_object(Waiter(server_orb))
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(single.id_to_reference(oid))))
        first = threading.Thread(target=remote.poked)
        first.start()
        assert entered.wait(30)  # the first upcall holds the POA
        remote._get_counter()
        first.join(30)
        assert saw == [False]
