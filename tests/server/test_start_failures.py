"""``cosnotify serve`` starting and failing to start (review 108).

A start that fails leaves nothing behind in a naming service it was given;
the names it prints are URLs a client can resolve; options that would bind
two factories under one name are refused; a signal during the start stops
the server cleanly.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import CosNaming
import CosNotifyChannelAdmin as CA

from tests.server.conftest import ServeProcess


def _serve(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cosnotify", "serve", "--endpoint",
                           "127.0.0.1:0", *options], capture_output=True, text=True,
                          timeout=60, check=False)


def _naming_url(server: ServeProcess) -> str:
    """The embedded naming service of ``server``, as a corbaloc URL."""
    url = next(line.split(" at ", 1)[1].strip() for line in server.log if "serving" in line)
    host_port = url.split("::", 1)[1].split("#", 1)[0]
    return f"corbaloc::{host_port}/NameService"


def test_a_failed_start_leaves_the_names_it_was_given_alone(omniorb: Any,
                                                             tmp_path: Path) -> None:
    """Review 108: the factory's name was bound before the front ends started and the
    IOR file was written; either failing left the name, in an external naming
    service, pointing at a server that never came up -- in place of the live one."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    naming_host = ServeProcess(tmp_path / "a")
    try:
        naming = _naming_url(naming_host)
        live = ServeProcess(tmp_path / "b", "--naming", naming, "--name", "Shared")
        try:
            with socket.socket() as busy:
                busy.bind(("127.0.0.1", 0))
                busy.listen()
                port = busy.getsockname()[1]
                done = _serve("--naming", naming, "--name", "Shared",
                              "--elvin", f"127.0.0.1:{port}")
            assert done.returncode == 1 and "cannot start" in done.stderr
            done = _serve("--naming", naming, "--name", "Shared",
                          "--ior-file", str(tmp_path / "no" / "such" / "dir.ior"))
            assert done.returncode == 1 and "cannot start" in done.stderr
            done = _serve("--naming", naming, "--name", "Shared",
                          "--ior-file", str(tmp_path))  # a directory (review 111)
            assert done.returncode == 1 and "is a directory" in done.stderr
            context = omniorb.string_to_object(naming)._narrow(CosNaming.NamingContext)
            found = context.resolve([CosNaming.NameComponent("Shared", "")])
            factory = found._narrow(CA.EventChannelFactory)
            assert factory is not None and not factory._non_existent()
            assert omniorb.object_to_string(found) == live.ior
        finally:
            live.stop()
    finally:
        naming_host.stop()
    assert not list(tmp_path.glob("b/.*.ior*"))  # the staged IOR file was put in place


def test_names_a_client_cannot_resolve_or_that_collide_are_refused() -> None:
    """Review 108: an empty --name was printed as "...#" (BAD_PARAM for a client), and
    --typed-name equal to --name bound the typed factory over the untyped one, while
    the log still advertised an EventChannelFactory under that name."""
    import pytest

    from cosnotify.server import ServerConfig

    with pytest.raises(ValueError, match="must be a name"):
        ServerConfig(name="")
    with pytest.raises(ValueError, match="is the factory's"):
        ServerConfig(name="Same", typed_name="Same", idl=(Path("Coffee.idl"),))
    idl = str(Path(__file__).parents[1] / "typed" / "data" / "Coffee.idl")
    done = _serve("--idl", idl, "--typed-name", "NotifyEventChannelFactory")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        ("cosnotify serve: cannot start: the typed factory's name 'NotifyEventChannelFactory' "
         "is the factory's: each is bound under its own name")]
    assert ServerConfig(name="Same", typed_name="Same").name == "Same"  # no typed IDL: fine
    done = _serve("--name", "")  # a bad argument: status 2
    assert done.returncode == 2 and "a name cannot be empty" in done.stderr


def test_the_url_it_prints_resolves_for_any_name(omniorb: Any, tmp_path: Path) -> None:
    """Review 108: the factory is bound as one component; its URL put the raw text
    after '#', where a client reads a stringified name: "Notify.Factory" was an id
    and a kind (BAD_PARAM), "a/b" two components. The URL escapes the name."""
    for name in ("Notify.Factory", "my factory", "a/b"):
        server = ServeProcess(tmp_path, "--name", name)
        try:
            url = next(line.split(" at ", 1)[1].split(" (naming", 1)[0].strip()
                       for line in server.log if "serving" in line)
            found = omniorb.string_to_object(url)._narrow(CA.EventChannelFactory)
            assert found is not None and omniorb.object_to_string(found) == server.ior
        finally:
            server.stop()


def test_a_signal_during_the_start_stops_the_server_cleanly(tmp_path: Path) -> None:
    """Review 108: the handlers were set once the server had started, so SIGTERM during
    a long start (a big store's restore) killed the process (no clean stop), and
    SIGINT printed a KeyboardInterrupt traceback. The signal now stops the server as
    soon as it has started: status 0, "stopped", no traceback. (The start sends the
    signal itself here, so it lands inside the start, not before or after it.)"""
    script = (
        "import os, signal, sys\n"
        "from cosnotify import __main__ as entry\n"
        "from cosnotify.server import app\n"
        "start = app.NotificationServer.start\n"
        "def start_signalled(self):\n"
        "    os.kill(os.getpid(), signal.SIG" + "{sig})\n"
        "    return start(self)\n"
        "app.NotificationServer.start = start_signalled\n"
        "sys.exit(entry.main(['serve', '--endpoint', '127.0.0.1:0']))\n")
    for sig in ("TERM", "INT"):
        done = subprocess.run([sys.executable, "-c", script.replace("{sig}", sig)],
                              capture_output=True, text=True, timeout=60, check=False,
                              preexec_fn=_default_sigint)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "stopped" in done.stderr


