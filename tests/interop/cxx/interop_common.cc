// Helpers shared by the C++ interop server and client.

#include <sstream>
#include <string>
#include "Interop.hh"

Interop::Tree* make_tree(CORBA::Long depth) {
  Interop::Tree* tree = new Interop::Tree;
  std::ostringstream label;
  label << "n" << depth;
  tree->label = label.str().c_str();
  if (depth > 0) {
    tree->children.length(1);
    Interop::Tree* child = make_tree(depth - 1);
    tree->children[0] = *child;
    delete child;
  }
  return tree;
}

static CORBA::ULong count_nodes(const Interop::Tree& tree) {
  CORBA::ULong n = 1;
  for (CORBA::ULong i = 0; i < tree.children.length(); ++i) n += count_nodes(tree.children[i]);
  return n;
}

std::string describe(const CORBA::Any& a) {
  std::ostringstream out;
  const Interop::Point* point;
  const Interop::Tree* tree;
  CORBA::Long l;
  const char* s;
  if (a >>= point) {
    out << "Point(" << point->x << "," << point->y << ")";
  } else if (a >>= tree) {
    out << "Tree(" << (const char*)tree->label << "," << count_nodes(*tree) << ")";
  } else if (a >>= l) {
    out << "long:" << l;
  } else if (a >>= s) {
    out << "string:" << s;
  } else {
    CORBA::TypeCode_var tc = a.type();
    out << "other:" << (int)tc->kind();
  }
  return out.str();
}

