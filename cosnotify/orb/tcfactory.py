"""The ORB's ``create_*_tc`` operations (CORBA 2.6 section 4.11.3).

Strategy: a mixin over the ``typecode`` builders that accepts the IDL
argument shapes (``StructMember``, ``UnionMember``, member-name sequences,
label Anys) so that code written for omniORBpy's ``orb.create_struct_tc``
works unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cosnotify.orb import tc as builders
from cosnotify.orb import typecode as T
from cosnotify.orb.values import StructBase

__all__ = ["StructMember", "TypeCodeFactory", "UnionMember"]


class StructMember(StructBase):
    """``CORBA::StructMember {Identifier name; TypeCode type; IDLType type_def;}``"""

    _NP_RepositoryId = "IDL:omg.org/CORBA/StructMember:1.0"
    __slots__ = ("name", "type", "type_def")

    def __init__(self, name: str, type: T.TypeCode, type_def: Any = None) -> None:
        self.name = name
        self.type = type
        self.type_def = type_def


class UnionMember(StructBase):
    """``CORBA::UnionMember {Identifier name; any label; TypeCode type; IDLType type_def;}``"""

    _NP_RepositoryId = "IDL:omg.org/CORBA/UnionMember:1.0"
    __slots__ = ("label", "name", "type", "type_def")

    def __init__(self, name: str, label: Any, type: T.TypeCode,
                 type_def: Any = None) -> None:
        self.name = name
        self.label = label
        self.type = type
        self.type_def = type_def


class TypeCodeFactory:
    """``create_*_tc`` operations, mixed into the ORB."""

    def create_struct_tc(self, id: str, name: str, members: Sequence[StructMember]) -> T.TypeCode:
        return builders.struct_tc(id, name, [(m.name, m.type) for m in members])

    def create_exception_tc(self, id: str, name: str,
                            members: Sequence[StructMember]) -> T.TypeCode:
        return builders.exception_tc(id, name, [(m.name, m.type) for m in members])

    def create_union_tc(self, id: str, name: str, discriminator_type: T.TypeCode,
                        members: Sequence[UnionMember]) -> T.TypeCode:
        entries = []
        default_index = -1
        for index, member in enumerate(members):
            label = member.label
            # CORBA 2.6 section 4.11.3: a zero octet label marks the default member.
            if label.typecode().unalias()._k == T.K_OCTET:
                entries.append((T.DEFAULT_LABEL, member.name, member.type))
                default_index = index
            else:
                entries.append((label.value(), member.name, member.type))
        return builders.union_tc(id, name, discriminator_type, entries, default_index)

    def create_enum_tc(self, id: str, name: str, members: Sequence[str]) -> T.TypeCode:
        return builders.enum_tc(id, name, members)

    def create_alias_tc(self, id: str, name: str, original_type: T.TypeCode) -> T.TypeCode:
        return builders.alias_tc(id, name, original_type)

    def create_interface_tc(self, id: str, name: str) -> T.TypeCode:
        return builders.objref_tc(id, name)

    def create_abstract_interface_tc(self, id: str, name: str) -> T.TypeCode:
        return builders.abstract_interface_tc(id, name)

    def create_local_interface_tc(self, id: str, name: str) -> T.TypeCode:
        return builders.local_interface_tc(id, name)

    def create_native_tc(self, id: str, name: str) -> T.TypeCode:
        return T.ObjrefTC(T.K_NATIVE, id, name)

    def create_string_tc(self, bound: int) -> T.TypeCode:
        return builders.string_tc(bound)

    def create_wstring_tc(self, bound: int) -> T.TypeCode:
        return builders.wstring_tc(bound)

    def create_fixed_tc(self, digits: int, scale: int) -> T.TypeCode:
        return builders.fixed_tc(digits, scale)

    def create_sequence_tc(self, bound: int, element_type: T.TypeCode) -> T.TypeCode:
        return builders.sequence_tc(bound, element_type)

    def create_array_tc(self, length: int, element_type: T.TypeCode) -> T.TypeCode:
        return builders.array_tc(length, element_type)

    def create_recursive_tc(self, id: str) -> T.TypeCode:
        return builders.recursive_tc(id)

    def get_primitive_tc(self, kind: Any) -> T.TypeCode:
        """The TypeCode of a basic kind (``CORBA.tk_long`` and so on)."""
        return T._simple_tc(kind._v)
