"""Python code generation: one package per IDL module, plus its ``__POA`` twin.

Strategy: `generate` turns a checked `model.Specification` into a mapping
from relative file paths to file text, following
docs/design/generated-code.md (the OMG IDL-to-Python mapping as omniORBpy
implements it). Nothing here touches the file system, so ``--check`` and
``--regen`` and the tests all share it.

* Like omniidl, only definitions from the main file are generated; modules
  that come from included files are imported, not regenerated.
* Each IDL module ``A::B`` becomes the package ``A/B/__init__.py`` (and
  skeletons ``A__POA/B/__init__.py``); definitions outside any module go to
  ``_GlobalIDL``. A package imports its nested packages where they appear.
* A reference to another package imports it just before the first top-level
  block that needs it. Imports are relative to ``cosnotify.stubs`` for the
  committed stubs; for user IDL, a module from cosnotify's own ``idl/`` comes
  from ``cosnotify.stubs`` and any other one by its plain name.
* Output is deterministic: source order throughout, no timestamps, and a
  header naming the source by a relative path.

Data types are written by `cosnotify.idl.codegen_types`; interfaces, stubs
and skeletons here.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from cosnotify.idl import model
from cosnotify.idl.codegen_types import (
    call_expr,
    definition,
    descriptors,
    indented,
    py,
    q,
    tc_expr,
    tuple_expr,
)  # fmt: skip

Level = tuple[str, ...]
GLOBAL_PACKAGE = "_GlobalIDL"
_IMPORTS = "\0import\0"
_MODES = {"in": "interface.IN", "out": "interface.OUT", "inout": "interface.INOUT"}


@attrs.define
class Generator:
    """State shared by the package writers of one generation run."""

    spec: model.Specification
    source_label: str
    stubs_mode: bool
    idl_dir: Path | None
    #: Post-order position of each declaration: a struct's TypeCode exists
    #: from that point on (see `is_complete`).
    done_seq: dict[model.Decl, int] = attrs.field(factory=dict)
    point: int = 0
    generated: set[str] = attrs.field(factory=set)
    tc_emitted: set[model.Decl] = attrs.field(factory=set)

    def is_complete(self, decl: model.Decl) -> bool:
        """Whether ``decl``'s TypeCode is built before the code being written runs."""
        seq = self.done_seq.get(decl)
        defined = getattr(decl, "defined", True)
        return bool(defined) and seq is not None and seq < self.point

    def is_main(self, decl: model.Decl) -> bool:
        return decl.loc.file == self.spec.main_file

    def from_cosnotify_idl(self, module: model.Module) -> bool:
        if self.idl_dir is None:
            return False
        try:
            Path(module.loc.file).resolve().relative_to(self.idl_dir.resolve())
        except ValueError:
            return False
        return True


def generate(
    spec: model.Specification, source_label: str, stubs_mode: bool = False,
    idl_dir: Path | None = None,
) -> dict[str, str]:  # fmt: skip
    """Generate the Python packages for ``spec``'s main file.

    Returns ``{relative path: text}``. ``source_label`` names the IDL file in
    the header comments; ``stubs_mode`` selects imports relative to
    ``cosnotify.stubs``; ``idl_dir`` is cosnotify's own IDL directory.
    """
    gen = Generator(spec, source_label, stubs_mode, idl_dir)
    _number(gen, spec.root)
    packages: list[tuple[model.Module, Level]] = []
    _collect(gen, spec.root, (), packages)
    gen.generated = {path[0] for _, path in packages}
    files: dict[str, str] = {}
    for module, path in packages:
        writer = PackageWriter(gen, module, path)
        files["/".join(path) + "/__init__.py"] = writer.stub_package()
        poa_path = (path[0] + "__POA", *path[1:])
        poa = PackageWriter(gen, module, poa_path)
        files["/".join(poa_path) + "/__init__.py"] = poa.skeleton_package(path)
    return files


def _number(gen: Generator, scope: model.Scope) -> None:
    for decl in scope.contents:
        if isinstance(decl, model.Scope):
            _number(gen, decl)
        gen.done_seq[decl] = len(gen.done_seq)


def _has_main_content(gen: Generator, module: model.Module) -> bool:
    return any(
        (_has_main_content(gen, d) if isinstance(d, model.Module) else gen.is_main(d))
        for d in module.contents
    )


