"""TypeCode builders used by generated code (a thin facade over ``typecode``)."""

from cosnotify.orb.typecode import (
    DEFAULT_LABEL,
    abstract_interface_tc,
    alias_tc,
    array_tc,
    enum_tc,
    exception_tc,
    fixed_tc,
    local_interface_tc,
    objref_tc,
    recursive_tc,
    sequence_tc,
    string_tc,
    struct_tc,
    union_tc,
    wstring_tc,
)

__all__ = [
    "DEFAULT_LABEL",
    "abstract_interface_tc",
    "alias_tc",
    "array_tc",
    "enum_tc",
    "exception_tc",
    "fixed_tc",
    "local_interface_tc",
    "objref_tc",
    "recursive_tc",
    "sequence_tc",
    "string_tc",
    "struct_tc",
    "union_tc",
    "wstring_tc",
]
