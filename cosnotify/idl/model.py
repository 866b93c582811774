"""The checked model of an IDL specification: declarations, types, scopes.

Strategy: the analyzer turns the syntax tree into this model. Declarations are
mutable ``attrs.define`` objects with identity equality, because IDL needs
them to grow after they are first seen (a forward-declared interface or struct
is the same object once its body arrives, a module reopens, ``#pragma ID``
may set an id later). Types are frozen values; a named type is a `Named`
wrapping its declaration.

Every scope (the global scope, modules, interfaces, structs, unions,
exceptions) keeps its entries keyed by the lower-cased identifier, which is
how the IDL rule "identifiers that differ only in case collide" is enforced
(CORBA 2.6 section 3.2.3). Name lookup follows section 3.15.3: the scope,
then (for interfaces) the inherited scopes, then the enclosing scopes.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from typing import Union

import attrs

from cosnotify.idl.errors import Location

# -- types ------------------------------------------------------------------------

#: Predefined type names (the names `Primitive.name` takes).
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "short": (-(2**15), 2**15 - 1),
    "long": (-(2**31), 2**31 - 1),
    "long long": (-(2**63), 2**63 - 1),
    "unsigned short": (0, 2**16 - 1),
    "unsigned long": (0, 2**32 - 1),
    "unsigned long long": (0, 2**64 - 1),
    "octet": (0, 255),
}
FLOAT_TYPES = ("float", "double", "long double")
OTHER_PRIMITIVES = ("boolean", "char", "wchar", "any", "Object", "TypeCode", "void")


@attrs.frozen
class Primitive:
    """A predefined type: an integer, float, char, boolean, any, Object, TypeCode, void."""

    name: str


@attrs.frozen
class StringT:
    """``string``/``wstring``; ``bound`` 0 means unbounded."""

    wide: bool
    bound: int


@attrs.frozen
class SequenceT:
    """``sequence<element, bound>``; ``bound`` 0 means unbounded."""

    element: Type
    bound: int


@attrs.frozen
class ArrayT:
    """An array declarator's type: ``element[sizes[0]][sizes[1]]...``."""

    element: Type
    sizes: tuple[int, ...]


@attrs.frozen
class FixedT:
    """``fixed<digits, scale>``."""

    digits: int
    scale: int


@attrs.frozen
class Named:
    """A reference to a declared type (struct, union, enum, alias, interface, native)."""

    decl: Decl


Type = Primitive | StringT | SequenceT | ArrayT | FixedT | Named


def unalias(t: Type) -> Type:
    """Follow typedefs until a non-alias type."""
    while isinstance(t, Named) and isinstance(t.decl, Alias):
        t = t.decl.type
    return t


# -- declarations -------------------------------------------------------------------


@attrs.define(eq=False)
class Decl:
    """Anything with a name in a scope."""

    name: str
    loc: Location
    parent: Scope | None
    #: ``prefix/enclosing/scopes`` in force where the declaration was made.
    repo_base: str = ""
    version: str = "1.0"
    explicit_id: str | None = None

    kind = "declaration"

    @property
    def repo_id(self) -> str:
        """The repository id (``IDL:prefix/Scope/Name:1.0`` unless a pragma set it)."""
        if self.explicit_id is not None:
            return self.explicit_id
        base = f"{self.repo_base}/" if self.repo_base else ""
        return f"IDL:{base}{self.name}:{self.version}"

    @property
    def scoped_name(self) -> tuple[str, ...]:
        """The full scoped name, outermost first."""
        names = [self.name]
        scope = self.parent
        while scope is not None and scope.parent is not None:
            names.append(scope.name)
            scope = scope.parent
        return tuple(reversed(names))

    def describe(self) -> str:
        return f"{self.kind} '{'::'.join(self.scoped_name)}'"


@attrs.define(eq=False)
class Scope(Decl):
    """A declaration that contains others (the global scope has ``parent=None``)."""

    entries: dict[str, Decl] = attrs.field(factory=dict)
    #: Declarations made in this scope, in source order (for code generation).
    contents: list[Decl] = attrs.field(factory=list)

    kind = "scope"

    def local(self, name: str) -> Decl | None:
        """The entry for ``name`` in this scope only (case-insensitively)."""
        return self.entries.get(name.lower())

    def enclosing(self) -> Iterator[Scope]:
        """This scope and its enclosing scopes, innermost first."""
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent


@attrs.define(eq=False)
class Module(Scope):
    """``module``; ``builtin`` for the predefined ``CORBA`` module."""

    builtin: bool = False
    kind = "module"


