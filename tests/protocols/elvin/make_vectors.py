"""Writes vectors.json: one Elvin 4 packet per §7.1 type, and malformed ones, from the seed.

The bytes come from client.py's encoder, which is written from the seed's
tables alone (§7.4 structs, §8.2.3 XDR, §8.2.3.1 pkt_ids, §8.2.3.4 SubAST
codes); each vector names the section it comes from. Run from the repository
root: ``.venv/bin/python -m tests.protocols.elvin.make_vectors``.
"""

import json
from typing import Any

from tests.protocols.elvin import client as c

V: list[dict[str, Any]] = []


def body(f: bytes) -> str:
    """A framed packet's body (pkt_id onwards), in hex."""
    return f[4:].hex()


def add(name: str, source: str, data: bytes, ptype: str, fields: dict[str, Any]) -> None:
    """A valid vector: its bytes and the fields they decode to."""
    V.append({"name": name, "source": source, "valid": True, "hex": body(data), "type": ptype,
              "fields": fields})


def bad(name: str, source: str, hexdata: str, code: int, offset: int, why: str) -> None:
    """An invalid vector: the Nack code and offset the codec must report."""
    V.append({"name": name, "source": source, "valid": False, "hex": hexdata, "code": code,
              "offset": offset, "why": why})


K=[(2,[[b"secret"]])]
Kj=[[2,[["736563726574"]]]]
attrs=[("x",1),("big",c.I64(1024)),("r",1.5),("s","héllo"),("o",b"\x01\x02\x03")]
aj=[["x",{"int32":1}],["big",{"int64":1024}],["r",{"real64":1.5}],["s",{"string":"héllo"}],["o",{"opaque":"010203"}]]
add("UNotify","seed §7.4.1 struct UNotify; §8.2.3.1 UNotify = 32; §8.2.3.2 uint8 as 4-byte int", c.unotify(attrs, True, K), "UNotify",
    {"client_major_version":4,"client_minor_version":0,"attributes":aj,"deliver_insecure":True,"keys":Kj})
add("Nack","seed §7.4.2 struct Nack (error 2101 PARSE_ERROR, args offset int32 and token string)",
    c.frame("Nack", c.u32(7)+c.u32(2101)+c.string("parse error at %1")+c.u32(2)+c.value(3)+c.value("&&")), "Nack",
    {"xid":7,"error":2101,"message":"parse error at %1","args":[{"int32":3},{"string":"&&"}]})
add("ConnRqst","seed §7.4.3 struct ConnRqst; §7.5 option names", c.conn_rqst(1,[("Packet.Max-Length",8192),("Send-Queue.Drop-Policy","newest")],K,[]), "ConnRqst",
    {"xid":1,"client_major_version":4,"client_minor_version":0,"options":[["Packet.Max-Length",{"int32":8192}],["Send-Queue.Drop-Policy",{"string":"newest"}]],"nfn_keys":Kj,"sub_keys":[]})
add("ConnRply","seed §7.4.4 struct ConnRply", c.frame("ConnRply", c.u32(1)+c.nvs([("Packet.Max-Length",8192)])), "ConnRply",
    {"xid":1,"options":[["Packet.Max-Length",{"int32":8192}]]})
add("DisconnRqst","seed §7.4.5", c.frame("DisconnRqst", c.u32(9)), "DisconnRqst", {"xid":9})
add("DisconnRply","seed §7.4.6", c.frame("DisconnRply", c.u32(9)), "DisconnRply", {"xid":9})
add("Disconn","seed §7.4.7 (reason 2: redirect to the router in args)", c.frame("Disconn", c.u32(2)+c.string("elvin://other:2917")), "Disconn", {"reason":2,"args":"elvin://other:2917"})
add("SecRqst","seed §7.4.8 struct SecRqst; Keys of §7.4", c.sec_rqst(3, K, [], [(3,[[b"c"]])], []), "SecRqst",
    {"xid":3,"add_nfn_keys":Kj,"del_nfn_keys":[],"add_sub_keys":[[3,[["63"]]]],"del_sub_keys":[]})
add("SecRply","seed §7.4.9", c.frame("SecRply", c.u32(3)), "SecRply", {"xid":3})
add("NotifyEmit","seed §7.4.15 struct NotifyEmit; §8.2.3.5 NAME-TYPE-VALUE layout", c.notify_emit(attrs, False, K), "NotifyEmit",
    {"attributes":aj,"deliver_insecure":False,"keys":Kj})
add("NotifyDeliver","seed §7.4.16 struct NotifyDeliver (id64 arrays)", c.frame("NotifyDeliver", c.nvs([("x",1)])+c.u32(1)+c.id64(2**64-1)+c.u32(2)+c.id64(1)+c.id64(2)), "NotifyDeliver",
    {"attributes":[["x",{"int32":1}]],"secure_matches":[18446744073709551615],"insecure_matches":[1,2]})
add("SubAddRqst","seed §7.4.17", c.sub_add(5,'require(x) && x > 1', True, []), "SubAddRqst", {"xid":5,"expression":"require(x) && x > 1","accept_insecure":True,"keys":[]})
add("SubModRqst","seed §7.4.18", c.sub_mod(6, 42, "", False, [(3,[[b"k"]])], []), "SubModRqst",
    {"xid":6,"subscription_id":42,"expression":"","accept_insecure":False,"add_keys":[[3,[["6b"]]]],"del_keys":[]})
