"""A channel as the Event Heap's tuple space (issue 21, part 3; docs/history.md).

Strategy: the seed's "Event Heap Server Operations" (Event Heap wire
protocol, B. Johanson 2003) on a cosnotify channel, in process
(:class:`TupleSpace`, :class:`Client`) and over CORBA
(``idl/CosNotifyEventHeap.idl``, :mod:`cosnotify.tuplespace.corba`). The
seed's camelCase names map 1:1 onto snake_case ones:

=====================  ===========================
seed                   here
=====================  ===========================
putEvent               put_event
getEvent               get_event
removeEvent            remove_event
waitForEvent           wait_for_event
waitToRemoveEvent      wait_to_remove_event
snoopEvents            snoop_events
getAll                 get_all
registerForEvents      register_for_events
registerForAll         register_for_all
deregister             deregister
deleteEvent            delete_event
clear                  clear
=====================  ===========================

Modules: ``space`` (the operations), ``index`` (the live tuples and their
indexes), ``search`` (finding tuples a slice at a time), ``fields``
(reading events as the EVENTHEAP grammar does), ``templates``, ``waits``,
``clients``, ``registry`` and ``sequencing`` (the seed's EventHeap object,
its connecting and reaping), ``events`` (what a put takes and a client
stamps), ``streams`` (notification streams as subscriptions), ``sizes``
(a tuple's bytes), ``ids``, ``limits``, ``records``; ``corba`` (servants;
imported on its own).
"""

from __future__ import annotations

from cosnotify.tuplespace.clients import Client
from cosnotify.tuplespace.records import ClientInfo, Tuple
from cosnotify.tuplespace.space import TupleSpace
from cosnotify.tuplespace.waits import Cancel

__all__ = ["Cancel", "Client", "ClientInfo", "Tuple", "TupleSpace"]
