"""Semantic analysis: from the syntax tree to the checked `model`.

Strategy: one pass over the tree in source order, which IDL makes possible
(everything is declared before use, forward declarations aside). The pass
keeps the current scope and a stack of repository-id prefixes, and before it
declares anything it replays the preprocessor's events up to that point in
the token stream (`_sync`), so ``#pragma prefix``, ``#pragma ID``,
``#pragma version`` and the file boundaries of ``#include`` take effect
exactly where they appear. The prefix stack follows CORBA 2.6 section 10.7.5
as omniidl implements it: entering a scope pushes ``prefix/Name``, a pragma
replaces the top entry, an included file starts from an empty prefix, and
leaving a scope or file restores what was there before.

Checks made here, each raising `IDLError` at the offending text: redefinition
in a scope (case-insensitively), a name equal to its enclosing scope's name,
unknown names, ambiguous inherited names, non-types used as types, incomplete
(forward-declared) structs and unions outside sequences, constants out of
range or of the wrong kind (`consteval`), union discriminators, duplicate
labels and defaults, bad inheritance (non-interface, undefined, repeated,
conflicting operations), and oneway operations with results, out parameters
or exceptions.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from typing import TypeVar

from cosnotify.idl import ast, consteval, interfaces, model, unions
from cosnotify.idl.errors import IDLError, Location
from cosnotify.idl.preprocessor import (
    Event,
    FileEnter,
    FileExit,
    PragmaID,
    PragmaPrefix,
    PragmaVersion,
    Preprocessed,
)  # fmt: skip

_D = TypeVar("_D", bound=model.Decl)
#: Declarations whose repository id is not theirs alone (or not generated).
_NO_OWN_ID = (model.Enumerator, model.Forward, model.Operation, model.Attribute)
_ID_RE = re.compile(r"IDL:[^:\s]+:\d+\.\d+\Z|(RMI|DCE|LOCAL):\S+\Z")


def analyze(pre: Preprocessed, spec: ast.Specification) -> model.Specification:
    """Check ``spec`` (parsed from ``pre``) and build its model."""
    return Analyzer(pre).run(spec)


class Analyzer:
    """The semantic pass; see the module docstring."""

    def __init__(self, pre: Preprocessed) -> None:
        start = Location(pre.main_file, 1, 1)
        self.root = model.Module("", start, None)
        corba = model.Module("CORBA", start, self.root, builtin=True)
        corba.entries["typecode"] = model.Builtin("TypeCode", start, corba)
        self.root.entries["corba"] = corba
        self.scope: model.Scope = self.root
        self.events: collections.deque[Event] = collections.deque(pre.events)
        self.prefixes: list[str] = [""]
        self.files = [pre.main_file]
        self.forwards: list[model.Struct | model.Union_] = []
        self.evaluator = consteval.Evaluator(self.lookup)
        self.main_file = pre.main_file

    def run(self, spec: ast.Specification) -> model.Specification:
        for definition in spec.definitions:
            self.definition(definition)
        self._sync(None)
        for fwd in self.forwards:
            if not fwd.defined:
                message = f"{fwd.describe()} is forward-declared but never defined"
                raise IDLError.at(fwd.loc, message)
        self._check_unique_ids()
        return model.Specification(self.root, self.main_file, self.files)

    # -- events and repository ids -------------------------------------------------

    def _sync(self, index: int | None) -> None:
        while self.events and (index is None or self.events[0].index <= index):
            event = self.events.popleft()
            if isinstance(event, FileEnter):
                self.prefixes.append("")
                if event.file not in self.files:
                    self.files.append(event.file)
            elif isinstance(event, FileExit):
                self._pop_prefix()
            elif isinstance(event, PragmaPrefix):
                self.prefixes[-1] = event.prefix
            elif isinstance(event, PragmaID):
                self._pragma_id(event)
            else:
                self._pragma_version(event)

    def _pop_prefix(self) -> None:
        if len(self.prefixes) > 1:
            self.prefixes.pop()

    def _pragma_target(self, event: PragmaID | PragmaVersion) -> model.Decl:
        name = ast.ScopedName(event.name, event.absolute, event.loc)
        decl = self.lookup(name)
        if isinstance(decl, (model.Builtin, model.MemberName)):
            raise IDLError.at(event.loc, f"cannot set the repository id of {decl.describe()}")
        return decl

    def _pragma_id(self, event: PragmaID) -> None:
        decl = self._pragma_target(event)
        if not _ID_RE.match(event.repo_id):
            raise IDLError.at(event.loc, f"invalid repository id '{event.repo_id}'")
        if decl.explicit_id is not None and decl.explicit_id != event.repo_id:
            raise IDLError.at(
                event.loc, f"repository id of {decl.describe()} already set to '{decl.explicit_id}'"
            )
        decl.explicit_id = event.repo_id

    def _pragma_version(self, event: PragmaVersion) -> None:
        decl = self._pragma_target(event)
        if decl.explicit_id is not None:
            message = f"repository id of {decl.describe()} was set by #pragma ID"
            raise IDLError.at(event.loc, message)
        decl.version = event.version

    def _check_unique_ids(self) -> None:
        seen: dict[str, model.Decl] = {}
        for decl in model.Specification(self.root, self.main_file, []).walk():
            if isinstance(decl, _NO_OWN_ID):
                continue
            other = seen.setdefault(decl.repo_id, decl)
            if other is not decl:
                raise IDLError.at(
                    decl.loc, f"repository id '{decl.repo_id}' is also used by {other.describe()}"
                    f" at {other.loc}",
                )  # fmt: skip

    # -- scopes -----------------------------------------------------------------

    def _enter(self, scope: model.Scope) -> None:
        top = self.prefixes[-1]
        self.prefixes.append(f"{top}/{scope.name}" if top else scope.name)
        self.scope = scope

    def _leave(self, end_index: int) -> None:
        self._sync(end_index)
        self._pop_prefix()
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def _existing(self, name: str, loc: Location) -> model.Decl | None:
        """The entry a new declaration of ``name`` would meet in the current scope."""
        if self.scope.parent is not None and name.lower() == self.scope.name.lower():
            raise IDLError.at(loc, f"'{name}' may not be redefined inside {self.scope.describe()}")
        existing = self.scope.local(name)
        if existing is not None and existing.name != name:
            raise IDLError.at(
                loc, f"'{name}' clashes with '{existing.name}' declared at {existing.loc}"
                " (IDL identifiers that differ only in case collide)",
            )  # fmt: skip
        return existing

    def _redefined(self, name: str, loc: Location, existing: model.Decl) -> IDLError:
        return IDLError.at(
            loc, f"'{name}' redefined: already declared as {existing.kind} at {existing.loc}"
        )

    def declare(self, decl: _D, index: int | None, listed: bool = True) -> _D:
        """Add ``decl`` to the current scope, which must not define its name yet."""
        if index is not None:
            self._sync(index)
            decl.repo_base = self.prefixes[-1]
        existing = self._existing(decl.name, decl.loc)
        if existing is not None:
            raise self._redefined(decl.name, decl.loc, existing)
        self.scope.entries[decl.name.lower()] = decl
        if listed:
            self.scope.contents.append(decl)
        return decl

    # -- name lookup (CORBA 2.6 section 3.15.3) ---------------------------------------

    def lookup(self, name: ast.ScopedName) -> model.Decl:
        """Resolve ``name`` from the current scope."""
        first, *rest = name.parts
        found: model.Decl | None
        if name.absolute:
            found = self._find_in(self.root, first, name.loc)
        else:
            found = None
            for scope in self.scope.enclosing():
                found = self._find_in(scope, first, name.loc)
                if found is not None:
                    break
        if found is None:
            raise IDLError.at(name.loc, f"unknown name '{first}'")
        for i, part in enumerate(rest):
            if not isinstance(found, model.Scope) or isinstance(found, model.Builtin):
                prefix = "::".join(name.parts[: i + 1])
                raise IDLError.at(name.loc, f"'{prefix}' is a {found.kind}, not a scope")
            inner = self._find_in(found, part, name.loc)
            if inner is None:
                raise IDLError.at(name.loc, f"'{part}' is not declared in {found.describe()}")
            found = inner
        return found

    def _find_in(self, scope: model.Scope, ident: str, loc: Location) -> model.Decl | None:
        decl = scope.local(ident)
        if decl is not None:
            if decl.name != ident:
                raise IDLError.at(
                    loc, f"'{ident}' differs only in case from {decl.describe()} declared at"
                    f" {decl.loc}",
                )  # fmt: skip
            return decl
        if not isinstance(scope, model.Interface):
            return None
        found: list[model.Decl] = []
        for base in scope.bases:
            decl = self._find_in(base, ident, loc)
            if decl is not None and decl not in found:
                found.append(decl)
        if len(found) > 1:
            names = " and ".join(d.describe() for d in found)
            raise IDLError.at(loc, f"'{ident}' is ambiguous: inherited {names}")
        return found[0] if found else None

    # -- types --------------------------------------------------------------------

    def type_of(self, spec: ast.TypeSpec, incomplete_ok: bool = False) -> model.Type:
        """The model type of a type spec; inline struct/union/enum are declared here."""
        t: model.Type
        if isinstance(spec, ast.BaseType):
            return model.Primitive(spec.name)
        if isinstance(spec, ast.StringType):
            bound = self.evaluator.positive_int(spec.bound, "string bound") if spec.bound else 0
            return model.StringT(spec.wide, bound)
        if isinstance(spec, ast.SequenceType):
            element = self.type_of(spec.element, incomplete_ok=True)
            bound = self.evaluator.positive_int(spec.bound, "sequence bound") if spec.bound else 0
            return model.SequenceT(element, bound)
        if isinstance(spec, ast.FixedType):
            return self._fixed(spec)
        if isinstance(spec, ast.ScopedName):
            decl = self.lookup(spec)
            if isinstance(decl, model.Builtin):
                return decl.type
            if not isinstance(decl, model.TYPE_DECLS):
                raise IDLError.at(spec.loc, f"'{spec}' is {_a(decl.kind)}, not a type")
            t = model.Named(decl)
        elif isinstance(spec, ast.Struct):
            t = model.Named(self.struct(spec))
        elif isinstance(spec, ast.Union_):
            t = model.Named(self.union(spec))
        else:
            t = model.Named(self.enum(spec))
        if not incomplete_ok:
            self._check_complete(t, spec.loc)
        return t

    def _check_complete(self, t: model.Type, loc: Location) -> None:
        decl = t.decl if isinstance(t, model.Named) else None
        if isinstance(decl, (model.Struct, model.Union_)) and not decl.defined:
            raise IDLError.at(
                loc, f"{decl.describe()} is incomplete here: a recursive or forward-declared"
                " struct or union may only be used as a sequence element",
            )  # fmt: skip

    def _fixed(self, spec: ast.FixedType) -> model.FixedT:
        if spec.digits is None or spec.scale is None:
            return model.FixedT(0, 0)
        digits = self.evaluator.positive_int(spec.digits, "fixed-point digits")
        scale = self.evaluator.evaluate(spec.scale, model.Primitive("unsigned short"))
        assert isinstance(scale, int)
        if digits > 31:
            raise IDLError.at(spec.digits.loc, "a fixed-point type has at most 31 digits")
        if scale > digits:
            raise IDLError.at(spec.scale.loc, "fixed-point scale exceeds the number of digits")
        return model.FixedT(digits, scale)

    def _declarator_type(self, base: model.Type, decl: ast.Declarator) -> model.Type:
        if not decl.sizes:
            return base
        sizes = tuple(self.evaluator.positive_int(s, "array size") for s in decl.sizes)
        return model.ArrayT(base, sizes)

    # -- definitions --------------------------------------------------------------

    def definition(self, node: ast.Definition) -> None:
        if isinstance(node, ast.Module):
            self.module(node)
        elif isinstance(node, ast.Interface):
            self.interface(node)
        elif isinstance(node, ast.ForwardInterface):
            self.forward_interface(node)
        elif isinstance(node, ast.Struct):
            self.struct(node)
        elif isinstance(node, ast.Union_):
            self.union(node)
        elif isinstance(node, ast.Enum):
            self.enum(node)
        elif isinstance(node, ast.ForwardStruct):
            self.forward_struct(node)
        elif isinstance(node, ast.Typedef):
            self.typedef(node)
        elif isinstance(node, ast.Native):
            self.declare(model.Native(node.name, node.loc, self.scope), node.index)
        elif isinstance(node, ast.Const):
            self.const(node)
        elif isinstance(node, ast.Exception_):
            self.exception(node)
        else:
            interfaces.callable_definition(self, node)

    def module(self, node: ast.Module) -> None:
        self._sync(node.index)
        existing = self._existing(node.name, node.loc)
        if isinstance(existing, model.Module):
            mod = existing
            if mod.builtin:  # the predefined CORBA module, opened for the first time
                mod.builtin = False
                mod.loc = node.loc
                mod.repo_base = self.prefixes[-1]
                self.scope.contents.append(mod)
        elif existing is not None:
            raise self._redefined(node.name, node.loc, existing)
        else:
            mod = self.declare(model.Module(node.name, node.loc, self.scope), node.index)
        self._enter(mod)
        for definition in node.definitions:
            self.definition(definition)
        self._leave(node.end_index)

    def interface(self, node: ast.Interface) -> None:
        interfaces.define_interface(self, node)

    def forward_interface(self, node: ast.ForwardInterface) -> None:
        self._sync(node.index)
        existing = self._existing(node.name, node.loc)
        if isinstance(existing, model.Interface):
            target = existing
        elif existing is not None:
            raise self._redefined(node.name, node.loc, existing)
        else:
            target = self.declare(model.Interface(node.name, node.loc, self.scope), node.index)
            self.scope.contents.pop()
        self.scope.contents.append(model.Forward(node.name, node.loc, self.scope, target=target))

    def forward_struct(self, node: ast.ForwardStruct) -> None:
        self._sync(node.index)
        cls = model.Struct if node.kind == "struct" else model.Union_
        existing = self._existing(node.name, node.loc)
        if isinstance(existing, cls):
            return
        if existing is not None:
            raise self._redefined(node.name, node.loc, existing)
        target = self.declare(cls(node.name, node.loc, self.scope), node.index, listed=False)
        self.forwards.append(target)
        self.scope.contents.append(model.Forward(node.name, node.loc, self.scope, target=target))

    def _open_forward(self, cls: type[_D], name: str, loc: Location, index: int) -> _D:
        """The struct/union object to define: a fresh one or its forward declaration."""
        self._sync(index)
        existing = self._existing(name, loc)
        if existing is None:
            return self.declare(cls(name, loc, self.scope), index)
        if isinstance(existing, cls) and not getattr(existing, "defined", True):
            existing.loc = loc
            existing.repo_base = self.prefixes[-1]
            self.scope.contents.append(existing)
            return existing
        raise self._redefined(name, loc, existing)

    def struct(self, node: ast.Struct) -> model.Struct:
        st = self._open_forward(model.Struct, node.name, node.loc, node.index)
        self._enter(st)
        st.members = self._members(node.members)
        st.defined = True
        self._leave(node.end_index)
        return st

    def exception(self, node: ast.Exception_) -> None:
        exc = self.declare(model.Exception_(node.name, node.loc, self.scope), node.index)
        self._enter(exc)
        exc.members = self._members(node.members)
        self._leave(node.end_index)

    def _members(self, members: Iterable[ast.Member]) -> list[model.Member]:
        out = []
        for member in members:
            base = self.type_of(member.type)
            for d in member.declarators:
                self.declare(model.MemberName(d.name, d.loc, self.scope), None, listed=False)
                out.append(model.Member(d.name, self._declarator_type(base, d), d.loc))
        return out

    def enum(self, node: ast.Enum) -> model.Enum:
        enum = self.declare(model.Enum(node.name, node.loc, self.scope), node.index)
        for value, item in enumerate(node.enumerators):
            enumerator = model.Enumerator(item.name, item.loc, self.scope, enum=enum, value=value)
            enum.items.append(self.declare(enumerator, item.index, listed=False))
        return enum

    def typedef(self, node: ast.Typedef) -> None:
        base = self.type_of(node.type, incomplete_ok=isinstance(node.type, ast.SequenceType))
        for d in node.declarators:
            alias = model.Alias(d.name, d.loc, self.scope, type=self._declarator_type(base, d))
            self.declare(alias, d.index)

    def const(self, node: ast.Const) -> None:
        t = self.type_of(node.type)
        if not consteval.category(model.unalias(t)):
            raise IDLError.at(
                node.loc, f"{consteval.type_name(t)} cannot be the type of a constant"
            )
        value = self.evaluator.evaluate(node.value, t)
        self.declare(model.Const(node.name, node.loc, self.scope, type=t, value=value), node.index)

    def union(self, node: ast.Union_) -> model.Union_:
        return unions.define_union(self, node)


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"
