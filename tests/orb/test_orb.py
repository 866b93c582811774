"""The ORB end to end, over TCP between two ORBs in this process."""

from __future__ import annotations

import pickle
import socket
import struct
import threading
from typing import Any

import pytest

from cosnotify.orb import CORBA, PortableServer
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.orb import parse_orb_args
from cosnotify.orb.runtime import Settings, parse_endpoint
from tests.interop import peers


class TestOptions:
    def test_orb_arguments_are_removed_from_argv(self, make_orb: Any) -> None:
        """ORB_init takes its -ORB options out of argv and leaves the rest."""
        argv = ["prog", "-ORBendPoint", "giop:tcp:127.0.0.1:0", "x", "-ORBInitRef", "A=corbaloc::h/A"]
        orb = CORBA.ORB_init(argv, "options-test")
        try:
            assert argv == ["prog", "x"]
            assert orb.options.init_refs == (("A", "corbaloc::h/A"),)
        finally:
            orb.destroy()

    def test_settings_from_options(self) -> None:
        """Timeouts, limits and the threading model are read from their -ORB options."""
        options, _ = parse_orb_args(["-ORBclientCallTimeOutPeriod", "2500",
                                     "-ORBclientConnectTimeOutPeriod", "0",
                                     "-ORBgiopMaxMsgSize", "65536", "-ORBmaxNestingDepth", "10",
                                     "-ORBthreadPerConnectionPolicy", "0",
                                     "-ORBmaxServerThreadPoolSize", "7", "-ORBtraceLevel", "25"])
        settings = Settings.from_options(options.endpoints, options.extra)
        assert (settings.call_timeout, settings.connect_timeout, settings.max_message_size,
                settings.max_depth, settings.thread_per_connection, settings.max_threads) == (
            2.5, None, 65536, 10, False, 7)

    @pytest.mark.parametrize("text, host, port", [("giop:tcp:127.0.0.1:2809", "127.0.0.1", 2809),
                                                  ("giop:tcp:[::1]:0", "::1", 0),
                                                  ("giop:tcp:localhost:", "localhost", 0)])
    def test_endpoints(self, text: str, host: str, port: int) -> None:
        """-ORBendPoint giop:tcp:HOST:PORT, IPv6 hosts in brackets, port 0 or empty: any."""
        endpoint = parse_endpoint(text)
        assert (endpoint.host, endpoint.port) == (host, port)

    def test_bad_endpoint(self) -> None:
        """A transport we do not speak is INITIALIZE."""
        with pytest.raises(CORBA.INITIALIZE):
            parse_endpoint("giop:unix:/tmp/sock")

    def test_ior_carries_the_real_port(self, server_orb: Any) -> None:
        """With port 0 the IORs carry the port actually listened on."""
        port = server_orb._core.addresses[0][1]
        reference = server_orb.resolve_initial_references("RootPOA").create_reference("IDL:x:1.0")
        assert reference._NP_delegate.ior.iiop_profile().port == port != 0


