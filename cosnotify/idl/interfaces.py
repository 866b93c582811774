"""Semantic analysis of interfaces, operations and attributes.

Strategy: split out of `cosnotify.idl.analyzer` to keep modules small; these
functions run inside the analyzer's single pass and use its scope and lookup.
The rules are CORBA 2.6 sections 3.8 and 3.13-3.14: an interface may inherit
only from defined interfaces, each at most once directly; an operation or
attribute name may not be inherited from two different interfaces nor
redefined in a derived one (types, constants and exceptions may be); and a
oneway operation returns void, takes only ``in`` parameters and raises
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cosnotify.idl import ast, model
from cosnotify.idl.errors import IDLError

if TYPE_CHECKING:
    from cosnotify.idl.analyzer import Analyzer


def define_interface(an: Analyzer, node: ast.Interface) -> model.Interface:
    """Declare and check ``interface Name : Bases { ... }``."""
    an._sync(node.index)
    existing = an._existing(node.name, node.loc)
    if isinstance(existing, model.Interface) and not existing.defined:
        iface = existing
        iface.loc = node.loc
        iface.repo_base = an.prefixes[-1]
        an.scope.contents.append(iface)
    elif existing is not None:
        raise an._redefined(node.name, node.loc, existing)
    else:
        iface = an.declare(model.Interface(node.name, node.loc, an.scope), node.index)
    iface.bases = _bases(an, node)
    iface.defined = True
    _check_inherited_callables(iface, node)
    an._enter(iface)
    for export in node.body:
        an.definition(export)
    an._leave(node.end_index)
    return iface


def _bases(an: Analyzer, node: ast.Interface) -> list[model.Interface]:
    bases: list[model.Interface] = []
    for name in node.bases:
        decl = an.lookup(name)
        target = model.unalias(model.Named(decl)) if isinstance(decl, model.Alias) else None
        if isinstance(target, model.Named):
            decl = target.decl
        if not isinstance(decl, model.Interface):
            raise IDLError.at(name.loc, f"'{name}' is {_a(decl.kind)}, not an interface")
        if not decl.defined:
            raise IDLError.at(
                name.loc, f"cannot inherit from {decl.describe()}: it is only forward-declared"
            )
        if decl in bases:
            raise IDLError.at(name.loc, f"{decl.describe()} is inherited more than once")
        bases.append(decl)
    return bases


def _inherited_callables(iface: model.Interface) -> dict[str, model.Interface]:
    """Lower-cased operation/attribute name -> the ancestor defining it."""
    owners: dict[str, model.Interface] = {}
    for ancestor in iface.ancestors():
        for item in ancestor.callables:
            owners.setdefault(item.name.lower(), ancestor)
    return owners


def _check_inherited_callables(iface: model.Interface, node: ast.Interface) -> None:
    owners: dict[str, model.Interface] = {}
    for ancestor in iface.ancestors():
        for item in ancestor.callables:
            owner = owners.setdefault(item.name.lower(), ancestor)
            if owner is not ancestor:
                raise IDLError.at(
                    node.loc, f"{iface.describe()} inherits '{item.name}' from both"
                    f" {owner.describe()} and {ancestor.describe()}",
                )  # fmt: skip


def callable_definition(an: Analyzer, node: ast.Definition) -> None:
    """An operation or attribute inside an interface body."""
    iface = an.scope
    assert isinstance(iface, model.Interface)
    inherited = _inherited_callables(iface)
    if isinstance(node, ast.Operation):
        owner = inherited.get(node.name.lower())
        if owner is not None:
            raise IDLError.at(
                node.loc, f"operation '{node.name}' redefines a name inherited from"
                f" {owner.describe()}",
            )  # fmt: skip
        op = _operation(an, node)
        iface.operations.append(op)
        iface.callables.append(op)
        return
    assert isinstance(node, ast.Attribute)
    t = an.type_of(node.type)
    for d in node.declarators:
        owner = inherited.get(d.name.lower())
        if owner is not None:
            raise IDLError.at(
                d.loc, f"attribute '{d.name}' redefines a name inherited from {owner.describe()}"
            )
        attr = model.Attribute(d.name, d.loc, iface, readonly=node.readonly, type=t)
        an.declare(attr, d.index, listed=False)
        iface.attributes.append(attr)
        iface.callables.append(attr)


def _operation(an: Analyzer, node: ast.Operation) -> model.Operation:
    result = an.type_of(node.result) if node.result is not None else model.Primitive("void")
    op = model.Operation(node.name, node.loc, an.scope, oneway=node.oneway, result=result)
    an.declare(op, node.index, listed=False)
    seen: dict[str, ast.Param] = {}
    for param in node.params:
        clash = seen.get(param.name.lower())
        if clash is not None:
            raise IDLError.at(
                param.loc, f"parameter '{param.name}' clashes with parameter '{clash.name}'"
            )
        seen[param.name.lower()] = param
        op.params.append(model.Param(param.name, param.mode, an.type_of(param.type), param.loc))
    for name in node.raises:
        exc = an.lookup(name)
        if not isinstance(exc, model.Exception_):
            raise IDLError.at(name.loc, f"'{name}' is {_a(exc.kind)}, not an exception")
        if exc in op.raises:
            raise IDLError.at(name.loc, f"{exc.describe()} is listed twice in raises")
        op.raises.append(exc)
    op.contexts = list(node.contexts)
    if node.oneway:
        if node.result is not None:
            raise IDLError.at(node.loc, f"oneway operation '{node.name}' must return void")
        for param in node.params:
            if param.mode != "in":
                raise IDLError.at(
                    param.loc, f"oneway operation '{node.name}' may only have 'in' parameters"
                    f" ('{param.name}' is '{param.mode}')",
                )  # fmt: skip
        if node.raises:
            raise IDLError.at(
                node.raises[0].loc, f"oneway operation '{node.name}' may not raise exceptions"
            )
    return op


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"
