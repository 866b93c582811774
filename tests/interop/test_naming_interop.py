"""CosNaming interop with omniORB: nameclt on our service, our client on omniNames."""

from __future__ import annotations

from typing import Any

import pytest

from cosnotify.orb import naming
from cosnotify.stubs import CosNaming
from tests.interop.conftest import nameclt

pytestmark = pytest.mark.interop
NC = CosNaming.NamingContext


def _port(orb: Any) -> int:
    return int(orb._core.addresses[0][1])


class TestNameclt:
    def test_nameclt_uses_our_naming_service(self, orb: Any, peer: Any) -> None:
        """nameclt lists, binds, resolves and unbinds in our embedded NameService."""
        naming.serve(orb)
        port = _port(orb)
        poa = orb.resolve_initial_references("RootPOA")
        ior = orb.object_to_string(poa.servant_to_reference(peer.Thing(orb)))
        assert nameclt(port, "list").stdout.strip() == ""
        made = nameclt(port, "bind_new_context", "apps")
        assert made.returncode == 0 and made.stdout.startswith("IOR:")
        assert nameclt(port, "bind_new_context", "apps/demo.ctx").returncode == 0
        assert nameclt(port, "bind", "apps/demo.ctx/thing.obj", ior).returncode == 0
        assert nameclt(port, "list").stdout.split() == ["apps/"]
        assert nameclt(port, "list", "apps").stdout.split() == ["demo.ctx/"]
        assert nameclt(port, "list", "apps/demo.ctx").stdout.split() == ["thing.obj"]
        resolved = nameclt(port, "resolve", "apps/demo.ctx/thing.obj")
        assert resolved.returncode == 0 and resolved.stdout.strip() == ior
        assert nameclt(port, "unbind", "apps/demo.ctx/thing.obj").returncode == 0
        assert nameclt(port, "list", "apps/demo.ctx").stdout.strip() == ""
        missing = nameclt(port, "resolve", "apps/nothing")
        assert missing.returncode != 0 and "NotFound" in missing.stdout + missing.stderr

    def test_nameclt_lists_many_bindings(self, orb: Any) -> None:
        """A listing longer than nameclt's first batch comes through the BindingIterator."""
        service = naming.serve(orb)
        for i in range(120):
            service.root_servant.bind([CosNaming.NameComponent(f"n{i:03d}", "")], service.root)
        listed = nameclt(_port(orb), "list").stdout.split()
        assert listed == [f"n{i:03d}" for i in range(120)]


class TestOmniNames:
    def test_our_client_on_omninames(self, omninames: int, orb: Any, peer: Any,
                                     interop: Any) -> None:
        """Our client binds, lists, resolves and unbinds in omniNames, with its exceptions."""
        ns = CosNaming.NamingContextExt._narrow(orb.string_to_object(
            f"corbaloc::127.0.0.1:{omninames}/NameService"))
        sub = ns.bind_new_context(ns.to_name("ours"))
        assert isinstance(sub, CosNaming.NamingContext)
        poa = orb.resolve_initial_references("RootPOA")
        thing = poa.servant_to_reference(peer.Thing(orb))
        ns.bind(ns.to_name("ours/thing.obj"), thing)
        with pytest.raises(NC.AlreadyBound):
            ns.bind(ns.to_name("ours/thing.obj"), thing)
        bindings, iterator = ns.list(0)
        assert bindings == [] and iterator is not None
        more, binding = iterator.next_one()
        assert more and binding.binding_name == ns.to_name("ours")
        assert binding.binding_type == CosNaming.ncontext
        iterator.destroy()
        found = interop.Thing._narrow(ns.resolve_str("ours/thing.obj"))
        assert found._get_name() == "py-thing"  # omniNames gave our own reference back
        with pytest.raises(NC.NotFound) as caught:
            ns.resolve_str("ours/missing/deeper")
        assert caught.value.why == NC.missing_node
        assert caught.value.rest_of_name == ns.to_name("missing/deeper")
        assert ns.to_url(":127.0.0.1:2809", "a/b") == "corbaname::127.0.0.1:2809#a/b"
        found = orb.string_to_object(f"corbaname::127.0.0.1:{omninames}#ours/thing.obj")
        assert interop.Thing._narrow(found)._get_name() == "py-thing"
        ns.unbind(ns.to_name("ours/thing.obj"))
        sub.destroy()
        ns.unbind(ns.to_name("ours"))
        assert ns.list(10)[0] == []

    def test_nameclt_resolves_what_we_registered(self, omninames: int, orb: Any,
                                                 peer: Any) -> None:
        """An object we register in omniNames is found by nameclt, as the same IOR."""
        ns = CosNaming.NamingContextExt._narrow(orb.string_to_object(
            f"corbaloc::127.0.0.1:{omninames}/NameService"))
        poa = orb.resolve_initial_references("RootPOA")
        thing = poa.servant_to_reference(peer.Thing(orb))
        ns.rebind(ns.to_name("from-python.obj"), thing)
        resolved = nameclt(omninames, "resolve", "from-python.obj")
        assert resolved.returncode == 0
        assert resolved.stdout.strip() == orb.object_to_string(thing)
        assert "from-python.obj" in nameclt(omninames, "list").stdout.split()
