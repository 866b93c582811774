"""``cosnotify query URL --channel ID ... [--json]`` against a served, retained channel.

Issue 21: the history query "on the command line"; the fields are the Eventer
seed's QueryData ("query events"), each with an option (docs/history.md).
The tool is a child process, so every query crosses IIOP.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

from cosnotify.server import NotificationServer, ServerConfig
from cosnotify.tools.query import parse_time, parse_type
from tests.history.test_channel import event, retain
from tests.tools.conftest import cli, cli_redirected


@pytest.fixture
def server(omniorb: Any, tmp_path: Path) -> Iterator[NotificationServer]:
    """A server with a store (retention needs one) on a free loopback port."""
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0,
                                          db=tmp_path / "store.db")).start()
    yield srv
    srv.stop()


@pytest.fixture
def retained(server: NotificationServer) -> int:
    """A retained channel holding D/a 0..2 (source timestamps 100..102), then E/b 3."""
    channel, cid = server.factory.create_channel([], retain(count=100))
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    proxy.push_structured_events([event("D", "a", n, source=100.0 + n) for n in range(3)])
    proxy.push_structured_events([event("E", "b", 3)])
    return int(cid)


def lines(done: Any) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_latest_first_with_ids_and_tails_line(url: str, retained: int) -> None:
    """Default order descending by timestamp (docs/history.md); a line is the id
    SERVER:SESSION:INSTANCE then tail's line."""
    out = lines(cli("query", url, "--channel", str(retained)))
    assert [line.split()[2] for line in out] == ["E/b", "D/a", "D/a", "D/a"]
    assert [line.rsplit(" ", 1)[1] for line in out] == ["n=3", "n=2", "n=1", "n=0"]
    _server, session, instance = out[0].split()[0].split(":")
    assert int(instance) > int(out[1].split()[0].split(":")[2])
    assert out[1].split()[0].split(":")[1] != session  # another supply call


def test_each_option_is_a_field(url: str, retained: int) -> None:
    """types (`*`), order, orderBy sourceTimestamp, uniqueType, maxResults, source time
    range, a constraint: each narrows as the seed says."""
    base = ("query", url, "--channel", str(retained), "--json")
    found = [json.loads(line) for line in lines(cli(*base, "--type", "D/*",
                                                    "--order", "ascending"))]
    assert [f["event"]["filterable"]["n"] for f in found] == [0, 1, 2]
    assert found[0]["type"] == ["D", "a"]
    assert found[0]["sourceTimestamp"] == "1970-01-01T00:01:40.000000Z"
    by_source = [json.loads(line) for line in lines(cli(
        *base, "--order-by", "sourceTimestamp", "--source-from", "101"))]
    assert [f["event"]["filterable"]["n"] for f in by_source] == [2, 1]
    unique = [json.loads(line)["type"] for line in lines(cli(*base, "--unique-type"))]
    assert unique == [["E", "b"], ["D", "a"]]
    assert len(lines(cli(*base, "--max", "1"))) == 1
    constrained = [json.loads(line) for line in lines(cli(*base, "$n == 1"))]
    assert [f["event"]["filterable"]["n"] for f in constrained] == [1]
    first = constrained[0]["id"]
    by_id = lines(cli(*base, "--id", f"{first['server']}:{first['session']}:"
                                     f"{first['instance']}"))
    assert len(by_id) == 1
    assert lines(cli(*base, "--id", "0:0:999999")) == []  # unknown ids match nothing
    assert lines(cli(*base, "--to", "1000")) == []  # 1970: nothing arrived before
    assert len(lines(cli(*base, "--from=-1h"))) == 4


def test_a_malformed_query_is_refused_with_its_reason(url: str, retained: int) -> None:
    """Issue 21, "Bad input": a reversed time range gets its reason, exit 2, and the
    service is not asked; a bad constraint is refused by the service."""
    done = cli("query", url, "--channel", str(retained), "--from", "200", "--to", "100")
    assert done.returncode == 2
    assert "from 200.0 is after to 100.0" in done.stderr
    done = cli("query", url, "--channel", str(retained), "$n >>> 1")
    assert done.returncode == 2
    assert "refused the query" in done.stderr
    done = cli("query", url, "--channel", str(retained), "--type", "*/a")
    assert done.returncode == 2 and "'*'" in done.stderr


def test_a_channel_that_keeps_no_history(server: NotificationServer, url: str) -> None:
    _, cid = server.factory.create_channel([], [])
    done = cli("query", url, "--channel", str(cid))
    assert done.returncode == 1
    assert f"channel {cid} keeps no history" in done.stderr


