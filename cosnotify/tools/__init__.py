"""The operator's tools: ``cosnotify ls``, ``tail``, ``publish`` and ``top``.

Strategy: each tool is one module with ``add_parser(commands)`` and
``run(args) -> int``; ``cosnotify/__main__.py`` only wires them in.
``connect`` is the one place a tool meets the ORB: it turns a URL into the
service's factory, a channel id into a channel, and every CORBA failure into
a :class:`~cosnotify.tools.connect.ToolError` -- one line on stderr and exit
status 2 (the command line is wrong) or 1 (it could not be done), never a
traceback (docs/operations.md, "Exit status").
"""
