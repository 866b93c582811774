"""``cosnotify ls``: the tree and its JSON, read over CORBA from a running server."""

from __future__ import annotations

import json
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA
import CosNotifyFilter
import NotifyMonitoringExt

from cosnotify.server import NotificationServer
from tests.tools.conftest import cli, cli_redirected


def _named_setup(server: NotificationServer) -> Any:
    factory = server.factory
    channel, channel_id = factory.create_named_channel([], [], "alarms")
    admin, _ = channel.named_new_for_consumers(CA.AND_OP, "ops")
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$severity > 2")])
    filter_id = admin.add_filter(flt)
    admin.obtain_named_notification_push_supplier(CA.STRUCTURED_EVENT, "pager")
    return channel_id, filter_id


def test_ls_prints_names_filters_and_queue(server: NotificationServer, url: str) -> None:
    channel_id, filter_id = _named_setup(server)
    done = cli("ls", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f'channel {channel_id} "alarms"' in lines
    assert any(line.strip().startswith("consumer admin") and '"ops" (AND_OP)' in line
               for line in lines)
    assert f"    filter {filter_id} EXTENDED_TCL: $severity > 2" in lines
    assert any('"pager": structured push supplier, idle, client none' in line for line in lines)
    assert any(line.strip().startswith("queue 0/") for line in lines)


def test_ls_escapes_what_clients_wrote(server: NotificationServer, url: str) -> None:
    """Review 106: a constraint is a client's text; a newline and escape sequences in
    it printed raw let any client forge lines (a fake proxy) or drive the operator's
    terminal. They come out escaped, the constraint on its one line."""
    factory = server.factory
    channel, channel_id = factory.create_channel([], [])
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    forged = "$a == 'x\n    proxy 7: structured push supplier, connected\x1b[2J'"
    flt.add_constraints([CosNotifyFilter.ConstraintExp([], forged)])
    channel._get_default_consumer_admin().add_filter(flt)
    done = cli("ls", url, "--channel", str(channel_id))
    assert done.returncode == 0, done.stderr
    assert all(line.isprintable() for line in done.stdout.splitlines())
    assert not any(line.strip().startswith("proxy 7") for line in done.stdout.splitlines())
    assert "x\\u000a    proxy 7: structured push supplier, connected\\u001b[2J'" \
        in done.stdout


def test_ls_shows_names_as_written_but_for_unprintable_characters(
        server: NotificationServer, url: str) -> None:
    """Review 138: names went through json.dumps, so "café" showed as "caf\\u00e9" even
    on a UTF-8 terminal; only unprintable characters are escaped (operations.md)."""
    _, channel_id = server.factory.create_named_channel([], [], "café\u0085")
    done = cli("ls", url, "--channel", str(channel_id), env={"PYTHONIOENCODING": "utf-8"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f'channel {channel_id} "café\\u0085"'


def test_ls_json_is_the_snapshot(server: NotificationServer, url: str) -> None:
    channel_id, filter_id = _named_setup(server)
    done = cli("ls", "--json", url)
    assert done.returncode == 0, done.stderr
    snap = json.loads(done.stdout)
    assert snap["version"] == 1
    (channel,) = [c for c in snap["channels"] if c["id"] == channel_id]
    assert channel["name"] == "alarms"
    (admin,) = [a for a in channel["admins"] if a["name"] == "ops"]
    assert admin["filters"] == [{"id": filter_id, "grammar": "EXTENDED_TCL",
                                 "constraints": ["$severity > 2"]}]
    (proxy,) = admin["proxies"]
    assert proxy["name"] == "pager"
    assert proxy["kind"] == "structured push supplier"
    assert proxy["counters"]["depth"] == 0


def test_ls_of_one_channel(server: NotificationServer, url: str) -> None:
    server.factory.create_channel([], [])
    _, second_id = server.factory.create_channel([], [])
    done = cli("ls", "--json", "--channel", str(second_id), url)
    assert done.returncode == 0, done.stderr
    assert [c["id"] for c in json.loads(done.stdout)["channels"]] == [second_id]


def test_ls_reads_the_ior_file_and_the_factory_url(server: NotificationServer,
                                                    tmp_path: Any) -> None:
    ior = tmp_path / "factory.ior"
    ior.write_text(server.ior + "\n")
    by_file = cli("ls", "--json", str(ior))
    by_url = cli("ls", "--json", server.factory_url)
    assert by_file.returncode == 0 and by_url.returncode == 0, by_file.stderr + by_url.stderr
    assert json.loads(by_file.stdout)["channels"] == json.loads(by_url.stdout)["channels"]


def test_a_tao_client_sees_the_monitor_factory_as_its_own(server: NotificationServer) -> None:
    narrowed = server.factory_ref._narrow(NotifyMonitoringExt.EventChannelFactory)
    assert narrowed is not None
    channel, _ = narrowed.create_named_channel([], [], "tao-style")
    assert channel is not None


class TestBadInput:
    """One stderr line and exit 2 (the command line is wrong) or 1 (it cannot be done)."""

    def test_malformed_urls_are_usage_errors(self) -> None:
        for url in ("corbaloc:foo", "IOR:zz", "ior:" + "ab" * 200, "nowhere"):
            done = cli("ls", url)
            assert done.returncode == 2, (url, done.stderr)
            assert len(done.stderr.splitlines()) == 1, done.stderr
            assert done.stderr.startswith("cosnotify ls: ")

    def test_an_unbound_name_is_a_usage_error(self, server: NotificationServer) -> None:
        host, port = server.endpoint
        done = cli("ls", f"corbaname::{host}:{port}#NoSuchFactory")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            (f"cosnotify ls: corbaname::{host}:{port}#NoSuchFactory: nothing is bound as "
            f"NoSuchFactory in that naming service")]

    def test_a_wrong_object_key_and_a_closed_port_are_failures(
            self, server: NotificationServer) -> None:
        host, port = server.endpoint
        wrong_key = cli("ls", f"corbaloc::{host}:{port}/NoSuchKey")
        assert wrong_key.returncode == 1
        assert wrong_key.stderr.splitlines() == [
            f"cosnotify ls: no object at corbaloc::{host}:{port}/NoSuchKey (OBJECT_NOT_EXIST)"]
        closed = cli("ls", "127.0.0.1:1")
        assert closed.returncode == 1
        assert closed.stderr.splitlines() == [
            "cosnotify ls: cannot reach 127.0.0.1:1: TRANSIENT (TRANSIENT_ConnectFailed)"]


def test_a_snapshot_too_large_to_send_is_said_so(server: NotificationServer, url: str,
                                                 monkeypatch: Any) -> None:
    """Past the reply limit the server raises IMP_LIMIT rather than fail to marshal; ls
    says why and what to do."""
    import importlib

    import pytest

    from cosnotify.tools import connect, ls

    stats = importlib.import_module("cosnotify.ops.stats")  # the module, not the function

    server.factory.create_channel([], [])
    monkeypatch.setattr(stats, "MAX_SNAPSHOT_BYTES", 100)
    with pytest.raises(connect.ToolError) as raised:
        ls.fetch(url, [])
    assert raised.value.status == connect.FAILURE
    assert "the snapshot is larger than one reply may carry" in raised.value.message
    assert "--channel ID" in raised.value.message


@pytest.mark.parametrize(("redirect", "reason"), [
    (">/dev/full", "No space left on device"), (">&-", "standard output is closed")])
@pytest.mark.parametrize("form", [[], ["--json"]])
def test_output_that_cannot_be_written_is_one_line(server: NotificationServer, url: str,
                                                   redirect: str, reason: str,
                                                   form: list[str]) -> None:
    """Review 138: stdout on a full disk gave an OSError traceback, a closed stdout an
    AttributeError one (sys.stdout is None). Now one line and exit 1, as tail does."""
    server.factory.create_channel([], [])
    done = cli_redirected(redirect, "ls", url, *form)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"cosnotify ls: cannot write the output: {reason}"]


def test_only_the_missing_channels_are_named(server: NotificationServer, url: str) -> None:
    """Review 138: ``--channel 0 --channel 7`` said "no channel 0, 7" though 0 exists:
    the line names only the ids the service does not have (each once)."""
    _, channel_id = server.factory.create_channel([], [])
    done = cli("ls", url, "--channel", str(channel_id), "--channel", "4242",
               "--channel", "4243", "--channel", "4242")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"cosnotify ls: no channel 4242, 4243 (ids: see cosnotify ls {url})"]