def test_times_and_types_on_the_command_line() -> None:
    """Unix seconds, ISO 8601 (UTC unless an offset), now, -N[smhd]; types with `/` or
    as a JSON list (a segment holding `/`)."""
    assert parse_time("86400") == 86400.0
    assert parse_time("1970-01-02T00:00:00") == 86400.0
    assert parse_time("1970-01-02T01:00:00+01:00") == 86400.0
    assert parse_time("-1h", now=lambda: 7200.0) == 3600.0
    assert parse_time("now", now=lambda: 5.0) == 5.0
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time("yesterday")
    assert parse_type("a/b/*") == ("a", "b", "*")
    assert parse_type('["a/b", "c"]') == ("a/b", "c")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_type('["a", 1]')


def test_json_nested_too_deep_is_a_usage_error_not_a_traceback() -> None:
    """Review 106: `--payload` and `--type` of 3,000 nested lists made json's decoder
    raise RecursionError, which argparse does not catch: a traceback and exit 1. A
    bad command line is one line and exit 2; and JSON whose value the mapping refuses
    is not called "not JSON"."""
    deep = "[" * 3000 + "]" * 3000
    for argument in ("--payload", "--type"):
        done = cli("query", "127.0.0.1:1", "--channel", "0", argument, deep)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and "nested too deep" in done.stderr
    done = cli("query", "127.0.0.1:1", "--channel", "0", "--payload",
               '{"$type": "short", "value": 100000}')
    assert done.returncode == 2 and "not JSON" not in done.stderr


def test_text_an_ascii_output_cannot_hold_is_escaped(server: NotificationServer,
                                                     url: str) -> None:
    """Review 106: an event's "café" printed to an ASCII output (PYTHONIOENCODING, or a
    Latin-1 locale for a wstring) raised UnicodeEncodeError: a traceback and exit 1.
    It is printed as a JSON escape instead, so --json lines stay JSON (review 111: a
    backslashreplace "\xe9" is no JSON escape)."""
    channel, cid = server.factory.create_channel([], retain(count=100))
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    proxy.push_structured_events([event("caf\u00e9", "a", 1)])
    done = cli("query", url, "--channel", str(cid), env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "caf\\u00e9/a" in done.stdout
    done = cli("query", url, "--channel", str(cid), "--json",
               env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["type"][0] == "caf\u00e9"


@pytest.mark.parametrize(("redirect", "reason"), [
    (">/dev/full", "No space left on device"), (">&-", "standard output is closed")])
def test_output_that_cannot_be_written_is_one_line(url: str, retained: int, redirect: str,
                                                   reason: str) -> None:
    """Review 138: stdout on a full disk gave an OSError traceback, a closed stdout an
    AttributeError one. Now one line and exit 1, as tail does."""
    done = cli_redirected(redirect, "query", url, "--channel", str(retained))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"cosnotify query: cannot write the output: {reason}"]


@pytest.mark.parametrize(("args", "what"), [
    (["--type", "€/x"], "type pattern"), (["$a == '€'"], "constraint"),
    (["--grammar=€", "$a > 1"], "grammar"), (["--grammar=€"], "grammar"),
    (["--type", '["a", "b€"]'], "type pattern")])
def test_text_outside_latin1_is_a_usage_error(url: str, retained: int, args: list[str],
                                              what: str) -> None:
    """Review 138: a type, constraint or grammar outside ISO-8859-1 went to the service,
    failed to marshal and was told as "lost the service: DATA_CONVERSION", exit 1. Now
    it is refused before the service is asked, as tail refuses it: exit 2."""
    done = cli("query", url, "--channel", str(retained), *args)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        (f'cosnotify query: the {what} holds "€" (U+20AC), which is not in ISO-8859-1, the '
         "character set of a CORBA string")]


@pytest.mark.parametrize("args", [["--grammar", "SQL"], ["--grammar", "SQL", "$a > 1"]])
def test_an_unknown_grammar_is_a_usage_error(url: str, retained: int,
                                             args: list[str]) -> None:
    """Review 138: without a constraint an unknown --grammar was ignored (exit 0). It
    is checked as tail checks it, with or without a constraint: exit 2."""
    done = cli("query", url, "--channel", str(retained), *args)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "cosnotify query: the service knows no constraint grammar 'SQL'"]


def test_a_known_grammar_without_a_constraint_is_fine(url: str, retained: int) -> None:
    """A grammar the service knows, without a constraint: every event, as by default."""
    assert len(lines(cli("query", url, "--channel", str(retained), "--grammar", "ELVIN4"))) == 4