def _collect(
    gen: Generator, module: model.Module, path: Level, out: list[tuple[model.Module, Level]]
) -> None:
    if module.parent is None:
        if any(gen.is_main(d) for d in module.contents if not isinstance(d, model.Module)):
            out.append((module, (GLOBAL_PACKAGE,)))
    elif _has_main_content(gen, module):
        out.append((module, path))
    for d in module.contents:
        if isinstance(d, model.Module) and not d.builtin:
            _collect(gen, d, (*path, py(d.name)), out)


def package_path(decl: model.Decl) -> tuple[Level, Level]:
    """(package path, path of enclosing classes inside it) for a declaration."""
    inner: list[str] = []
    scope = decl.parent
    while scope is not None and not isinstance(scope, model.Module):
        inner.append(py(scope.name))
        scope = scope.parent
    modules: list[str] = []
    while scope is not None and scope.parent is not None:
        modules.append(py(scope.name))
        scope = scope.parent
    pkg = tuple(reversed(modules)) or (GLOBAL_PACKAGE,)
    return pkg, tuple(reversed(inner))


class PackageWriter:
    """Writes one package ``__init__.py``: the stubs of a module, or its skeletons."""

    def __init__(self, gen: Generator, module: model.Module, path: Level) -> None:
        self.gen = gen
        self.module = module
        self.path = path
        self.needs_decimal = False
        self._imported: set[str] = set()
        self._pending: list[str] = []
        self._top_imports: list[str] = []

    # -- references and imports ---------------------------------------------------

    def package_ref(self, pkg: Level) -> str:
        """The expression naming package ``pkg`` from this one, importing it if needed."""
        if pkg[: len(self.path)] == self.path and len(pkg) > len(self.path):
            return ".".join(pkg[len(self.path) :])
        top = pkg[0]
        if top not in self._imported:
            self._imported.add(top)
            # A package generated from the same file may still be importing
            # this one, so it is imported where first needed; others at the top.
            idl_top = top.removesuffix("__POA")
            lazy = idl_top in self.gen.generated and idl_top != self.path[0].removesuffix("__POA")
            (self._pending if lazy else self._top_imports).append(self._import_statement(top))
        return ".".join(pkg)

    def _import_statement(self, top: str) -> str:
        if self.gen.stubs_mode:
            return f"from {'.' * (len(self.path) + 1)} import {top}"
        idl_top = top.removesuffix("__POA")
        module = self.gen.spec.root.local(idl_top)
        if (
            idl_top not in self.gen.generated
            and isinstance(module, model.Module)
            and self.gen.from_cosnotify_idl(module)
        ):
            return f"from cosnotify.stubs import {top}"
        return f"import {top}"

    def ref(self, decl: model.Decl, attr: str, level: Level) -> str:
        """The expression for attribute ``attr`` of ``decl``'s namespace, at ``level``."""
        pkg, container = package_path(decl)
        if pkg != self.path:
            return ".".join((self.package_ref(pkg), *container, attr))
        if container == level or not container:
            return attr
        if level and container[: len(level)] == level:
            return ".".join((*container[len(level) :], attr))
        return ".".join((*container, attr))

    def store_prefix(self, decl: model.Decl, level: Level) -> str:
        """How ``decl``'s own namespace is written at ``level`` (``""`` or ``"A.B."``)."""
        _, container = package_path(decl)
        rest = container[len(level) :] if container[: len(level)] == level else container
        return "".join(f"{name}." for name in rest)

    def _flush(self, blocks: list[str], block: list[str]) -> None:
        if self._pending:
            blocks.append(_IMPORTS + "\n".join(self._pending))
            self._pending = []
        blocks.append("\n".join(block))

    def _render(self, head: list[str], blocks: list[str]) -> str:
        """Join the header and blocks: imports stay together, code blocks get two blank lines."""
        text = "\n".join([*head, *sorted(self._top_imports)])
        previous_import = True
        for block in blocks:
            is_import = block.startswith(_IMPORTS)
            block = block.removeprefix(_IMPORTS)
            text += ("\n" if is_import and previous_import else "\n\n\n") + block
            previous_import = is_import
        return text + "\n"

    def _is_subpackage(self, module: model.Module) -> bool:
        return (
            self.module.parent is not None
            and not module.builtin
            and _has_main_content(self.gen, module)
        )

    # -- stub packages --------------------------------------------------------------

    def stub_package(self) -> str:
        blocks: list[str] = []
        previous: model.Decl | None = None
        for decl in self.module.contents:
            if isinstance(decl, model.Module):
                if self._is_subpackage(decl):
                    self._flush(blocks, [f"from . import {py(decl.name)}"])
                previous = None
                continue
            if not self.gen.is_main(decl):
                continue
            block = self._top_level(decl)
            if not block:
                continue
            consecutive = isinstance(decl, model.Const) and isinstance(previous, model.Const)
            if consecutive and not self._pending:
                blocks[-1] += "\n" + "\n".join(block)  # consecutive constants stay together
                continue
            self._flush(blocks, block)
            previous = decl
        head = self._docstring("")
        if self.needs_decimal:
            head.append("import decimal")
        head.append("import typing as _typing")
        head.append("")
        head.append("from cosnotify.orb import CORBA, interface, registry, tc, values")
        return self._render(head, blocks)

    def _docstring(self, what: str) -> list[str]:
        name = "::".join(self.module.scoped_name) if self.module.parent else "the global scope"
        return [
            f'"""Generated by cosnotify.idl from {self.gen.source_label}. Do not edit.',
            "",
            f"{what}IDL module {name}." if self.module.parent else f"{what}IDL {name}.",
            '"""',
            "",
        ]

    def _top_level(self, decl: model.Decl) -> list[str]:
        out: list[str] = []
        if isinstance(decl, model.Forward):
            target = decl.target
            if isinstance(target, model.Interface) and target not in self.gen.tc_emitted:
                self.gen.tc_emitted.add(target)
                out.append(f"# interface {decl.name} (forward declaration)")
                out.append(_objref_tc(target))
            return out
        if isinstance(decl, model.Interface):
            return self._interface(decl)
        return _joined(self, decl, (), 2)

    def _interface(self, iface: model.Interface) -> list[str]:
        out: list[str] = []
        name = py(iface.name)
        if iface not in self.gen.tc_emitted:
            self.gen.tc_emitted.add(iface)
            out.append(_objref_tc(iface))
            out.append("")
        bases = [self.ref(b, py(b.name), ()) for b in iface.bases]
        out.append(f"# interface {iface.name}")
        out.append(call_expr(f"class {name}", bases or ["CORBA.Object"]) + ":")
        out.append(f"    _NP_RepositoryId = {q(iface.repo_id)}")
        level = (name,)
        for inner in iface.contents:
            if isinstance(inner, model.Forward):
                continue
            out.append("")
            out.extend(indented(_joined(self, inner, level, 1)))
        self.gen.point = self.gen.done_seq.get(iface, self.gen.point)
        ops = _operations(iface)
        out.append("")
        head = "    _NP_operations = "
        if not bases:
            out.append(head + self._operation_table(ops, level, "    "))
        elif len(head + f"interface.merge_operations({tuple_expr(bases)}, {{") <= 99:
            table = self._operation_table(ops, level, "    ")
            out.append(f"{head}interface.merge_operations({tuple_expr(bases)}, {table})")
        else:
            table = self._operation_table(ops, level, "        ")
            out.append(f"{head}interface.merge_operations(")
            out.append(f"        {tuple_expr(bases, '        ')},")
            out.append(f"        {table},")
            out.append("    )")
        out.append("")
        out.append("")
        out.extend(self._objref_class(iface))
        return out

    def _operation_table(self, ops: list[model.Operation], level: Level, indent: str) -> str:
        """The ``{name: interface.Operation(...)}`` display, starting at ``indent``."""
        if not ops:
            return "{}"
        inner = indent + "    "
        entries = [f"{inner}{q(op.name)}: {self._operation(op, level, inner)},\n" for op in ops]
        return "{\n" + "".join(entries) + indent + "}"

    def _operation(self, op: model.Operation, level: Level, indent: str) -> str:
        inner = indent + "    "
        params = [
            call_expr(
                "interface.Param",
                [q(p.name), _MODES[p.mode], tc_expr(self, p.type, level)],
                inner + "    ",
            )
            for p in op.params
        ]
        args: list[str | list[str]] = [q(op.name), params, tc_expr(self, op.result, level)]
        if op.raises:
            raised = [self.ref(e, py(e.name), level) for e in op.raises]
            args.append("raises=" + tuple_expr(raised, inner, len("raises=")))
        if op.oneway:
            args.append("oneway=True")
        if op.contexts:
            args.append("contexts=" + tuple_expr([q(c) for c in op.contexts], inner, 9))
        rendered = [tuple_expr(a, inner) if isinstance(a, list) else a for a in args]
        body = "".join(f"{inner}{arg},\n" for arg in rendered)
        return f"interface.Operation(\n{body}{indent})"

    def _objref_class(self, iface: model.Interface) -> list[str]:
        name = py(iface.name)
        bases = [self.ref(b, f"_objref_{py(b.name)}", ()) for b in iface.bases]
        out = [call_expr(f"class _objref_{name}", [*bases, name]) + ":"]
        ops = list(_operations(iface))
        if not ops:
            out.append("    pass")
        for op in ops:
            ins = [py(p.name) for p in op.params if p.mode != "out"]
            method = py(op.name)
            out.append(f"    def {method}({', '.join(['self', *ins])}):")
            call_args = tuple_expr(ins)
            invoke = [f"{name}._NP_operations[{q(op.name)}]", call_args]
            out.append("        " + call_expr("return self._invoke", invoke, "        "))
            out.append("")
        if ops:
            out.pop()
        out.append("")
        out.append("")
        out.append(f"interface.register_stub({name}, _objref_{name})")
        return out

    # -- skeleton packages -------------------------------------------------------------

    def skeleton_package(self, stub_path: Level) -> str:
        blocks: list[str] = []
        stub_pkg = self.package_ref(stub_path)
        for decl in self.module.contents:
            if isinstance(decl, model.Module):
                if self._is_subpackage(decl):
                    self._flush(blocks, [f"from . import {py(decl.name)}"])
                continue
            if not (self.gen.is_main(decl) and isinstance(decl, model.Interface)):
                continue
            name = py(decl.name)
            bases = [self._skeleton_ref(b) for b in decl.bases] or ["PortableServer.Servant"]
            self._flush(blocks, [
                call_expr(f"class {name}", bases) + ":",
                f"    _NP_RepositoryId = {stub_pkg}.{name}._NP_RepositoryId",
                f"    _NP_operations = {stub_pkg}.{name}._NP_operations",
            ])  # fmt: skip
        head = [*self._docstring("Skeletons for "), "from cosnotify.orb import PortableServer"]
        return self._render(head, blocks)

    def _skeleton_ref(self, iface: model.Interface) -> str:
        pkg, _ = package_path(iface)
        poa_pkg = (pkg[0] + "__POA", *pkg[1:])
        if poa_pkg == self.path:
            return py(iface.name)
        return f"{self.package_ref(poa_pkg)}.{py(iface.name)}"