add("SubDelRqst","seed §7.4.19", c.sub_del(7, 42), "SubDelRqst", {"xid":7,"subscription_id":42})
add("SubRply","seed §7.4.20", c.frame("SubRply", c.u32(5)+c.id64(42)), "SubRply", {"xid":5,"subscription_id":42})
add("DropWarn","seed §7.4.12 (an empty struct: the pkt_id alone)", c.frame("DropWarn"), "DropWarn", {})
add("TestConn","seed §7.4.13", c.frame("TestConn"), "TestConn", {})
add("ConfConn","seed §7.4.14", c.frame("ConfConn"), "ConfConn", {})
add("QosRqst","seed §7.4.10", c.qos_rqst(8, [("Subscription.Max-Count", 4)]), "QosRqst", {"xid":8,"options":[["Subscription.Max-Count",{"int32":4}]]})
add("QosRply","seed §7.4.11", c.frame("QosRply", c.u32(8)+c.nvs([("Subscription.Max-Count",4)])), "QosRply", {"xid":8,"options":[["Subscription.Max-Count",{"int32":4}]]})
add("QnchAddRqst","seed §7.4.21", c.qnch_add(10, ["host","load"], True, []), "QnchAddRqst", {"xid":10,"names":["host","load"],"deliver_insecure":True,"keys":[]})
add("QnchModRqst","seed §7.4.22", c.qnch_mod(11, 43, ["a"], ["host"], True), "QnchModRqst",
    {"xid":11,"quench_id":43,"names_add":["a"],"names_del":["host"],"deliver_insecure":True,"add_keys":[],"del_keys":[]})
add("QnchDelRqst","seed §7.4.23", c.qnch_del(12, 43), "QnchDelRqst", {"xid":12,"quench_id":43})
add("QnchRply","seed §7.4.24", c.frame("QnchRply", c.u32(10)+c.id64(43)), "QnchRply", {"xid":10,"quench_id":43})
ast = c.u32(64)+c.u32(1)+c.u32(1)+c.string("host")   # require(host): func_require_tc = 64, name_tc = 1 (§8.2.3.4)
add("SubAddNotify","seed §7.4.25; SubAST codes of §8.2.3.4 (func_require_tc 64 over name_tc 1)", c.frame("SubAddNotify", c.u32(0)+c.u32(1)+c.id64(43)+c.id64(99)+ast), "SubAddNotify",
    {"secure_quench_ids":[],"insecure_quench_ids":[43],"term_id":99,"sub_expr":[64,[[1,"host"]]]})
ast2 = c.u32(8)+c.u32(2)+c.u32(1)+c.string("x")+c.u32(3)+c.i64(5)  # x == 5L: equals_tc 8, name_tc 1, int64_tc 3
add("SubModNotify","seed §7.4.26; equals_tc 8, name_tc 1, int64_tc 3 (§8.2.3.4)", c.frame("SubModNotify", c.u32(1)+c.id64(43)+c.u32(0)+c.id64(99)+ast2), "SubModNotify",
    {"secure_quench_ids":[43],"insecure_quench_ids":[],"term_id":99,"sub_expr":[8,[[1,"x"],[3,{"int64":5}]]]})
add("SubDelNotify","seed §7.4.27", c.frame("SubDelNotify", c.u32(1)+c.id64(43)+c.id64(99)), "SubDelNotify", {"quench_ids":[43],"term_id":99})
# §8.2.3.2's example: "if an int64 of value 1024L is preceded by its type ... four bytes for the type id of 2 and eight bytes for the value"
add("int64 example","seed §8.2.3.2 INT64 EXAMPLE: 0x02 then the hyper 0x0400", c.notify_emit([("v", c.I64(1024))]), "NotifyEmit",
    {"attributes":[["v",{"int64":1024}]],"deliver_insecure":True,"keys":[]})
# invalid
bad("unknown pkt_id","seed §8.2.3.1 (99 is not in the pkt_id enumeration)", "00000063", 1001, 0, "unknown packet type")
bad("boolean 2","seed §8.2.3.2: boolean's last byte is 0 or 1", body(c.frame("NotifyEmit", c.nvs([("x",1)])+c.u32(2)+c.keys())), 1001, 24, "boolean")
bad("bad UTF-8","seed §8.2.3.2 string is UTF-8; §7.4.2 BAD_UTF8 = 1006", body(c.frame("SubAddRqst", c.u32(5)+c.u32(2)+b"\xff\xfe\0\0"+c.u32(1)+c.keys())), 1006, 12, "invalid UTF-8")
bad("value type 6","seed §8.2.3.2 value_typecode is 1 to 5", body(c.frame("NotifyEmit", c.u32(1)+c.string("x")+c.u32(6)+c.u32(0)+c.u32(1)+c.keys())), 1001, 16, "unknown value type")
bad("truncated","seed §7.3.2: cannot be unmarshalled", body(c.frame("SubRply", c.u32(5)+c.u32(0))), 1001, 8, "packet ends")
bad("trailing bytes","seed §7.4.20 SubRply has exactly xid and id64", body(c.frame("SubRply", c.u32(5)+c.id64(1)+c.u32(0))), 1001, 16, "bytes after")
bad("uint8 300","seed §8.2.3.2: uint8 is 4 bytes whose last byte has the value", body(c.frame("ConnRqst", c.u32(1)+c.u32(300)+c.u32(0)+c.nvs([])+c.keys()+c.keys())), 1001, 8, "uint8")
bad("huge array","seed §8.2.3.3 array count with nothing behind it", body(c.frame("NotifyEmit", c.u32(0x7fffffff))), 1001, 4, "cannot fit")
bad("NUL in string","seed §7.4: string 'no NUL bytes'", body(c.frame("SubAddRqst", c.u32(5)+c.string("a\0b")+c.u32(1)+c.keys())), 1001, 13, "NUL")
with open("tests/protocols/elvin/vectors.json", "w") as out:
    json.dump(V, out, indent=1, ensure_ascii=False)
