"""The interfaces a typed channel knows: user IDL compiled at run time.

Strategy: omniORBpy has no DSI (docs/orb.md): a servant needs its
interface's skeleton, and a typed channel must therefore know ``<I>`` and
``Pull<I>`` before a client names them. :meth:`InterfaceRepository.load`
compiles the user's IDL files with the wheel's ``omniidl``, in a process of
its own, twice:

- with the Python back end (``omniORB.importIDL``, main file only: the COS
  modules it includes are the bundled ones), which makes the stubs and
  skeletons. The generated modules are imported under their IDL module
  names, are private to the server process, and run nothing but what
  omniidl generated from the declarations;
- with cosnotify's own back end (``backend/cosnotify_typed.py``), which
  writes the parameter names and directions the stubs do not keep.

Each interface of the main file is then checked against the typed Event
Service's rules, which section 2.7 of the Notification spec builds on: an
interface ``<I>`` has operations only (no attributes), each with ``in``
parameters, a ``void`` result and no ``context`` clause; ``Pull<I>``, in the same scope, has for
each operation ``op`` of ``<I>`` a ``void pull_op`` and a ``boolean try_op``
with the same parameters as ``out`` (the Notification spec's own Coffee
example names the first one ``op``: both are taken, docs/typed.md).
Interfaces that inherit from an OMG COS interface (a client's
``PushConsumer`` and ``<I>`` in one, say) are client interfaces, not keys,
and are not checked. Any breach, like any IDL error, is an :class:`IDLError`
naming the file and line.

A key (the string an ``obtain_*`` operation takes) names an interface by
repository id or by scoped name, with or without a leading ``::``, or by its
bare name where that is unique: the spec's example passes ``"Coffee"``.
"""

from __future__ import annotations

import importlib.util
import json
import keyword
import os
import re
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
import omniORB
from omniORB import tcInternal

__all__ = ["IDLError", "InterfaceRepository", "Operation", "Parameter", "Source",
           "TypedInterface"]

_BACKEND = Path(__file__).resolve().parent / "backend"
_COS_IDL = Path(__file__).resolve().parents[2] / "idl"
_OMNIIDL = ("import sys; from omniidl.main import main; sys.argv[0] = 'omniidl'; "
            "sys.exit(main())")
_IN, _OUT = 0, 1
_PATH_LOCK = threading.Lock()
#: The top-level IDL modules loaded in this process (reopening one is allowed).
_OURS: set[str] = set()
#: The user IDL files imported for a main file's ``#include``: the module name the
#: generated stubs import (``Shared_idl``) -> (its path, its text, the main file's path).
_INCLUDED: dict[str, tuple[str, str, str]] = {}
_INCLUDE_NAME = str.maketrans(" -.,", "____")  # omniidl's Python back end's file names
#: What a path given to omniidl must not have: omniidl runs its preprocessor through
#: the shell with the path in double quotes, where ``$``, a backquote, a double quote
#: and a backslash still act (and ``!`` in some shells); control characters (a
#: newline) end the command. Anything else stays one word.
_UNSAFE_PATH = re.compile(r'[$`"\\!\x00-\x1f\x7f]')
_OMNIORB_STUBS = Path(omniORB.__file__).resolve().parent