def _default_sigint() -> None:
    """A child started from a shell's background job inherits SIGINT ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_name_through_a_context_that_is_none_cannot_proceed(omniorb: Any,
                                                               tmp_path: Path) -> None:
    """Review 108: bind_context takes the reference as the client typed it, so an
    object that is no naming context can be bound as one; resolving through it made
    the forwarded call fail its type check, and INV_OBJREF reached the client.
    CosNaming's answer for a context that cannot go on is CannotProceed."""
    import pytest

    server = ServeProcess(tmp_path)
    try:
        root = omniorb.string_to_object(_naming_url(server))._narrow(CosNaming.NamingContext)
        factory = omniorb.string_to_object(server.ior)
        fake = CosNaming._objref_NamingContext(factory._obj)  # typed as a context, is none
        root.bind_context([CosNaming.NameComponent("fake", "")], fake)
        with pytest.raises(CosNaming.NamingContext.CannotProceed) as caught:
            root.resolve([CosNaming.NameComponent("fake", ""), CosNaming.NameComponent("x", "")])
        assert [(c.id, c.kind) for c in caught.value.rest_of_name] == [("x", "")]
    finally:
        server.stop()


def test_an_ior_file_that_is_a_symlink_updates_its_target(tmp_path: Path) -> None:
    """Review 111: the staged IOR file replaced a symlink --ior-file with a regular
    file and left its target stale; the target is what is written (its mode kept)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "factory.ior"
    target.write_text("OLD\n")
    target.chmod(0o640)
    link = tmp_path / "factory.ior"  # the --ior-file ServeProcess gives
    link.symlink_to(target)
    server = ServeProcess(tmp_path)
    try:
        assert link.is_symlink() and target.read_text().strip().startswith("IOR:")
        assert target.stat().st_mode & 0o777 == 0o640
    finally:
        server.stop()


def test_a_store_named_through_a_symlink_is_the_same_store(tmp_path: Path) -> None:
    """Review 111: the lock was beside the path as given, so a second server reached
    the store of a running one through a symlink to it."""
    real = tmp_path / "real.db"
    alias = tmp_path / "alias.db"
    alias.symlink_to(real)
    server = ServeProcess(tmp_path, "--db", str(real))
    try:
        done = _serve("--db", str(alias))
        assert done.returncode == 1 and "in use by another process" in done.stderr
    finally:
        server.stop()


def test_a_context_whose_server_is_gone_cannot_proceed(omniorb: Any, tmp_path: Path) -> None:
    """Review 111: a name through a context bound from another naming service that
    has stopped gave the client COMM_FAILURE or TRANSIENT (COMPLETED_MAYBE, as if its
    own server had failed); it is CannotProceed, as for a context that is none."""
    import pytest

    (tmp_path / "far").mkdir()
    server = ServeProcess(tmp_path)
    far = ServeProcess(tmp_path / "far")
    try:
        root = omniorb.string_to_object(_naming_url(server))._narrow(CosNaming.NamingContext)
        far_root = omniorb.string_to_object(_naming_url(far))._narrow(CosNaming.NamingContext)
        root.bind_context([CosNaming.NameComponent("far", "")], far_root)
        far.stop()
        with pytest.raises(CosNaming.NamingContext.CannotProceed):
            root.resolve([CosNaming.NameComponent("far", ""),
                          CosNaming.NameComponent("NotifyEventChannelFactory", "")])
    finally:
        far.stop()
        server.stop()


def test_names_are_put_back_when_the_start_fails_after_binding_them(
        omniorb: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Review 113: the names are bound before the IOR file is put in place; when that
    last step fails, each name is bound back to what it named before, or unbound
    (``_bind_back``): the naming service is left as the start found it."""
    import os

    import pytest

    from cosnotify.server import NotificationServer, ServerConfig

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    naming_host = ServeProcess(tmp_path / "a")
    try:
        naming = _naming_url(naming_host)
        live = ServeProcess(tmp_path / "b", "--naming", naming, "--name", "Shared")
        try:
            def refuse(src: Any, dst: Any) -> None:
                raise PermissionError(f"cannot put {src} in place")

            monkeypatch.setattr(os, "replace", refuse)
            for name in ("Shared", "Fresh"):
                server = NotificationServer(ServerConfig(
                    port=0, naming_url=naming, name=name, ior_file=tmp_path / "x.ior"))
                with pytest.raises(PermissionError):
                    server.start()
                server.stop()
            monkeypatch.undo()
            context = omniorb.string_to_object(naming)._narrow(CosNaming.NamingContext)
            found = context.resolve([CosNaming.NameComponent("Shared", "")])
            assert omniorb.object_to_string(found) == live.ior  # bound back
            with pytest.raises(CosNaming.NamingContext.NotFound):
                context.resolve([CosNaming.NameComponent("Fresh", "")])  # unbound again
            assert not list(tmp_path.glob(".x.ior*"))  # no staged file left
        finally:
            live.stop()
    finally:
        naming_host.stop()