def _joined(w: PackageWriter, decl: model.Decl, level: Level, blank: int) -> list[str]:
    """Definition then descriptors, with ``blank`` blank lines after a class statement."""
    out: list[str] = []
    definition(w, decl, level, out)
    desc: list[str] = []
    descriptors(w, decl, level, desc)
    if desc and any(line.startswith("class ") for line in out):
        out.extend([""] * blank)
    return out + desc


def _objref_tc(iface: model.Interface) -> str:
    return call_expr(f"_tc_{iface.name} = tc.objref_tc", [q(iface.repo_id), q(iface.name)])


def _operations(iface: model.Interface) -> list[model.Operation]:
    """The operations of ``iface``, attributes expanded to ``_get_``/``_set_`` operations."""
    ops: list[model.Operation] = []
    for item in iface.callables:
        if isinstance(item, model.Operation):
            ops.append(item)
            continue
        getter = model.Operation(f"_get_{item.name}", item.loc, iface, result=item.type)
        ops.append(getter)
        if not item.readonly:
            param = model.Param("value", "in", item.type, item.loc)
            ops.append(model.Operation(f"_set_{item.name}", item.loc, iface, params=[param]))
    return ops


def write_files(files: dict[str, str], outdir: str | os.PathLike[str]) -> list[Path]:
    """Write generated ``files`` under ``outdir``; return the paths written."""
    written = []
    for rel, text in sorted(files.items()):
        target = Path(outdir) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written
