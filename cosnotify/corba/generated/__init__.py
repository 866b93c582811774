"""omniidl output for the modules omniORB does not ship (do not edit; see ../stubgen.py).

This directory is on ``sys.path`` once :mod:`cosnotify.corba` is imported, so
the modules here import by their IDL names: ``import CosNotifyCommAck``.
"""
