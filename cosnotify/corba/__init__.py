"""What cosnotify takes from omniORBpy: the ORB, the COS stubs and the Ack stubs.

Strategy: omniORBpy (the ``jeteve-omniorb`` wheel) is the only ORB. Importing
this package imports ``omniORB`` first, which puts omniORB's bundled COS stubs
on ``sys.path`` (``import CosNotification`` then gives omniORB's own module,
never a second copy), and then puts :data:`GENERATED` there too, so the two
modules omniORB does not ship, ``CosNotifyCommAck`` and
``CosNotifyChannelAdminAck``, and cosnotify's own ``CosNotifyGrammars``
(docs/grammars/), import by their IDL names as well. Those are
generated from ``idl/`` by the wheel's ``omniidl -bpython`` with
``-Wbextern`` pointing at the bundled modules (``stubgen``); ``make test``
fails when the committed output is stale.

The TypeCode walking the filters and the Spark bridge need, with the
workarounds for the wheel's TypeCode defects, is in :mod:`.descriptors`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import omniORB  # first: it puts omniORB/COS on sys.path

#: Where the omniidl output for the modules omniORB does not ship lives.
GENERATED = Path(__file__).with_name("generated")

if str(GENERATED) not in sys.path:
    sys.path.append(str(GENERATED))

__all__ = ["GENERATED", "omniORB"]
