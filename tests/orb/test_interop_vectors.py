"""GIOP bytes omniORB's C++ interop programs exchanged (tests/vectors/interop_cxx_*.json).

Captured by tests/vectors/capture_interop.py: the C++ client calling every
operation of ``Interop::Thing`` on the C++ server. Our decoders must read
every message; replaying the client's requests into our server must give
the answers omniORB's server gave.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from cosnotify.orb import CORBA
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.cdr import Decoder
from cosnotify.orb.fastpath import parse_reply, parse_request
from tests.orb.test_server import serve_script

VECTORS = pathlib.Path(__file__).parent.parent / "vectors"
CAPTURED = [json.loads(path.read_text()) for path in sorted(VECTORS.glob("interop_cxx_*.json"))]
pytestmark = pytest.mark.skipif(not CAPTURED, reason="no interop_cxx vectors captured")

#: Operations whose answers legitimately differ between the two servers.
DIFFERENT = {"_get_name",      # "cxx-thing" / "py-thing"
             "call_back",      # the C++ client's callback object is gone at replay time
             "self_ref", "echo_ref"}  # references to different servers (type ids compared)


def _vector_id(vector: dict[str, Any]) -> str:
    expect = vector["expect"]
    return f"{vector['direction']}-{expect.get('operation', expect['message_type'])}"


class TestDecoding:
    @pytest.mark.parametrize("vector", CAPTURED, ids=_vector_id)
    def test_decodes(self, vector: dict[str, Any]) -> None:
        """Each captured message decodes, and the hot-path parsers agree with the general one."""
        raw = bytes.fromhex(vector["hex"])
        expect = vector["expect"]
        message = gm.decode_message(raw)
        assert type(message).__name__ == expect["message_type"]
        if isinstance(message, gm.Request):
            assert (message.request_id, message.operation) == (expect["request_id"],
                                                               expect["operation"])
            fast = parse_request(raw)
            assert fast is not None and fast.data[fast.pos:] == message.body
            assert (fast.request_id, fast.operation, fast.object_key) == (
                message.request_id, message.operation, message.object_key)
        if isinstance(message, gm.Reply):
            fast_reply = parse_reply(raw)
            assert fast_reply is not None and fast_reply.request_id == message.request_id
            assert raw[24:] == message.body


def _values(interop: Any, operation: str, reply: gm.Reply) -> Any:
    """A reply's result and out values, or its exception, as Python values."""
    decoder = Decoder(reply.body, offset=reply.body_offset)
    if reply.reply_status is gm.ReplyStatus.SYSTEM_EXCEPTION:
        exc = reply.system_exception()
        return ("system", type(exc).__name__, exc.minor, exc.completed)
    if operation.startswith("_") and operation not in interop.Thing._NP_operations:
        return decoder.read_boolean()
    op = interop.Thing._NP_operations[operation]
    if reply.reply_status is gm.ReplyStatus.USER_EXCEPTION:
        repo_id = decoder.read_string()
        assert repo_id in [c._NP_RepositoryId for c in op.raises]
        return ("user", decoder.read(interop._tc_Oops))
    values = []
    if op.result.kind() != CORBA.tk_void:
        values.append(decoder.read(op.result))
    values.extend(decoder.read(p.tc) for p in op.out_params)
    return [v.value() if isinstance(v, CORBA.Any) else v for v in values]


class TestReplay:
    def test_our_server_answers_as_omniorb_did(self, make_orb: Any, peer: Any,
                                               interop: Any) -> None:
        """omniORB's client requests, replayed into our server, get omniORB's server's answers."""
        orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0", "-ORBclientCallTimeOutPeriod", "2000",
                       "-ORBclientConnectTimeOutPeriod", "2000")
        orb.resolve_initial_references("RootPOA").the_POAManager.activate()
        requests = [v for v in CAPTURED if v["direction"] == "client->server"]
        key = bytes.fromhex(next(v["expect"]["object_key"] for v in requests
                                 if v["expect"].get("object_key")))
        orb.resolve_initial_references("omniINSPOA").activate_object_with_id(key, peer.Thing(orb))
        operations = {v["expect"]["request_id"]: v["expect"].get("operation", "_locate")
                      for v in requests if "request_id" in v["expect"]}
        theirs = {m.request_id: m for m in (gm.decode_message(bytes.fromhex(v["hex"]))
                                            for v in CAPTURED if v["direction"] == "server->client")}
        ours = serve_script(orb._core.server, [bytes.fromhex(v["hex"]) for v in requests])
        assert sorted(m.request_id for m in ours) == sorted(theirs)
        compared = 0
        for reply in ours:
            operation = operations[reply.request_id]
            other = theirs[reply.request_id]
            if isinstance(reply, gm.LocateReply):
                assert reply.locate_status == other.locate_status
                continue
            if operation in DIFFERENT:
                if operation != "call_back":
                    assert reply.reply_status == other.reply_status
                if operation in ("self_ref", "echo_ref"):  # IORs of different servers, same type
                    assert _values(interop, operation, reply)[0].type_id == \
                        _values(interop, operation, other)[0].type_id
                continue
            assert reply.reply_status == other.reply_status, operation
            assert _values(interop, operation, reply) == _values(interop, operation, other), operation
            compared += 1
        assert compared >= 15
