// Print omniORB's CDR marshalling of some TypeCodes, as hex (see omniorb_typecodes.json).
// Build: g++ -o tcgen omniorb_typecodes.cc -I/usr/include/omniORB4 -lomniORB4 -lomnithread -lomniDynamic4
#include <omniORB4/CORBA.h>
#include <omniORB4/cdrStream.h>
#include <cstdio>

static void dump(const char* name, CORBA::TypeCode_ptr tc) {
  cdrMemoryStream s;
  CORBA::TypeCode::marshalTypeCode(tc, s);
  const unsigned char* p = (const unsigned char*)s.bufPtr();
  printf("%s ", name);
  for (CORBA::ULong i = 0; i < s.bufSize(); i++) printf("%02x", p[i]);
  printf("\n");
}

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  // struct Node { long v; sequence<Node> kids; }
  {
    CORBA::StructMemberSeq m; m.length(2);
    m[0].name = CORBA::string_dup("v"); m[0].type = CORBA::TypeCode::_duplicate(CORBA::_tc_long);
    CORBA::TypeCode_var rec = orb->create_recursive_tc("IDL:test/Node:1.0");
    m[1].name = CORBA::string_dup("kids"); m[1].type = orb->create_sequence_tc(0, rec);
    CORBA::TypeCode_var node = orb->create_struct_tc("IDL:test/Node:1.0", "Node", m);
    dump("recursive_struct", node);
  }
  // struct Point { long x; long y; }; struct Pair { Point a; Point b; sequence<Point> more; }
  {
    CORBA::StructMemberSeq p; p.length(2);
    p[0].name = CORBA::string_dup("x"); p[0].type = CORBA::TypeCode::_duplicate(CORBA::_tc_long);
    p[1].name = CORBA::string_dup("y"); p[1].type = CORBA::TypeCode::_duplicate(CORBA::_tc_long);
    CORBA::TypeCode_var point = orb->create_struct_tc("IDL:test/Point:1.0", "Point", p);
    CORBA::StructMemberSeq m; m.length(3);
    m[0].name = CORBA::string_dup("a"); m[0].type = CORBA::TypeCode::_duplicate(point);
    m[1].name = CORBA::string_dup("b"); m[1].type = CORBA::TypeCode::_duplicate(point);
    m[2].name = CORBA::string_dup("more"); m[2].type = orb->create_sequence_tc(0, point);
    CORBA::TypeCode_var pair = orb->create_struct_tc("IDL:test/Pair:1.0", "Pair", m);
    dump("repeated_struct", pair);
  }
  // union L switch (long) { case 1: long a; case 2: string b; default: double c; }
  {
    CORBA::UnionMemberSeq u; u.length(3);
    u[0].name = CORBA::string_dup("a"); u[0].label <<= (CORBA::Long)1; u[0].type = CORBA::TypeCode::_duplicate(CORBA::_tc_long);
    u[1].name = CORBA::string_dup("b"); u[1].label <<= (CORBA::Long)2; u[1].type = CORBA::TypeCode::_duplicate(CORBA::_tc_string);
    u[2].name = CORBA::string_dup("c"); u[2].label <<= CORBA::Any::from_octet(0); u[2].type = CORBA::TypeCode::_duplicate(CORBA::_tc_double);
    CORBA::TypeCode_var un = orb->create_union_tc("IDL:test/L:1.0", "L", CORBA::_tc_long, u);
    dump("union_with_default", un);
  }
  // alias, array, fixed, bounded string, objref, except
  {
    CORBA::TypeCode_var arr = orb->create_array_tc(3, CORBA::_tc_short);
    CORBA::TypeCode_var al = orb->create_alias_tc("IDL:test/Triple:1.0", "Triple", arr);
    dump("alias_of_array", al);
    CORBA::TypeCode_var fx = orb->create_fixed_tc(10, 3);
    dump("fixed_10_3", fx);
    CORBA::TypeCode_var bs = orb->create_string_tc(20);
    dump("string_20", bs);
    CORBA::TypeCode_var obj = orb->create_interface_tc("IDL:test/Thing:1.0", "Thing");
    dump("objref", obj);
    CORBA::StructMemberSeq m; m.length(1);
    m[0].name = CORBA::string_dup("why"); m[0].type = CORBA::TypeCode::_duplicate(CORBA::_tc_string);
    CORBA::TypeCode_var ex = orb->create_exception_tc("IDL:test/Oops:1.0", "Oops", m);
    dump("exception", ex);
  }
  // struct Property { string name; any value; }; typedef sequence<Property> PropertySeq;
  {
    CORBA::TypeCode_var pname = orb->create_alias_tc("IDL:omg.org/CosNotification/PropertyName:1.0", "PropertyName", CORBA::_tc_string);
    CORBA::TypeCode_var pvalue = orb->create_alias_tc("IDL:omg.org/CosNotification/PropertyValue:1.0", "PropertyValue", CORBA::_tc_any);
    CORBA::StructMemberSeq m; m.length(2);
    m[0].name = CORBA::string_dup("name"); m[0].type = CORBA::TypeCode::_duplicate(pname);
    m[1].name = CORBA::string_dup("value"); m[1].type = CORBA::TypeCode::_duplicate(pvalue);
    CORBA::TypeCode_var prop = orb->create_struct_tc("IDL:omg.org/CosNotification/Property:1.0", "Property", m);
    CORBA::TypeCode_var seq = orb->create_sequence_tc(0, prop);
    CORBA::TypeCode_var ps = orb->create_alias_tc("IDL:omg.org/CosNotification/PropertySeq:1.0", "PropertySeq", seq);
    dump("property_seq", ps);
  }
  orb->destroy();
  return 0;
}