class IDLError(ValueError):
    """IDL that cannot be compiled, or an interface that breaks the typed rules."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None) -> None:
        where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
        super().__init__(where + message)
        self.file = file
        self.line = line
        self.detail = message


@attrs.frozen
class Parameter:
    """An ``in`` parameter of a typed operation: its name and TypeCode."""

    name: str
    typecode: Any


@attrs.frozen
class Operation:
    """An operation of ``<I>``: ``scoped`` is the fully scoped operation name, the
    Interface Repository's absolute name (``::CoffeeModule::Coffee::drinking_coffee``),
    that events carry as ``operation``."""

    name: str
    scoped: str
    parameters: tuple[Parameter, ...]


@attrs.frozen
class TypedInterface:
    """A loaded ``<I>``: its ids, operations, stub and skeleton classes, and ``Pull<I>``."""

    repo_id: str
    scoped_name: str
    operations: dict[str, Operation]
    stub: Any
    skeleton: Any
    pull_repo_id: str | None = None
    pull_stub: Any = None
    pull_skeleton: Any = None
    #: For each operation of ``<I>``, the names of its pull and try operations.
    pull_names: dict[str, tuple[str, str]] = attrs.field(factory=dict)

    def by_scoped_name(self, scoped: str) -> Operation | None:
        """The operation an event's ``operation`` names (with or without ``::``): by the
        name it is declared under (an inherited one's is its base's), or under this
        interface's name (how cosnotify wrote inherited operations before review 107,
        and how a supplier may name the operation it called through ``<I>``)."""
        name = scoped.removeprefix("::")
        prefix, _, op = name.rpartition("::")
        found = self.operations.get(op)
        if found is None:
            return None
        if prefix == self.scoped_name or found.scoped.removeprefix("::") == name:
            return found
        return None


@attrs.frozen
class Source:
    """A loaded IDL file as a store keeps it (docs/typed.md, "Persistent typed
    channels"): its absolute path and text, the include directories it was compiled
    with, and the user files it includes, as (absolute path, text)."""

    path: str
    text: str
    include: tuple[str, ...] = ()
    included: tuple[tuple[str, str], ...] = ()

    def as_record(self) -> dict[str, Any]:
        return {"path": self.path, "text": self.text, "include": list(self.include),
                "included": [list(item) for item in self.included]}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Source:
        """A kept file; ``IDLError`` for a path that is not absolute or not safe to
        give omniidl (a store's record is data, never a command)."""
        source = cls(str(record["path"]), str(record["text"]),
                     tuple(str(d) for d in record["include"]),
                     tuple((str(p), str(t)) for p, t in record["included"]))
        for path in (source.path, *source.include, *(p for p, _ in source.included)):
            _check_path(path, source.path)
            if not os.path.isabs(path) or os.path.normpath(path) != path:
                raise IDLError(f"a kept IDL path is not absolute and normal: {path!r}",
                               source.path)
        return source


def _check_path(path: str, file: str | None = None) -> str:
    """``path`` if omniidl may be given it (``_UNSAFE_PATH``); else IDLError."""
    if not path or _UNSAFE_PATH.search(path):
        raise IDLError(f"the path {path!r} has a character omniidl cannot be given safely "
                       "(it runs its preprocessor through the shell): no $, `, \", \\, ! "
                       "or control characters", file)
    return path


def _latin1(text: str) -> bytes:
    """A kept file's text as the bytes it was read from: IDL source is ISO Latin-1
    (CORBA 3.0, 7.2). A text kept before review 144 was read as UTF-8 and may hold a
    character Latin-1 lacks: it is written back as UTF-8, as it was read."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def _omniidl(arguments: Sequence[str]) -> str:
    """Run the wheel's omniidl; its standard output, or IDLError with its message."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run([sys.executable, "-c", _OMNIIDL, *arguments], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise _idl_error(done.stderr)
    return done.stdout


def _idl_error(stderr: str) -> IDLError:
    """omniidl's first message (``file:line: message``) as an IDLError."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1].strip().isascii() and parts[1].strip().isdigit():
            return IDLError(parts[2].strip(), parts[0], int(parts[1]))
    return IDLError(" ".join(lines) or "omniidl failed")


def _import_stubs(file: str, arguments: list[str],
                  included: Sequence[tuple[str, str, str]] = (), origin: str = "") -> None:
    """omniORB.importIDL with the wheel's omniidl first on PATH (Debian's has no Python
    back end): the main file's modules only, the COS ones stay the bundled ones.

    ``included`` are the user files the main file includes, (path, original path,
    text), each after the files it includes: each is imported first, on its own, and
    the module the generated stubs import for it (``import Shared_idl``) is
    registered, empty (the types are omniORB's, by repository id). A file imported
    before is not again; another text under that module name is an IDLError.
    ``origin``: the main file's original path (a kept file is compiled elsewhere)."""
    with _PATH_LOCK:
        saved = os.environ.get("PATH", "")
        os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{saved}"
        try:
            fresh = []
            for path, original, text in included:
                name = _include_module(path)
                known = _INCLUDED.get(name)
                if known is None:
                    fresh.append(path)
                elif known[1] != text:
                    raise IDLError(
                        f"{original} is not the {Path(path).name} loaded before (from "
                        f"{known[0]}, for {known[2]}): one process holds one file of a "
                        f"name; if it changed, give {known[2]} again too (with --idl), "
                        "else give the two files names of their own", origin or file)
            for path in fresh:  # the stubs of one may import another's module
                sys.modules.setdefault(_include_module(path), types.ModuleType(
                    _include_module(path)))
            for path, original, text in included:
                if path in fresh:
                    omniORB.importIDL(path, arguments, inline=False)
                    _INCLUDED[_include_module(path)] = (original, text, origin or file)
            omniORB.importIDL(file, arguments, inline=False)
        except ImportError as exc:
            raise _idl_error(str(exc)) from None
        finally:
            os.environ["PATH"] = saved


def _include_module(path: str) -> str:
    return Path(path).name.translate(_INCLUDE_NAME)


def _bundled(spelled: str) -> bool:
    """Is an included file one whose stubs come with omniORBpy (the COS IDL on
    cosnotify's include path), rather than a user file to import? Its module
    (``CosNotification_idl``) is one of omniORBpy's, wherever the process runs."""
    name = _include_module(spelled)
    if name in _INCLUDED or not (_COS_IDL / spelled).is_file():
        return False
    found = importlib.util.find_spec(name)
    origin = found.origin if found is not None else None
    return origin is not None and Path(origin).resolve().is_relative_to(_OMNIORB_STUBS)


def _locate(spelled: list[str], main: str, include: list[str]) -> list[str]:
    """The files omniidl names as their ``#include`` spells them, found as the
    preprocessor finds them: beside the file including them (the main file, or one
    found already), then in the include directories."""
    found: dict[str, str] = {}
    while True:
        progress = False
        for name in spelled:
            if name in found:
                continue
            if os.path.isabs(name):
                found[name] = name
                progress = True
                continue
            places = [str(Path(main).parent), *(str(Path(f).parent) for f in found.values()),
                      *include]
            for place in places:
                candidate = os.path.normpath(os.path.join(place, name))
                if os.path.isfile(candidate):
                    found[name] = candidate
                    progress = True
                    break
        if len(found) == len(spelled) or not progress:
            break
    missing = [name for name in spelled if name not in found]
    if missing:
        raise IDLError(f"cannot find the included file {missing[0]}", main)
    return [found[name] for name in spelled]


def _resolve(scoped: Sequence[str], skeleton: bool = False) -> Any:
    """The stub (or skeleton) class of an interface; omniORBpy puts those declared at
    global scope, like the spec's Coffee, in the module ``_GlobalIDL``."""
    path = list(scoped) if len(scoped) > 1 else ["_GlobalIDL", *scoped]
    value: Any = sys.modules[path[0] + ("__POA" if skeleton else "")]
    for part in path[1:]:
        value = getattr(value, part)
    return value


def _check_safe(found: dict[str, Any], imported: set[str]) -> None:
    """Refuse what would make the generated stubs run code or replace a Python module.
    ``imported``: the included files (as spelled) whose stubs are imported too."""
    for item in found["unsafe"]:
        raise IDLError(f"repository id {item['repo_id']!r} has quotes, backslashes or "
                       "non-printable characters, which omniidl's Python stubs cannot hold",
                       item["file"], item["line"])
    for item in found["top"]:
        name = item["name"]
        if not (item["main"] or item["file"] in imported):
            continue  # a bundled COS file: its modules are the bundled ones
        if not item["module"] or name in _OURS:
            continue  # global declarations go to _GlobalIDL; a module reopened is ours
        clash = name in sys.modules or importlib.util.find_spec(name) is not None \
            or importlib.util.find_spec(name + "__POA") is not None
        if clash or name in sys.stdlib_module_names or keyword.iskeyword(name):
            raise IDLError(f"module {name} would replace the Python module {name}: give the "
                           "IDL module another name", item["file"], item["line"])


class InterfaceRepository:
    """The typed interfaces a service knows (module docstring)."""

    def __init__(self) -> None:
        self._by_id: dict[str, TypedInterface] = {}
        self._lock = threading.Lock()
        #: The IDL files loaded (absolute paths), in order, and the include directories.
        self.files: list[str] = []
        self.include: list[str] = []
        #: What each file was loaded from, by absolute path (a store keeps these).
        self.sources: dict[str, Source] = {}

    def load(self, files: Iterable[str | os.PathLike[str]],
             include: Iterable[str | os.PathLike[str]] = ()) -> list[TypedInterface]:
        """Compile ``files`` and learn their interfaces; the ``<I>`` ones found."""
        include_dirs = [_check_path(os.path.abspath(d)) for d in include]
        learned: list[TypedInterface] = []
        for path in files:
            file = _check_path(os.path.abspath(path))
            if not Path(file).is_file():
                raise IDLError("no such IDL file", str(path))
            learned += self._load_one(file, Path(file).read_text(encoding="latin-1"),
                                      include_dirs)
        self.include = [*self.include, *(d for d in include_dirs if d not in self.include)]
        return learned

    def _load_one(self, file: str, text: str, include_dirs: list[str],
                  root: str = "") -> list[TypedInterface]:
        """Load ``file``; ``root``: where a kept file was written (load_source), whose
        paths are recorded without it. Every path omniidl gets is checked first."""
        for path in (file, *include_dirs, str(_COS_IDL), str(_BACKEND)):
            _check_path(path, file)
        arguments = [f"-I{d}" for d in [*include_dirs, str(_COS_IDL)]]
        found = json.loads(_omniidl(["-p", str(_BACKEND), "-bcosnotify_typed",
                                     *arguments, file]))
        spelled = [name for name in found["included"] if not _bundled(name)]
        located = [_check_path(path, file) for path in _locate(spelled, file, include_dirs)]
        included = [(path, path.removeprefix(root), Path(path).read_text(encoding="latin-1"))
                    for path in located]
        described = found["interfaces"]
        _check_safe(found, set(spelled))  # the rules first: nothing imported if wrong
        self._learn(described, build=False)
        original = file.removeprefix(root)
        _import_stubs(file, arguments, included, original)
        with _PATH_LOCK:
            _OURS.update(item["name"] for item in found["top"]
                         if item["main"] or item["file"] in spelled)
        learned = self._learn(described, build=True)
        self.files.append(original)
        self.sources[original] = Source(
            original, text, tuple(d.removeprefix(root) for d in include_dirs),
            tuple((kept, content) for _, kept, content in included))
        return learned

    def load_source(self, source: Source) -> list[TypedInterface]:
        """Load a file from what a store kept (``Source``), not from the disk: its
        text, and the files it includes, are written where they were, under a private
        directory, and compiled from there; errors name the original paths."""
        with tempfile.TemporaryDirectory(prefix="cosnotify-idl-") as root:
            def moved(path: str) -> str:
                return root + path  # kept paths are absolute and normal (Source)

            try:
                for path, text in ((source.path, source.text), *source.included):
                    Path(moved(path)).parent.mkdir(parents=True, exist_ok=True)
                    Path(moved(path)).write_bytes(_latin1(text))
                for directory in source.include:
                    Path(moved(directory)).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise IDLError(f"a kept IDL file cannot be written back: {exc.strerror}",
                               source.path) from None
            try:
                return self._load_one(moved(source.path), source.text,
                                      [moved(d) for d in source.include], root)
            except IDLError as exc:
                if "cannot be given safely" in exc.detail:  # the root may be the cause
                    raise
                raise IDLError(exc.detail.replace(root, ""),
                               exc.file.replace(root, "") if exc.file else source.path,
                               exc.line) from None

    def _learn(self, described: list[dict[str, Any]], build: bool) -> list[TypedInterface]:
        """Check the interfaces of one file, and with ``build`` make them (stubs loaded)."""
        by_scope = {"::".join(d["scoped_name"]): d for d in described}
        pulls = set()
        for name, item in by_scope.items():
            prefix, _, last = name.rpartition("::")
            target = f"{prefix}::{last[4:]}" if prefix else last[4:]
            if last.startswith("Pull") and target in by_scope:
                pulls.add(name)
        found = []
        for name, item in by_scope.items():
            if name in pulls or item["abstract"] or item["local"] \
                    or any(b.startswith("IDL:omg.org/Cos") for b in item["bases"]):
                continue
            interface = self._interface(item, build)
            prefix, _, last = name.rpartition("::")
            pull_name = f"{prefix}::Pull{last}" if prefix else f"Pull{last}"
            if pull_name in by_scope:
                interface = self._with_pull(interface, by_scope[pull_name], item, build)
            found.append(interface)
        if not build:
            return []
        with self._lock:
            for interface in found:
                self._by_id[interface.repo_id] = interface
        return found

    def _interface(self, item: dict[str, Any], build: bool) -> TypedInterface:
        scoped = "::".join(item["scoped_name"])
        if item["attributes"]:
            raise IDLError(f"typed interface {scoped} has attributes "
                           f"({', '.join(item['attributes'])}): a typed event interface has "
                           "operations only", item["file"], item["line"])
        stub = _resolve(item["scoped_name"]) if build else None
        operations = {}
        for op in item["operations"]:
            if op["returns"] != "void":
                raise IDLError(f"{scoped}::{op['name']} returns a value: a typed event "
                               "operation returns void", item["file"], op["line"])
            if any(p["direction"] != _IN for p in op["params"]):
                raise IDLError(f"{scoped}::{op['name']} has out or inout parameters: a "
                               "typed event operation has in parameters only",
                               item["file"], op["line"])
            if op.get("contexts"):
                raise IDLError(f"{scoped}::{op['name']} has a context clause: a typed "
                               "event's data are its parameters (Table 2-2 has no place "
                               "for a context)", item["file"], op["line"])
            python_name = "_" + op["name"] if keyword.iskeyword(op["name"]) else op["name"]
            descriptors = getattr(stub, f"_d_{python_name}")[0] if build \
                else [None] * len(op["params"])
            parameters = tuple(Parameter(p["name"], tcInternal.createTypeCode(d) if build
                                         else None)
                               for p, d in zip(op["params"], descriptors, strict=True))
            # The declaring interface's name: an inherited operation is the base's,
            # as its Interface Repository absolute name is (review 107).
            declared = "::".join(op["scoped_name"]) if "scoped_name" in op \
                else f"{scoped}::{op['name']}"
            operations[op["name"]] = Operation(op["name"], f"::{declared}", parameters)
        return TypedInterface(item["repo_id"], scoped, operations, stub,
                              _resolve(item["scoped_name"], skeleton=True) if build else None)

    def _with_pull(self, interface: TypedInterface, pull: dict[str, Any],
                   item: dict[str, Any], build: bool) -> TypedInterface:
        """``interface`` with its ``Pull<I>``, checked operation by operation."""
        ops = {op["name"]: op for op in pull["operations"]}
        scoped = "::".join(pull["scoped_name"])
        names = {}
        for op in item["operations"]:
            params = [p["name"] for p in op["params"]]
            types = [p["type"] for p in op["params"]]
            pulled = next((n for n in (f"pull_{op['name']}", op["name"]) if n in ops), None)
            tried = f"try_{op['name']}"
            for name, returns in ((pulled, "void"), (tried, "boolean")):
                found = ops.get(name) if name else None
                if found is None:
                    raise IDLError(f"{scoped} has no {returns} "
                                   f"{name or 'pull_' + op['name']}(...) for "
                                   f"{interface.scoped_name}::{op['name']}",
                                   pull["file"], pull["line"])
                if found["returns"] != returns \
                        or [p["name"] for p in found["params"]] != params \
                        or [p["type"] for p in found["params"]] != types \
                        or any(p["direction"] != _OUT for p in found["params"]):
                    raise IDLError(f"{scoped}::{name} must be {returns} {name}"
                                   f"({', '.join('out ' + p for p in params)}), with the "
                                   f"types of {interface.scoped_name}::{op['name']}",
                                   pull["file"], found["line"])
            assert pulled is not None
            names[op["name"]] = (pulled, tried)
        if not build:
            return interface
        return attrs.evolve(interface, pull_repo_id=pull["repo_id"],
                            pull_stub=_resolve(pull["scoped_name"]),
                            pull_skeleton=_resolve(pull["scoped_name"], skeleton=True),
                            pull_names=names)

    def lookup(self, key: str) -> TypedInterface:
        """The interface ``key`` names (module docstring); KeyError if none (or several)."""
        with self._lock:
            if key in self._by_id:
                return self._by_id[key]
            name = key.removeprefix("::")
            matches = [i for i in self._by_id.values()
                       if i.scoped_name == name or i.scoped_name.rpartition("::")[2] == name]
        exact = [i for i in matches if i.scoped_name == name]
        if len(exact) == 1:
            return exact[0]
        if len(matches) == 1:
            return matches[0]
        raise KeyError(key)

    def interfaces(self) -> list[TypedInterface]:
        with self._lock:
            return list(self._by_id.values())
