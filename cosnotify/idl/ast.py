"""Syntax tree of an IDL specification, as the parser builds it.

Strategy: frozen attrs nodes that mirror the grammar and hold nothing but what
the source says (names are still unresolved `ScopedName`s, constant
expressions are still trees). Every node has its `Location`; nodes that
introduce a name also keep ``index``, the position in the token stream of
their identifier, and scopes keep ``end_index``, the position of their closing
brace. The semantic pass uses those indices to replay pragma events at the
right moment (see `cosnotify.idl.preprocessor`).
"""

from __future__ import annotations

import decimal

import attrs

from cosnotify.idl.errors import Location


@attrs.frozen
class ScopedName:
    """``A::B::C`` (``absolute`` for a leading ``::``)."""

    parts: tuple[str, ...]
    absolute: bool
    loc: Location

    def __str__(self) -> str:
        return ("::" if self.absolute else "") + "::".join(self.parts)


# -- types ----------------------------------------------------------------------


@attrs.frozen
class BaseType:
    """A predefined type, by canonical name: ``"unsigned long"``, ``"any"``, ``"Object"``."""

    name: str
    loc: Location


@attrs.frozen
class StringType:
    """``string``/``wstring``, optionally bounded."""

    wide: bool
    bound: Expr | None
    loc: Location


@attrs.frozen
class SequenceType:
    """``sequence<T>`` or ``sequence<T, N>``."""

    element: TypeSpec
    bound: Expr | None
    loc: Location


@attrs.frozen
class FixedType:
    """``fixed<digits, scale>``; both ``None`` for the bare ``fixed`` of a constant."""

    digits: Expr | None
    scale: Expr | None
    loc: Location


# -- expressions ----------------------------------------------------------------


@attrs.frozen
class Literal:
    """A literal; ``kind`` is integer, float, fixed, char, wchar, string, wstring or boolean."""

    kind: str
    value: int | float | decimal.Decimal | str | bool
    loc: Location


@attrs.frozen
class NameRef:
    """A constant or enumerator referred to by name in an expression."""

    name: ScopedName
    loc: Location


@attrs.frozen
class UnaryOp:
    """``-x``, ``+x`` or ``~x``."""

    op: str
    operand: Expr
    loc: Location


@attrs.frozen
class BinaryOp:
    """``a op b`` for the IDL operators ``| ^ & << >> + - * / %``."""

    op: str
    left: Expr
    right: Expr
    loc: Location


Expr = Literal | NameRef | UnaryOp | BinaryOp


# -- declarations ---------------------------------------------------------------


@attrs.frozen
class Declarator:
    """A declared name, with array sizes if it is an array declarator."""

    name: str
    sizes: tuple[Expr, ...]
    loc: Location
    index: int


@attrs.frozen
class Member:
    """A struct or exception member line: one type, one or more declarators."""

    type: TypeSpec
    declarators: tuple[Declarator, ...]
    loc: Location


@attrs.frozen
class Struct:
    """``struct Name { members };``"""

    name: str
    members: tuple[Member, ...]
    loc: Location
    index: int
    end_index: int


@attrs.frozen
class Default:
    """The ``default:`` case label."""

    loc: Location


@attrs.frozen
class Case:
    """One union case: its labels, and the one member they select."""

    labels: tuple[Expr | Default, ...]
    type: TypeSpec
    declarator: Declarator
    loc: Location


@attrs.frozen
class Union_:
    """``union Name switch (T) { cases };``"""

    name: str
    switch_type: TypeSpec
    cases: tuple[Case, ...]
    loc: Location
    index: int
    end_index: int


@attrs.frozen
class Enumerator:
    """One name of an enum."""

    name: str
    loc: Location
    index: int


@attrs.frozen
class Enum:
    """``enum Name { a, b };``"""

    name: str
    enumerators: tuple[Enumerator, ...]
    loc: Location
    index: int


@attrs.frozen
class ForwardStruct:
    """``struct Name;`` or ``union Name;`` (``kind`` says which)."""

    kind: str
    name: str
    loc: Location
    index: int


@attrs.frozen
class Typedef:
    """``typedef T a, b[3];``"""

    type: TypeSpec
    declarators: tuple[Declarator, ...]
    loc: Location


@attrs.frozen
class Native:
    """``native Name;``"""

    name: str
    loc: Location
    index: int


@attrs.frozen
class Const:
    """``const T NAME = expr;``"""

    type: TypeSpec
    name: str
    value: Expr
    loc: Location
    index: int


@attrs.frozen
class Exception_:
    """``exception Name { members };``"""

    name: str
    members: tuple[Member, ...]
    loc: Location
    index: int
    end_index: int


@attrs.frozen
class Param:
    """An operation parameter; ``mode`` is ``in``, ``out`` or ``inout``."""

    mode: str
    type: TypeSpec
    name: str
    loc: Location


@attrs.frozen
class Operation:
    """An operation; ``result`` is ``None`` for ``void``."""

    oneway: bool
    result: TypeSpec | None
    name: str
    params: tuple[Param, ...]
    raises: tuple[ScopedName, ...]
    contexts: tuple[str, ...]
    loc: Location
    index: int


@attrs.frozen
class Attribute:
    """``[readonly] attribute T a, b;``"""

    readonly: bool
    type: TypeSpec
    declarators: tuple[Declarator, ...]
    loc: Location


@attrs.frozen
class Interface:
    """``interface Name : Bases { body };``"""

    name: str
    bases: tuple[ScopedName, ...]
    body: tuple[Definition, ...]
    loc: Location
    index: int
    end_index: int


@attrs.frozen
class ForwardInterface:
    """``interface Name;``"""

    name: str
    loc: Location
    index: int


@attrs.frozen
class Module:
    """``module Name { definitions };``"""

    name: str
    definitions: tuple[Definition, ...]
    loc: Location
    index: int
    end_index: int


@attrs.frozen
class Specification:
    """A whole (preprocessed) IDL file."""

    definitions: tuple[Definition, ...]


ConstrType = Struct | Union_ | Enum
TypeSpec = BaseType | StringType | SequenceType | FixedType | ScopedName | ConstrType
Definition = (
    Module | Interface | ForwardInterface | Struct | Union_ | Enum | ForwardStruct | Typedef
    | Native | Const | Exception_ | Operation | Attribute
)
