"""An omniORBpy client process that pushes Anys of a user IDL to a consumer.

Usage: python wire_client.py IOR IDL_FILE BUILDER_FILE

It compiles IDL_FILE with the wheel's omniidl, imports the modules the builder
names in ``MODULES``, calls ``builder.cases(CORBA, modules)`` for a list of
``(name, CORBA.Any)`` and pushes each as one StructuredEvent of type
``wire/case`` whose only filterable property is ``name = any``; then one event
of type ``wire/done``. The consumer is a StructuredPushConsumer (its process
has never seen the IDL).
"""

import importlib.util
import os
import sys
import tempfile

from omniORB import CORBA

import CosNotification
import CosNotifyComm

from cosnotify.corba.stubgen import omniidl


def main(ior: str, idl_file: str, builder_file: str) -> None:
    with tempfile.TemporaryDirectory() as out:
        omniidl(["-bpython", f"-I{os.path.dirname(idl_file)}", "-C", out, idl_file])
        sys.path.insert(0, out)
        spec = importlib.util.spec_from_file_location("builder", builder_file)
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
        modules = {name: importlib.import_module(name) for name in builder.MODULES}
        orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
        consumer = orb.string_to_object(ior)._narrow(CosNotifyComm.StructuredPushConsumer)
        for name, value in builder.cases(CORBA, modules):
            consumer.push_structured_event(event("case", [CosNotification.Property(name, value)]))
        consumer.push_structured_event(event("done", []))
        orb.destroy()


def event(type_name: str, filterable: list) -> CosNotification.StructuredEvent:
    header = CosNotification.EventHeader(
        CosNotification.FixedEventHeader(CosNotification.EventType("wire", type_name), ""), [])
    return CosNotification.StructuredEvent(header, filterable, CORBA.Any(CORBA.TC_null, None))


if __name__ == "__main__":
    main(*sys.argv[1:4])
