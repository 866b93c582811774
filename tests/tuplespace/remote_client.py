"""A client process for the tuple space over IIOP (tests/tuplespace/test_corba.py).

Usage: python remote_client.py FACTORY_IOR

Reads one JSON command a line on stdin and runs each in a thread of its own
(so waits can overlap), writing one JSON answer a line on stdout, tagged as
the command was. Commands name the object to call (``on``: a handle made by
"space" or "connect"), the operation and its arguments; templates are
``{"text": ...}`` or ``{"value": [[name, type, mode, value], ...]}``; events
``{"type": ..., "fields": {name: [kind, value]}}``. A CORBA exception is
answered as ``{"error": its repository name, "reason": ..., "limit": ...}``.
The process hosts a StructuredPushConsumer for notification streams. It
publishes a loopback endpoint only.
"""

import importlib
import json
import sys
import threading

import omniORB
from omniORB import CORBA

import CosNotification as N
import CosNotifyComm__POA

import cosnotify.corba  # noqa: F401 - the generated stubs on sys.path, then:

EH = importlib.import_module("CosNotifyEventHeap")
G = importlib.import_module("CosNotifyGrammars")

KINDS = {"long": CORBA.TC_long, "string": CORBA.TC_string, "double": CORBA.TC_double,
         "boolean": CORBA.TC_boolean, "longlong": CORBA.TC_longlong}
MODES = {"ACTUAL": G.ACTUAL, "FORMAL": G.FORMAL, "VIRTUAL": G.VIRTUAL}

out_lock = threading.Lock()
handles = {}
pushed = []
pushed_cond = threading.Condition()


def say(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    def push_structured_event(self, event):
        with pushed_cond:
            pushed.append(event.header.fixed_header.event_type.type_name)
            pushed_cond.notify_all()

    def offer_change(self, added, removed):
        pass

    def disconnect_structured_push_consumer(self):
        pass


def event_of(spec):
    fields = [N.Property(name, CORBA.Any(KINDS[kind], value))
              for name, (kind, value) in spec.get("fields", {}).items()]
    header = []
    if "ttl_ms" in spec:
        import TimeBase
        header.append(N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT,
                                                      spec["ttl_ms"] * 10_000)))
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("EH", spec["type"]), ""), header),
        fields, CORBA.Any(CORBA.TC_null, None))


def templates_of(specs):
    made = []
    for spec in specs:
        if "text" in spec:
            made.append(EH.TemplateSpec(text=spec["text"]))
        else:
            made.append(EH.TemplateSpec(value=[
                G.TemplateField(name, ftype, MODES[mode],
                                CORBA.Any(KINDS[kind], value) if kind else
                                CORBA.Any(CORBA.TC_null, None))
                for name, ftype, mode, kind, value in spec["value"]]))
    return made


def tuple_of(t):
    ev = t.event
    return {"id": t.id, "type": ev.header.fixed_header.event_type.type_name,
            "fields": {p.name: p.value.value() for p in ev.filterable_data
                       if isinstance(p.value.value(), (int, float, str, bool))}}


def run(cmd, orb, factory, consumer_ref):
    op, target = cmd["op"], handles.get(cmd.get("on"))
    if "call_timeout_ms" in cmd:
        target = orb.string_to_object(orb.object_to_string(target))._narrow(type(target))
        omniORB.setClientCallTimeout(target, cmd["call_timeout_ms"])
    args = cmd.get("args", {})
    if op == "space":
        handles[cmd["as"]] = factory.get_tuple_space(args["channel"])
        return None
    if op == "connect":
        info = EH.ClientInfo(args["source"], args.get("application", ""), "", "", "")
        handles[cmd["as"]] = target.connect(info)
        return None
    if op == "put":
        return target.put_event(event_of(args["event"]))
    if op in ("get_event", "remove_event"):
        return [tuple_of(t) for t in getattr(target, op)(templates_of(args["templates"]))]
    if op in ("wait_for_event", "wait_to_remove_event"):
        return [tuple_of(t) for t in getattr(target, op)(templates_of(args["templates"]),
                                                        args["timeout_ms"])]
    if op == "snoop_events":
        return [tuple_of(t) for t in target.snoop_events(templates_of(args["templates"]),
                                                         args.get("max_results", 0))]
    if op == "get_all":
        return [tuple_of(t) for t in target.get_all(args.get("max_results", 0))]
    if op == "delete_event":
        return target.delete_event(args["id"])
    if op == "clear":
        target.clear()
        return None
    if op == "register_for_events":
        return target.register_for_events(templates_of(args["templates"]), consumer_ref)
    if op == "register_for_all":
        return target.register_for_all(consumer_ref)
    if op == "deregister":
        return target.deregister(args["stream"])
    if op == "pushed":
        with pushed_cond:
            pushed_cond.wait_for(lambda: len(pushed) >= args["count"], args["timeout"])
            return list(pushed)
    if op in ("channel_id", "live_count", "session_id", "info"):
        value = getattr(target, f"_get_{op}")()
        return value.source if op == "info" else value
    if op == "disconnect":
        target.disconnect()
        return None
    raise ValueError(f"unknown op {op}")


def answer(cmd, orb, factory, consumer_ref):
    try:
        say({"tag": cmd["tag"], "result": run(cmd, orb, factory, consumer_ref)})
    except CORBA.Exception as exc:
        name = type(exc)._NP_RepositoryId
        say({"tag": cmd["tag"], "error": name, "reason": getattr(exc, "reason", None),
             "limit": getattr(exc, "limit", None)})
    except Exception as exc:  # noqa: BLE001 - reported to the test
        say({"tag": cmd["tag"], "error": "python", "reason": repr(exc)})


def main(ior):
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    consumer = Consumer()
    poa.activate_object(consumer)
    consumer_ref = poa.servant_to_reference(consumer)
    factory = orb.string_to_object(ior)._narrow(EH.TupleSpaceFactory)
    say({"tag": "ready"})
    for line in sys.stdin:
        cmd = json.loads(line)
        threading.Thread(target=answer, args=(cmd, orb, factory, consumer_ref),
                         daemon=True).start()
    orb.shutdown(False)


if __name__ == "__main__":
    main(sys.argv[1])