@attrs.define(eq=False)
class Interface(Scope):
    """``interface``; ``defined`` is False while only forward-declared."""

    defined: bool = False
    bases: list[Interface] = attrs.field(factory=list)
    operations: list[Operation] = attrs.field(factory=list)
    attributes: list[Attribute] = attrs.field(factory=list)
    #: Operations and attributes in source order.
    callables: list[Operation | Attribute] = attrs.field(factory=list)
    kind = "interface"

    def ancestors(self) -> list[Interface]:
        """Every interface this one inherits from, directly or not (no duplicates)."""
        seen: list[Interface] = []
        for base in self.bases:
            for iface in [base, *base.ancestors()]:
                if iface not in seen:
                    seen.append(iface)
        return seen


@attrs.define(eq=False)
class Member:
    """A struct or exception member."""

    name: str
    type: Type
    loc: Location


@attrs.define(eq=False)
class Struct(Scope):
    """``struct``; ``defined`` is False while only forward-declared."""

    defined: bool = False
    members: list[Member] = attrs.field(factory=list)
    kind = "struct"


@attrs.define(eq=False)
class Exception_(Scope):
    """``exception``."""

    members: list[Member] = attrs.field(factory=list)
    kind = "exception"


class DefaultLabel:
    """The ``default:`` label of a union case."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = DefaultLabel()
LabelValue = Union[int, bool, str, "Enumerator"]


@attrs.define(eq=False)
class UnionCase:
    """One union member and the labels that select it."""

    labels: list[LabelValue | DefaultLabel]
    name: str
    type: Type
    loc: Location


@attrs.define(eq=False)
class Union_(Scope):
    """``union``; ``defined`` is False while only forward-declared."""

    defined: bool = False
    switch_type: Type = Primitive("long")
    cases: list[UnionCase] = attrs.field(factory=list)
    #: A discriminator value that selects the default member, or (without a
    #: default member) no member; None if the labels cover every value.
    default_value: LabelValue | None = None
    kind = "union"


@attrs.define(eq=False)
class Enumerator(Decl):
    """One enum value."""

    enum: Enum | None = None
    value: int = 0
    kind = "enumerator"


@attrs.define(eq=False)
class Enum(Decl):
    """``enum``."""

    items: list[Enumerator] = attrs.field(factory=list)
    kind = "enum"


@attrs.define(eq=False)
class Alias(Decl):
    """One declarator of a ``typedef``."""

    type: Type = Primitive("void")
    kind = "typedef"


@attrs.define(eq=False)
class Native(Decl):
    """``native``."""

    kind = "native type"


ConstValue = int | float | decimal.Decimal | str | bool | Enumerator


@attrs.define(eq=False)
class Const(Decl):
    """``const``."""

    type: Type = Primitive("long")
    value: ConstValue = 0
    kind = "constant"


@attrs.define(eq=False)
class Param:
    """An operation parameter."""

    name: str
    mode: str
    type: Type
    loc: Location


@attrs.define(eq=False)
class Operation(Decl):
    """An operation of an interface."""

    oneway: bool = False
    result: Type = Primitive("void")
    params: list[Param] = attrs.field(factory=list)
    raises: list[Exception_] = attrs.field(factory=list)
    contexts: list[str] = attrs.field(factory=list)
    kind = "operation"


@attrs.define(eq=False)
class Attribute(Decl):
    """An attribute of an interface."""

    readonly: bool = False
    type: Type = Primitive("void")
    kind = "attribute"


@attrs.define(eq=False)
class MemberName(Decl):
    """The name of a struct/union/exception member or a parameter, as a scope entry."""

    kind = "member"


@attrs.define(eq=False)
class Builtin(Decl):
    """A predefined name that denotes a type (``CORBA::TypeCode``)."""

    type: Type = Primitive("TypeCode")
    kind = "type"


@attrs.define(eq=False)
class Forward(Decl):
    """Marks where a forward declaration appeared among a scope's contents."""

    target: Interface | Struct | Union_ | None = None
    kind = "forward declaration"

    @property
    def repo_id(self) -> str:
        """The repository id of the declared interface, struct or union."""
        return self.target.repo_id if self.target is not None else super().repo_id


#: Declarations whose name can be used as a type.
TYPE_DECLS = (Struct, Union_, Enum, Alias, Interface, Native)


@attrs.define
class Specification:
    """The analyzer's result."""

    root: Module
    main_file: str
    #: Every file read, in the order it was first entered.
    files: list[str]

    def walk(self, scope: Scope | None = None) -> Iterator[Decl]:
        """Every declaration in source order, depth first."""
        for decl in (scope or self.root).contents:
            yield decl
            if isinstance(decl, Scope):
                yield from self.walk(decl)
            if isinstance(decl, Enum):
                yield from decl.items
