"""From a URL to the service: the ORB, the factory, a channel, and errors as exit codes.

Strategy: a tool is an ordinary omniORBpy client. It uses the process's ORB
if one exists (a test, an embedding program) and otherwise makes one with
timeouts, so a URL that does not answer fails after ``--timeout`` seconds
instead of hanging. Every CORBA exception a tool can meet while it talks to
the service is turned here into a :class:`ToolError` that says in words
what went wrong; :func:`run_tool` prints it as one line on stderr, and so
an OSError from writing the output (a full disk; a closed stdout, which
Python makes None and :func:`run_tool` replaces with a stream that fails
to write).

A URL is any string omniORB's ``string_to_object`` takes (``IOR:...``,
``corbaloc:...``, ``corbaname:...``), the path of a file holding one (what
``cosnotify serve --ior-file`` writes), or ``HOST:PORT`` for
``corbaname::HOST:PORT#NotifyEventChannelFactory`` -- the name ``cosnotify
serve`` binds by default in its embedded naming service.
"""

from __future__ import annotations

import argparse
import codecs
import errno
import io
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyMonitor

__all__ = ["DEFAULT_NAME", "FAILURE", "USAGE", "ToolError", "channel", "channel_id_arg",
           "check_latin1", "count_arg", "drop_stdout", "factory", "monitor", "orb", "run_tool", "sigterm_interrupts",
           "timeout_arg", "url_of"]

#: Exit status when the command line is wrong (argparse's, too).
USAGE = 2
#: Exit status when the command line is right but the work could not be done.
FAILURE = 1
#: The name ``cosnotify serve`` binds its factory under by default.
DEFAULT_NAME = "NotifyEventChannelFactory"
#: Largest GIOP message a tool accepts: a snapshot of a big service is one reply.
MAX_MESSAGE_SIZE = 64 * 1024 * 1024

_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