class TestCalls:
    def test_every_operation(self, server_orb: Any, client_orb: Any, thing: Any, peer: Any) -> None:
        """Every type and feature of Interop.idl round-trips between two of our ORBs."""
        assert dict(line.split("=", 1) for line in peer.run_all(client_orb, thing)) == \
            peer.expected("py-thing")

    def test_narrow_asks_is_a_when_it_cannot_tell(self, server_orb: Any, client_orb: Any,
                                                  peer: Any, interop: Any) -> None:
        """A corbaloc reference has no type id: _narrow asks the object with _is_a."""
        ins = server_orb.resolve_initial_references("omniINSPOA")
        ins.activate_object_with_id(b"Thingy", peer.Thing(server_orb))
        port = server_orb._core.addresses[0][1]
        generic = client_orb.string_to_object(f"corbaloc::127.0.0.1:{port}/Thingy")
        assert type(generic) is CORBA.Object
        assert interop.Callback._narrow(generic) is None
        narrowed = interop.Thing._narrow(generic)
        assert narrowed._get_name() == "py-thing"

    def test_undeclared_and_python_exceptions_are_unknown(self, server_orb: Any, client_orb: Any,
                                                          peer: Any, interop: Any) -> None:
        """A servant's undeclared user exception or Python error reaches the client as UNKNOWN."""
        class Broken(peer.Thing):  # type: ignore[misc,name-defined]
            def poked(self) -> int:
                raise interop.Oops("undeclared", 1)

            def echo_small(self, s: Any) -> Any:
                raise ZeroDivisionError("bug")

        poa = server_orb.resolve_initial_references("RootPOA")
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(Broken(server_orb)))))
        with pytest.raises(CORBA.UNKNOWN):
            remote.poked()
        with pytest.raises(CORBA.UNKNOWN) as caught:
            remote.echo_small(interop.Small(1, 1.0, "x"))
        assert caught.value.completed == CORBA.COMPLETED_MAYBE

    def test_bad_result_from_servant_is_a_system_exception(self, server_orb: Any,
                                                           client_orb: Any, peer: Any,
                                                           interop: Any) -> None:
        """A servant returning the wrong type makes BAD_PARAM (COMPLETED_YES), not a hang."""
        class Wrong(peer.Thing):  # type: ignore[misc,name-defined]
            def poked(self) -> Any:
                return "not a long"

        poa = server_orb.resolve_initial_references("RootPOA")
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(Wrong(server_orb)))))
        with pytest.raises(CORBA.BAD_PARAM) as caught:
            remote.poked()
        assert caught.value.completed == CORBA.COMPLETED_YES

    def test_bad_argument_is_bad_param_before_sending(self, thing: Any, interop: Any) -> None:
        """An argument that does not fit is BAD_PARAM (COMPLETED_NO) and nothing is sent."""
        with pytest.raises(CORBA.BAD_PARAM) as caught:
            thing.echo_small(interop.Small("x", 1.0, "y"))
        assert caught.value.completed == CORBA.COMPLETED_NO
        assert thing.poked() == 0

    def test_oneways_stay_in_order(self, thing: Any) -> None:
        """Oneway calls from one thread run in order before the next two-way call."""
        for n in range(1, 101):
            thing.poke(n)
        assert thing.poked() == 5050

    def test_collocated_calls_keep_the_semantics(self, server_orb: Any, peer: Any,
                                                 interop: Any) -> None:
        """A reference to a servant of the same ORB is called directly, with the same rules."""
        poa = server_orb.resolve_initial_references("RootPOA")
        local = interop.Thing._narrow(poa.servant_to_reference(peer.Thing(server_orb)))
        assert local.move(interop.Point(1, 2), 5) == (interop.Point(6, 7), 10, "moved by 5")
        with pytest.raises(interop.Oops):
            local.fail_user("x")
        with pytest.raises(CORBA.BAD_OPERATION):
            local.fail_system()
        me = local.self_ref()
        assert isinstance(me, interop.Thing) and me._is_equivalent(local)
        assert local._is_a(interop.Thing._NP_RepositoryId) and not local._non_existent()

    def test_references_do_not_pickle(self, thing: Any) -> None:
        """Object references refuse to pickle (use object_to_string)."""
        with pytest.raises(CORBA.BAD_OPERATION):
            pickle.dumps(thing)


