"""CosNaming interop with omniORB: Debian's nameclt drives our embedded NameService."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

import CosEventComm__POA
import CosNaming

from cosnotify.corba.addresses import iiop_address
from cosnotify.server import naming
from tests.interop.conftest import nameclt, require_tools

pytestmark = pytest.mark.interop
_keys = itertools.count(1)


class Thing(CosEventComm__POA.PushConsumer):
    """Any object to bind."""

    def push(self, data: Any) -> None:
        pass

    def disconnect_push_consumer(self) -> None:
        pass


@pytest.fixture
def service(omniorb: Any) -> Iterator[tuple[naming.NameService, str]]:
    """A fresh embedded naming service at its own INS key; yields it and its corbaloc."""
    require_tools("nameclt")
    key = f"TestNaming{next(_keys)}"
    made = naming.NameService(omniorb, key.encode())
    made.users = 1
    host, port = iiop_address(omniorb, made.root)
    yield made, f"corbaloc::{host}:{port}/{key}"
    made.release()


class TestNameclt:
    def test_nameclt_uses_our_naming_service(self, omniorb: Any,
                                             service: tuple[naming.NameService, str]) -> None:
        """nameclt lists, binds, resolves and unbinds in our embedded NameService."""
        _, url = service
        poa = omniorb.resolve_initial_references("RootPOA")
        ior = omniorb.object_to_string(poa.servant_to_reference(Thing()))
        assert nameclt(url, "list").stdout.strip() == ""
        made = nameclt(url, "bind_new_context", "apps")
        assert made.returncode == 0 and made.stdout.startswith("IOR:")
        assert nameclt(url, "bind_new_context", "apps/demo.ctx").returncode == 0
        assert nameclt(url, "bind", "apps/demo.ctx/thing.obj", ior).returncode == 0
        assert nameclt(url, "list").stdout.split() == ["apps/"]
        assert nameclt(url, "list", "apps").stdout.split() == ["demo.ctx/"]
        assert nameclt(url, "list", "apps/demo.ctx").stdout.split() == ["thing.obj"]
        resolved = nameclt(url, "resolve", "apps/demo.ctx/thing.obj")
        assert resolved.returncode == 0 and resolved.stdout.strip() == ior
        assert nameclt(url, "unbind", "apps/demo.ctx/thing.obj").returncode == 0
        assert nameclt(url, "list", "apps/demo.ctx").stdout.strip() == ""
        missing = nameclt(url, "resolve", "apps/nothing")
        assert missing.returncode != 0 and "NotFound" in missing.stdout + missing.stderr

    def test_nameclt_lists_many_bindings(self, service: tuple[naming.NameService, str]) -> None:
        """A listing longer than nameclt's first batch comes through the BindingIterator."""
        made, url = service
        for i in range(120):
            made.root_servant.bind([CosNaming.NameComponent(f"n{i:03d}", "")], made.root)
        listed = nameclt(url, "list").stdout.split()
        assert listed == [f"n{i:03d}" for i in range(120)]
