"""The embedded CosNaming service, used remotely through the generated stubs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cosnotify.orb import CORBA, naming
from cosnotify.stubs import CosNaming

NC = CosNaming.NamingContext


def name(text: str) -> list[Any]:
    return [CosNaming.NameComponent(*part.split(".", 1)) if "." in part
            else CosNaming.NameComponent(part, "") for part in text.split("/")]


@pytest.fixture
def service(server_orb: Any) -> naming.NameService:
    return naming.serve(server_orb)


@pytest.fixture
def ns(service: naming.NameService, server_orb: Any, client_orb: Any) -> Any:
    """The root context as a remote client sees it, through corbaloc."""
    port = server_orb._core.addresses[0][1]
    return CosNaming.NamingContextExt._narrow(
        client_orb.string_to_object(f"corbaloc::127.0.0.1:{port}/NameService"))


@pytest.fixture
def target(server_orb: Any, peer: Any) -> Any:
    poa = server_orb.resolve_initial_references("RootPOA")
    return poa.servant_to_reference(peer.Thing(server_orb))


class TestBindAndResolve:
    def test_bind_resolve_unbind(self, ns: Any, target: Any) -> None:
        """bind, resolve (same object back), unbind, then NotFound(missing_node)."""
        ns.bind(name("thing.obj"), target)
        assert ns.resolve(name("thing.obj"))._is_equivalent(target)
        ns.unbind(name("thing.obj"))
        with pytest.raises(NC.NotFound) as caught:
            ns.resolve(name("thing.obj"))
        assert caught.value.why == NC.missing_node
        assert caught.value.rest_of_name == name("thing.obj")

    def test_already_bound_and_rebind(self, ns: Any, target: Any) -> None:
        """bind twice is AlreadyBound; rebind replaces."""
        ns.bind(name("x"), target)
        with pytest.raises(NC.AlreadyBound):
            ns.bind(name("x"), target)
        ns.rebind(name("x"), ns)
        assert ns.resolve(name("x"))._is_equivalent(ns)

    def test_rebind_may_not_change_the_binding_type(self, ns: Any, target: Any) -> None:
        """rebind over a context is NotFound(not_object); rebind_context over an object not_context."""
        ns.bind_new_context(name("ctx"))
        ns.bind(name("obj"), target)
        with pytest.raises(NC.NotFound) as caught:
            ns.rebind(name("ctx"), target)
        assert caught.value.why == NC.not_object
        with pytest.raises(NC.NotFound) as caught:
            ns.rebind_context(name("obj"), ns.new_context())
        assert caught.value.why == NC.not_context

    def test_compound_names(self, ns: Any, target: Any) -> None:
        """Names resolve through sub-contexts; an object in the middle is NotFound(not_context)."""
        sub = ns.bind_new_context(name("a"))
        sub.bind_new_context(name("b.kind"))
        ns.bind(name("a/b.kind/leaf"), target)
        assert ns.resolve(name("a/b.kind/leaf"))._is_equivalent(target)
        assert sub.resolve(name("b.kind/leaf"))._is_equivalent(target)
        with pytest.raises(NC.NotFound) as caught:
            ns.resolve(name("a/b.kind/leaf/deeper"))
        assert caught.value.why == NC.not_context
        assert caught.value.rest_of_name == name("leaf/deeper")
        with pytest.raises(NC.NotFound) as caught:
            ns.resolve(name("a/missing/leaf"))
        assert caught.value.rest_of_name == name("missing/leaf")

    def test_invalid_name(self, ns: Any) -> None:
        """An empty name is InvalidName."""
        with pytest.raises(NC.InvalidName):
            ns.resolve([])
        with pytest.raises(NC.InvalidName):
            ns.bind_new_context([])

    def test_federated_context(self, ns: Any, make_orb: Any, client_orb: Any) -> None:
        """A context of another naming server bound here is followed remotely."""
        other = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0")
        other.resolve_initial_references("RootPOA").the_POAManager.activate()
        far = naming.serve(other)
        far.root_servant.bind(name("there"), far.root)
        remote_root = CosNaming.NamingContext._narrow(client_orb.string_to_object(
            other.object_to_string(far.root)))
        ns.bind_context(name("far"), remote_root)
        assert ns.resolve(name("far/there"))._is_equivalent(remote_root)
        ns.bind(name("far/here"), ns)
        assert remote_root.resolve(name("here"))._is_equivalent(ns)


class TestContexts:
    def test_destroy(self, ns: Any, target: Any) -> None:
        """A context with bindings is NotEmpty; an empty one is destroyed."""
        sub = ns.bind_new_context(name("sub"))
        sub.bind(name("x"), target)
        with pytest.raises(NC.NotEmpty):
            sub.destroy()
        sub.unbind(name("x"))
        sub.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            sub.resolve(name("x"))

    def test_root_cannot_be_destroyed(self, ns: Any) -> None:
        """Destroying the root context is refused."""
        with pytest.raises(CORBA.NO_PERMISSION):
            ns.destroy()

    def test_bind_new_context_already_bound(self, ns: Any) -> None:
        """bind_new_context over an existing name is AlreadyBound."""
        ns.bind_new_context(name("c"))
        with pytest.raises(NC.AlreadyBound):
            ns.bind_new_context(name("c"))


class TestList:
    def test_list_and_iterator(self, ns: Any, target: Any) -> None:
        """list returns how_many bindings and an iterator for the rest; nil when all fit."""
        for i in range(5):
            ns.bind(name(f"n{i}"), target)
        ns.bind_new_context(name("ctx"))
        everything, iterator = ns.list(10)
        assert iterator is None and len(everything) == 6
        assert {b.binding_type for b in everything} == {CosNaming.nobject, CosNaming.ncontext}
        first, iterator = ns.list(2)
        assert [b.binding_name[0].id for b in first] == ["n0", "n1"]
        more, one = iterator.next_one()
        assert more and one.binding_name[0].id == "n2"
        more, rest = iterator.next_n(10)
        assert more and [b.binding_name[0].id for b in rest] == ["n3", "n4", "ctx"]
        assert iterator.next_n(1) == (False, [])
        assert iterator.next_one()[0] is False
        with pytest.raises(CORBA.BAD_PARAM):
            iterator.next_n(0)
        iterator.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            iterator.next_one()


class TestExt:
    def test_string_names(self, ns: Any, target: Any) -> None:
        """to_string/to_name convert, resolve_str resolves, bad strings are InvalidName."""
        assert ns.to_string(name("a.b/c")) == "a.b/c"
        assert ns.to_name("a.b/c\\/d") == [CosNaming.NameComponent("a", "b"),
                                           CosNaming.NameComponent("c/d", "")]
        with pytest.raises(NC.InvalidName):
            ns.to_name("a//b")
        ns.bind(ns.to_name("s.t"), target)
        assert ns.resolve_str("s.t")._is_equivalent(target)

    def test_to_url(self, ns: Any) -> None:
        """to_url makes a corbaname URL; a bad address is InvalidAddress."""
        assert ns.to_url(":myhost:2809", "a b/c") == "corbaname::myhost:2809#a%20b/c"
        with pytest.raises(CosNaming.NamingContextExt.InvalidAddress):
            ns.to_url("", "x")
        with pytest.raises(NC.InvalidName):
            ns.to_url(":h:1", "a//b")

    def test_corbaname_urls(self, ns: Any, target: Any, server_orb: Any, client_orb: Any,
                            interop: Any) -> None:
        """corbaname::host:port#name and corbaname:rir:#name resolve through naming."""
        ns.bind_new_context(name("dir"))
        ns.bind(name("dir/thing.obj"), target)
        port = server_orb._core.addresses[0][1]
        found = client_orb.string_to_object(f"corbaname::127.0.0.1:{port}#dir/thing.obj")
        assert interop.Thing._narrow(found)._get_name() == "py-thing"
        local = server_orb.string_to_object("corbaname:rir:#dir/thing.obj")
        assert local._is_equivalent(target)
        assert server_orb.string_to_object("corbaloc:rir:/NameService") is not None


class TestThreads:
    def test_concurrent_binds(self, ns: Any, target: Any) -> None:
        """Many threads binding at once lose nothing."""
        def bind_many(prefix: int) -> None:
            for i in range(20):
                ns.bind(name(f"t{prefix}-{i}"), target)

        threads = [threading.Thread(target=bind_many, args=(n,)) for n in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        everything, iterator = ns.list(1000)
        assert len(everything) == 100 and iterator is None