class TestConcurrency:
    @pytest.mark.parametrize("policy", ["1", "0"])
    @pytest.mark.parametrize("giop", ["1.2", "1.0"])
    def test_threads_share_a_connection_and_a_blocked_call_blocks_nobody(
            self, make_orb: Any, client_orb: Any, peer: Any, interop: Any, policy: str,
            giop: str) -> None:
        """Calls from many threads interleave on one connection; a blocked call holds up none.

        Both server threading models, over GIOP 1.2 (the hot path) and GIOP
        1.0 (a corbaloc reference: the general path).
        """
        release = threading.Event()

        class Gate(peer.Thing):  # type: ignore[misc,name-defined]
            def echo_small(self, s: Any) -> Any:
                if s.c == "block":
                    assert release.wait(30)
                return s

            def _set_counter(self, value: int) -> None:
                release.set()

        server_orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0",
                              "-ORBthreadPerConnectionPolicy", policy)
        server_orb.resolve_initial_references("RootPOA").the_POAManager.activate()
        ins = server_orb.resolve_initial_references("omniINSPOA")
        ins.activate_object_with_id(b"gate", Gate(server_orb))
        port = server_orb._core.addresses[0][1]
        remote = interop.Thing._unchecked_narrow(client_orb.string_to_object(
            f"corbaloc:iiop:{giop}@127.0.0.1:{port}/gate"))
        blocked: list[Any] = []
        waiter = threading.Thread(target=lambda: blocked.append(
            remote.echo_small(interop.Small(0, 0.0, "block"))))
        waiter.start()
        results: list[Any] = []
        workers = [threading.Thread(target=lambda i=i: results.extend(
            remote.echo_small(interop.Small(i, float(i), str(i))) for _ in range(30)))
            for i in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert len(results) == 240 and all(r.c == str(r.a) for r in results)
        remote._set_counter(1)  # releases the blocked call, over the same connection
        waiter.join(60)
        assert blocked and blocked[0].c == "block"
        assert len(client_orb._core.pool.connections()) == 1


class TestFailures:
    def test_connect_failure_is_transient(self, client_orb: Any, interop: Any) -> None:
        """Nothing listening: TRANSIENT, COMPLETED_NO."""
        port = peers.free_port()
        remote = interop.Thing._unchecked_narrow(client_orb.string_to_object(
            f"corbaloc::127.0.0.1:{port}/nothing"))
        with pytest.raises(CORBA.TRANSIENT) as caught:
            remote.poked()
        assert caught.value.completed == CORBA.COMPLETED_NO

    def test_corbaloc_tries_addresses_in_order(self, server_orb: Any, client_orb: Any, peer: Any,
                                               interop: Any) -> None:
        """corbaloc with several addresses: a dead first address falls through to the next."""
        ins = server_orb.resolve_initial_references("omniINSPOA")
        ins.activate_object_with_id(b"T", peer.Thing(server_orb))
        live, dead = server_orb._core.addresses[0][1], peers.free_port()
        remote = interop.Thing._narrow(client_orb.string_to_object(
            f"corbaloc:iiop:1.2@127.0.0.1:{dead},:127.0.0.1:{live}/T"))
        assert remote._get_name() == "py-thing"

    def test_call_timeout(self, server_orb: Any, client_orb: Any, peer: Any, interop: Any) -> None:
        """No reply within the reference's timeout: TIMEOUT, COMPLETED_MAYBE; later calls work."""
        release = threading.Event()

        class Slow(peer.Thing):  # type: ignore[misc,name-defined]
            def poked(self) -> int:
                release.wait(30)
                return 1

        poa = server_orb.resolve_initial_references("RootPOA")
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(Slow(server_orb)))))
        from cosnotify.orb import set_timeout, with_timeout

        hasty = with_timeout(remote, 0.2)
        assert type(hasty) is type(remote) and with_timeout(None, 1.0) is None
        with pytest.raises(CORBA.TIMEOUT) as caught:
            hasty.poked()
        assert caught.value.completed == CORBA.COMPLETED_MAYBE
        set_timeout(remote, 0.1)
        with pytest.raises(CORBA.TIMEOUT):
            remote.poked()
        set_timeout(remote, None)
        release.set()
        assert remote._get_name() == "py-thing"

    def test_inflight_call_when_the_connection_dies(self, server_orb: Any, client_orb: Any,
                                                    peer: Any, interop: Any) -> None:
        """A call in flight when the connection drops gets COMM_FAILURE, COMPLETED_MAYBE."""
        entered, release = threading.Event(), threading.Event()

        class Stuck(peer.Thing):  # type: ignore[misc,name-defined]
            def poked(self) -> int:
                entered.set()
                release.wait(30)
                return 0

        poa = server_orb.resolve_initial_references("RootPOA")
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(Stuck(server_orb)))))
        failures: list[Any] = []

        def call() -> None:
            try:
                remote.poked()
            except CORBA.SystemException as exc:
                failures.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert entered.wait(30)
        for connection in list(server_orb._core.server._connections):
            connection.transport.close()  # the server "crashes"
        caller.join(30)
        release.set()
        assert isinstance(failures[0], CORBA.COMM_FAILURE)
        assert failures[0].completed == CORBA.COMPLETED_MAYBE

    def test_reconnect_after_the_server_restarts(self, make_orb: Any, client_orb: Any, peer: Any,
                                                 interop: Any) -> None:
        """A persistent reference works again once the server is back on the same endpoint."""
        port = peers.free_port()

        def start() -> Any:
            orb = make_orb("-ORBendPoint", f"giop:tcp:127.0.0.1:{port}")
            root = orb.resolve_initial_references("RootPOA")
            stable = root.create_POA("stable", root.the_POAManager, [
                root.create_lifespan_policy(PortableServer.PERSISTENT),
                root.create_id_assignment_policy(PortableServer.USER_ID)])
            stable.activate_object_with_id(b"thing", peer.Thing(orb))
            root.the_POAManager.activate()
            return orb, stable

        first, stable = start()
        ior = first.object_to_string(stable.id_to_reference(b"thing"))
        remote = interop.Thing._narrow(client_orb.string_to_object(ior))
        remote.poke(2)
        assert remote.poked() == 2
        first.destroy()
        with pytest.raises((CORBA.TRANSIENT, CORBA.COMM_FAILURE)):
            remote.poked()
        second, stable2 = start()
        assert second.object_to_string(stable2.id_to_reference(b"thing")) == ior
        assert remote.poked() == 0  # a new servant answers the same reference

    def test_garbage_client_does_not_disturb_others(self, server_orb: Any, thing: Any,
                                                    interop: Any) -> None:
        """A client sending garbage gets MessageError and is cut off; other clients carry on."""
        port = server_orb._core.addresses[0][1]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as rogue:
            rogue.sendall(b"GIOP\x01\x02\x01\x00" + struct.pack("<I", 8) + b"\xff" * 8)
            assert thing.echo_small(interop.Small(1, 1.0, "ok")).c == "ok"
            answer = b""
            while chunk := rogue.recv(4096):
                answer += chunk
        assert isinstance(gm.decode_message(answer[:12 + struct.unpack_from("<I", answer, 8)[0]]),
                          gm.MessageError)
        assert thing.poked() == 0

    def test_message_size_limit(self, make_orb: Any, client_orb: Any, peer: Any,
                                interop: Any) -> None:
        """A request over the server's -ORBgiopMaxMsgSize is refused; the client sees COMM_FAILURE."""
        orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0", "-ORBgiopMaxMsgSize", "4096")
        poa = orb.resolve_initial_references("RootPOA")
        poa.the_POAManager.activate()
        remote = interop.Thing._narrow(client_orb.string_to_object(
            orb.object_to_string(poa.servant_to_reference(peer.Thing(orb)))))
        assert remote.reverse_octets(b"ab") == b"ba"
        with pytest.raises(CORBA.COMM_FAILURE):
            remote.reverse_octets(b"x" * 10000)
        assert remote.reverse_octets(b"cd") == b"dc"  # a new connection

    def test_nesting_limit(self, thing: Any, interop: Any, peer: Any) -> None:
        """Values nested deeper than the limit (64) are refused; the connection carries on."""
        deep = CORBA.Any(interop._tc_Tree, peer.make_tree(200))
        with pytest.raises((CORBA.MARSHAL, CORBA.BAD_PARAM)):
            thing.describe_any(deep)
        assert thing.describe_any(CORBA.Any(interop._tc_Tree, peer.make_tree(5))) == "Tree(n5,6)"


