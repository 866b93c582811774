"""An omniidl back end: the interfaces of an IDL file, as JSON on standard output.

Run by ``cosnotify.typed.interfaces`` as ``omniidl -p <this directory>
-bcosnotify_typed FILE``, in a process of its own. It writes what the
generated Python stubs do not keep and a typed channel needs: for every
interface of the main file, its repository id, scoped name, and each
operation (its own and inherited ones) with its parameters' names and
directions, its return type and the attributes it has (section 2.7's rules
are checked from this); the top-level declarations of every file, and the
files the main file includes, in an order where each comes after those it
includes. It only reads the tree omniidl parsed; it runs nothing from the
IDL.
"""

import json
import sys
from typing import Any

from omniidl import idlast, idltype, idlvisitor


def _type_text(t: Any) -> str:
    """A parameter's type, as text two parameters of one type share."""
    if isinstance(t, idltype.Declared):
        return "decl:" + str(t.decl().repoId())
    if isinstance(t, (idltype.String, idltype.WString)):
        return f"{t.kind()}<{t.bound()}>"
    if isinstance(t, idltype.Sequence):
        return f"seq<{_type_text(t.seqType())},{t.bound()}>"
    if isinstance(t, idltype.Fixed):
        return f"fixed<{t.digits()},{t.scale()}>"
    return f"kind:{t.kind()}"


def _operation(op: Any) -> dict[str, Any]:
    return {"name": op.identifier(),
            # Where it is declared: an inherited operation's is its base's (Table 2-2's
            # "fully scoped operation name").
            "scoped_name": op.scopedName(),
            "oneway": bool(op.oneway()),
            "returns": "void" if op.returnType().kind() == idltype.tk_void
            else ("boolean" if op.returnType().kind() == idltype.tk_boolean else "other"),
            "params": [{"name": p.identifier(), "direction": p.direction(),
                        "type": _type_text(p.paramType())} for p in op.parameters()],
            "raises": [e.repoId() for e in op.raises()],
            "contexts": list(op.contexts()),
            "line": op.line()}


def _bases(interface: Any, seen: set[str]) -> set[str]:
    """Every interface ``interface`` inherits from, directly or not (repository ids)."""
    for base in interface.inherits():
        while isinstance(base, idlast.Declarator):  # a typedef of an interface
            base = base.alias().aliasType().decl()
        if base.repoId() not in seen:
            seen.add(base.repoId())
            _bases(base, seen)
    return seen


def _callables(interface: Any, seen: set[str]) -> list[Any]:
    found: list[Any] = []
    for base in interface.inherits():
        while isinstance(base, idlast.Declarator):  # a typedef of an interface
            base = base.alias().aliasType().decl()
        if base.repoId() not in seen:
            seen.add(base.repoId())
            found += _callables(base, seen)
    found += list(interface.callables())
    return found


class Interfaces(idlvisitor.AstVisitor):  # type: ignore[misc]
    def __init__(self) -> None:
        self.found: list[dict[str, Any]] = []

    def visitAST(self, node: Any) -> None:
        for decl in node.declarations():
            if decl.mainFile():
                decl.accept(self)

    def visitModule(self, node: Any) -> None:
        for decl in node.definitions():
            decl.accept(self)

    def visitInterface(self, node: Any) -> None:
        operations, attributes = [], []
        for item in _callables(node, set()):
            if isinstance(item, idlast.Operation):
                operations.append(_operation(item))
            elif isinstance(item, idlast.Attribute):
                attributes += [d.identifier() for d in item.declarators()]
        self.found.append({"repo_id": node.repoId(), "scoped_name": node.scopedName(),
                           "bases": sorted(_bases(node, set())),
                           "file": node.file(), "line": node.line(),
                           "abstract": bool(node.abstract()), "local": bool(node.local()),
                           "operations": operations, "attributes": attributes})


_CONTAINED = ("definitions", "contents", "members", "declarators", "enumerators", "cases",
              "callables")


def _walk(node: Any, seen: set[int]) -> Any:
    """Every declaration inside ``node``, and itself."""
    if id(node) in seen:
        return
    seen.add(id(node))
    yield node
    for name in _CONTAINED:
        children = getattr(node, name, None)
        if callable(children):
            for child in children():
                yield from _walk(child, seen)
    declarator = getattr(node, "declarator", None)
    if callable(declarator):
        yield from _walk(declarator(), seen)


def _safe(repo_id: str) -> bool:
    """Printable ASCII without quotes or backslashes: what omniidl's Python back end
    can paste into the stubs it generates (it does not escape repository ids)."""
    return all(32 <= ord(c) < 127 and c not in "\"'\\" for c in repo_id)


def run(tree: Any, args: Any) -> None:
    visitor = Interfaces()
    tree.accept(visitor)
    seen: set[int] = set()
    unsafe = []
    for decl in tree.declarations():
        for node in _walk(decl, seen):
            repo_id = getattr(node, "repoId", None)
            if callable(repo_id) and not _safe(repo_id()):
                unsafe.append({"repo_id": repo_id(), "file": node.file(), "line": node.line()})
    modules = [{"name": d.identifier(), "file": d.file(), "line": d.line(),
                "module": isinstance(d, idlast.Module), "main": bool(d.mainFile())}
               for d in tree.declarations()]
    # The included files with declarations, each at its last declaration's place: a
    # file comes after every file it includes (what it uses is declared before it).
    last: dict[str, int] = {}
    for position, node in enumerate(n for d in tree.declarations() if not d.mainFile()
                                    for n in _walk(d, set())):
        file = getattr(node, "file", None)
        if callable(file):
            last[file()] = position
    json.dump({"interfaces": visitor.found, "unsafe": unsafe, "top": modules,
               "included": sorted(last, key=last.__getitem__)}, sys.stdout)