class ToolError(Exception):
    """What a tool prints as its one line on stderr, and its exit status."""

    def __init__(self, message: str, status: int = FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def orb(timeout: float = 10.0) -> Any:
    """The process's ORB, made with ``timeout`` (seconds) for connecting and calling
    if there is none yet."""
    existing = omniORB.orb
    if existing is not None:
        return existing
    millis = str(max(1, int(timeout * 1000)))
    return CORBA.ORB_init(["-ORBtraceLevel", "0",  # failures are said once, by the tool
                           "-ORBclientCallTimeOutPeriod", millis,
                           "-ORBclientConnectTimeOutPeriod", millis,
                           "-ORBgiopMaxMsgSize", str(MAX_MESSAGE_SIZE),
                           "-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)


def url_of(text: str) -> str:
    """``text`` as a string omniORB resolves (see the module docstring)."""
    text = text.strip()
    if not text:
        raise ToolError("empty URL", USAGE)
    if text.startswith(("IOR:", "corbaloc:", "corbaname:")):
        return text
    match = _HOST_PORT.match(text)
    if match is not None and 0 < int(match.group(2)) <= 65535:
        return f"corbaname::{match.group(1)}:{match.group(2)}#{DEFAULT_NAME}"
    path = Path(text)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL
        is_file = False
    if is_file:
        try:
            content = path.read_text(encoding="ascii", errors="strict").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(f"cannot read {text}: {exc}", USAGE) from None
        if content.startswith(("IOR:", "corbaloc:", "corbaname:")):
            return content
        raise ToolError(f"{text} holds no IOR or CORBA URL", USAGE)
    raise ToolError(f"not a CORBA URL, HOST:PORT or IOR file: {text!r}", USAGE)


def factory(url: str, the_orb: Any) -> Any:
    """The ``CosNotifyChannelAdmin::EventChannelFactory`` at ``url``."""
    resolved = url_of(url)
    try:
        obj = the_orb.string_to_object(resolved)
    except CORBA.BAD_PARAM as exc:
        if resolved.startswith("corbaname:") and exc.minor == omniORB.BAD_PARAM_BadURIOther:
            name = resolved.partition("#")[2] or "(no name)"
            raise ToolError(f"{url}: nothing is bound as {name} in that naming service",
                            USAGE) from None
        raise ToolError(f"malformed URL {url!r}: {describe(exc)}", USAGE) from None
    except CORBA.MARSHAL as exc:
        raise ToolError(f"malformed IOR in {url!r}: {describe(exc)}", USAGE) from None
    except CORBA.SystemException as exc:
        raise ToolError(f"cannot reach {url}: {describe(exc)}") from None
    if obj is None:
        raise ToolError(f"{url} is a nil reference")
    try:
        found = obj._narrow(CA.EventChannelFactory)
    except CORBA.OBJECT_NOT_EXIST:
        raise ToolError(f"no object at {url} (OBJECT_NOT_EXIST)") from None
    except CORBA.SystemException as exc:
        raise ToolError(f"cannot reach {url}: {describe(exc)}") from None
    if found is None:
        raise ToolError(f"{url} is not a notification EventChannelFactory")
    return found


def monitor(the_factory: Any, url: str) -> Any:
    """``the_factory`` as cosnotify's ``CosNotifyMonitor::EventChannelFactory``."""
    try:
        found = the_factory._narrow(CosNotifyMonitor.EventChannelFactory)
    except CORBA.SystemException as exc:
        raise ToolError(f"cannot reach {url}: {describe(exc)}") from None
    if found is None:
        raise ToolError(f"{url} serves no CosNotifyMonitor snapshot (not cosnotify serve?)")
    return found


def channel(the_factory: Any, channel_id: int | None) -> tuple[int, Any]:
    """``(id, channel)``: channel ``channel_id``, or the lowest-numbered one when None."""
    try:
        if channel_id is None:
            ids = sorted(the_factory.get_all_channels())
            if not ids:
                raise ToolError("the service has no channel yet")
            channel_id = ids[0]
        return channel_id, the_factory.get_event_channel(channel_id)
    except CA.ChannelNotFound:
        raise ToolError(f"no channel {channel_id}", USAGE) from None
    except CORBA.SystemException as exc:
        raise ToolError(f"lost the service: {describe(exc)}") from None


def describe(exc: CORBA.SystemException) -> str:
    """``TRANSIENT (connect failed)`` and the like: the exception and omniORB's reason."""
    name = type(exc).__name__
    reason = omniORB.minorCodeToString(exc) if hasattr(omniORB, "minorCodeToString") else ""
    if not reason:
        return name
    return f"{name} ({reason})"


def _json_escapes(error: UnicodeError) -> tuple[str, int]:
    """A codec error handler: what the encoding cannot hold, as ``\\uXXXX`` escapes
    (a UTF-16 surrogate pair past U+FFFF), as :func:`printable` writes them."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return (printable_escape(error.object[error.start:error.end]), error.end)


def printable_escape(text: str) -> str:
    """Every character of ``text`` as a JSON ``\\uXXXX`` escape."""
    out = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:  # JSON escapes the UTF-16 surrogate pair
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


_JSON_ESCAPES = "cosnotify-json-escapes"
codecs.register_error(_JSON_ESCAPES, _json_escapes)


def printable(text: str) -> str:
    """``text`` with every character ``str.isprintable`` refuses (C0 and C1 controls,
    DEL, line separators...) as a JSON ``\\uXXXX`` escape: what a tool prints comes
    from the network, and a supplier's escape sequences must not reach the operator's
    terminal. Inside a JSON string the escape means the same character, so a JSON line
    stays the same JSON."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else printable_escape(ch) for ch in text)


def check_latin1(what: str, text: str) -> None:
    """A CORBA string must be ISO-8859-1 (omniORB's native char code set): say so
    rather than fail with DATA_CONVERSION once sent."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError as exc:
        char = text[exc.start]
        shown = json.dumps(char, ensure_ascii=not char.isprintable())
        raise ToolError(f"the {what} holds {shown} (U+{ord(char):04X}), which is not "
                                f"in ISO-8859-1, the character set of a CORBA string",
                                USAGE) from None


def channel_id_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a channel id, got {text!r}") from None
    if not 0 <= value <= 0x7FFFFFFF:
        raise argparse.ArgumentTypeError(f"channel id out of range: {text!r}")
    return value


def timeout_arg(text: str) -> float:
    """Seconds in (0, 3600]: ``--timeout``, ``top --interval``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be in (0, 3600] seconds, not {text!r}")
    return value


def count_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text!r}")
    return value


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt (as Ctrl-C does) while a tool runs, so the
    admin it made is destroyed (and top's screen restored) either way."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class _ClosedOutput(io.TextIOBase):
    """What ``sys.stdout`` is while the process's standard output is closed (Python
    makes it None): writing to it fails as writing to a bad descriptor does."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def isatty(self) -> bool:
        return False


def drop_stdout() -> None:
    """Point stdout at /dev/null, so that the flush at exit cannot fail again (a full
    disk) or complain (a closed pipe)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # closed already: nothing to flush
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def run_tool(name: str, body: Callable[[], int]) -> int:
    """Run ``body``; a ToolError, an unexpected CORBA failure or output that cannot be
    written (a full disk, a closed stdout) becomes one stderr line.
    Text the output's encoding cannot hold (a supplier's "café" on an ASCII or Latin-1
    terminal) is printed as JSON ``\\uXXXX`` escapes (:func:`_json_escapes`), not a
    UnicodeEncodeError: inside a JSON line's strings (the only place such text can be
    in one) they mean the same characters, so ``--json`` output stays JSON."""
    if sys.stderr is None:  # closed: errors are lost, the exit status still tells
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the process's, to its end)
    if sys.stdout is None:  # closed: a tool that writes says so (publish does not)
        sys.stdout = _ClosedOutput()
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # a TextIOWrapper's
        if reconfigure is not None:
            reconfigure(errors=_JSON_ESCAPES)
    try:
        return body()
    except ToolError as exc:
        print(f"cosnotify {name}: {exc.message}", file=sys.stderr)
        return exc.status
    except CORBA.SystemException as exc:
        print(f"cosnotify {name}: lost the service: {describe(exc)}", file=sys.stderr)
        return FAILURE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        drop_stdout()
        return FAILURE
    except OSError as exc:  # the tools read their input through ToolErrors: the output
        drop_stdout()
        print(f"cosnotify {name}: cannot write the output: {exc.strerror or exc}",
              file=sys.stderr)
        return FAILURE