class TestORBOperations:
    def test_string_conversions(self, server_orb: Any, client_orb: Any, thing: Any) -> None:
        """object_to_string/string_to_object round-trip; None is the nil IOR."""
        text = client_orb.object_to_string(thing)
        assert client_orb.string_to_object(text)._is_equivalent(thing)
        nil = client_orb.object_to_string(None)
        assert nil.startswith("IOR:") and client_orb.string_to_object(nil) is None
        with pytest.raises(CORBA.BAD_PARAM):
            client_orb.string_to_object("http://example.com/")

    def test_initial_references(self, make_orb: Any, server_orb: Any) -> None:
        """-ORBInitRef, -ORBDefaultInitRef and register_initial_reference, and InvalidName."""
        port = server_orb._core.addresses[0][1]
        orb = make_orb("-ORBInitRef", f"Thing=corbaloc::127.0.0.1:{port}/Thing",
                       "-ORBDefaultInitRef", f"corbaloc::127.0.0.1:{port}")
        thing = orb.resolve_initial_references("Thing")
        assert thing._NP_delegate.ior.object_key == b"Thing"
        other = orb.resolve_initial_references("Other")
        assert other._NP_delegate.ior.object_key == b"Other"
        orb.register_initial_reference("Mine", thing)
        assert orb.resolve_initial_references("Mine") is thing
        with pytest.raises(CORBA.ORB.InvalidName):
            orb.register_initial_reference("Mine", thing)
        bare = make_orb()
        with pytest.raises(CORBA.ORB.InvalidName):
            bare.resolve_initial_references("NameService")
        assert "RootPOA" in bare.list_initial_services()

    def test_run_returns_after_shutdown(self, make_orb: Any, client_orb: Any, peer: Any,
                                        interop: Any) -> None:
        """run() blocks until shutdown; a servant may call shutdown(False); later calls fail."""
        orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0")
        poa = orb.resolve_initial_references("RootPOA")
        poa.the_POAManager.activate()
        remote = interop.Thing._narrow(client_orb.string_to_object(
            orb.object_to_string(poa.servant_to_reference(peer.Thing(orb)))))
        runner = threading.Thread(target=orb.run)
        runner.start()
        remote._set_counter(-1)  # the servant calls orb.shutdown(False)
        runner.join(30)
        assert not runner.is_alive()
        with pytest.raises((CORBA.TRANSIENT, CORBA.COMM_FAILURE)):
            remote.poked()

    def test_shutdown_waiting_inside_a_request_is_bad_inv_order(
            self, server_orb: Any, client_orb: Any, peer: Any, interop: Any) -> None:
        """shutdown(True) from inside a request would wait for itself: BAD_INV_ORDER."""
        class Impatient(peer.Thing):  # type: ignore[misc,name-defined]
            def poked(self) -> int:
                server_orb.shutdown(True)
                return 0

        poa = server_orb.resolve_initial_references("RootPOA")
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(Impatient(server_orb)))))
        with pytest.raises(CORBA.BAD_INV_ORDER):
            remote.poked()
