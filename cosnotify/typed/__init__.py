"""Typed notification channels (Notification 1.1 sections 2.7 and 3.6): docs/typed.md.

``interfaces``: the user IDL a typed channel knows, compiled at run time.
``events``: Table 2-2's translations between typed calls and Any and
Structured events.
"""
