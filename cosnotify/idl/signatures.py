"""Canonical signature tables: a comparable summary of a checked specification.

Strategy: `signature_table` flattens a `model.Specification` into plain
tuples keyed by repository id, so two compilations (our ``idl/`` and
omniORB's COS IDL, say) can be compared with ``==`` and their differences
listed with `diff_tables`. Types are named by repository id when they are
declared, else structurally (``sequence<IDL:...:1.0,0>``, ``unsigned long``),
so the tables do not depend on how a file spells a name (``EventType`` versus
``CosNotification::_EventType``). Operation entries keep parameter names,
modes and types, the result, the raised exceptions in order, oneway and
contexts; attributes keep their type and readonly flag.
"""

from __future__ import annotations

from collections.abc import Iterable

from cosnotify.idl import model

Signature = tuple[object, ...]


def type_key(t: model.Type) -> str:
    """A canonical, spelling-independent name for a type."""
    if isinstance(t, model.Primitive):
        return t.name
    if isinstance(t, model.StringT):
        kind = "wstring" if t.wide else "string"
        return f"{kind}<{t.bound}>" if t.bound else kind
    if isinstance(t, model.SequenceT):
        return f"sequence<{type_key(t.element)},{t.bound}>"
    if isinstance(t, model.ArrayT):
        return type_key(t.element) + "".join(f"[{n}]" for n in t.sizes)
    if isinstance(t, model.FixedT):
        return f"fixed<{t.digits},{t.scale}>"
    return t.decl.repo_id


def _value_key(value: object) -> str:
    if isinstance(value, model.Enumerator):
        return value.repo_id
    if isinstance(value, model.DefaultLabel):
        return "default"
    return repr(value)


def _operation(op: model.Operation) -> Signature:
    params = tuple((p.name, p.mode, type_key(p.type)) for p in op.params)
    raises = tuple(e.repo_id for e in op.raises)
    return ("operation", params, type_key(op.result), raises, op.oneway, tuple(op.contexts))


def _declaration(decl: model.Decl) -> Signature | None:
    if isinstance(decl, model.Module):
        return ("module",)
    if isinstance(decl, model.Interface):
        return ("interface", tuple(b.repo_id for b in decl.bases))
    if isinstance(decl, (model.Struct, model.Exception_)):
        members = tuple((m.name, type_key(m.type)) for m in decl.members)
        return (decl.kind, members)
    if isinstance(decl, model.Union_):
        cases = tuple(
            (tuple(_value_key(v) for v in c.labels), c.name, type_key(c.type)) for c in decl.cases
        )
        return ("union", type_key(decl.switch_type), cases)
    if isinstance(decl, model.Enum):
        return ("enum", tuple(item.name for item in decl.items))
    if isinstance(decl, model.Alias):
        return ("typedef", type_key(decl.type))
    if isinstance(decl, model.Const):
        return ("const", type_key(decl.type), _value_key(decl.value))
    if isinstance(decl, model.Native):
        return ("native",)
    return None


def signature_table(
    spec: model.Specification, modules: Iterable[str] | None = None
) -> dict[str, Signature]:
    """``{repository id or 'interface-id/member': signature}`` for the named top-level modules.

    ``modules`` limits the table to those top-level modules (all when None).
    Operations and attributes are keyed ``<interface repo id>/<name>``.
    """
    wanted = None if modules is None else set(modules)
    table: dict[str, Signature] = {}
    for decl in spec.walk():
        top = decl.scoped_name[0]
        if wanted is not None and top not in wanted:
            continue
        if isinstance(decl, model.Module) and decl.builtin:
            continue
        entry = _declaration(decl)
        if entry is not None:
            table[decl.repo_id] = entry
        if isinstance(decl, model.Interface):
            for item in decl.callables:
                key = f"{decl.repo_id}/{item.name}"
                if isinstance(item, model.Operation):
                    table[key] = _operation(item)
                else:
                    table[key] = ("attribute", type_key(item.type), item.readonly)
    return table


def diff_tables(
    ours: dict[str, Signature], theirs: dict[str, Signature]
) -> dict[str, tuple[Signature | None, Signature | None]]:
    """``{key: (ours, theirs)}`` for every key whose entries differ (None if absent)."""
    return {
        key: (ours.get(key), theirs.get(key))
        for key in sorted(set(ours) | set(theirs))
        if ours.get(key) != theirs.get(key)
    }
