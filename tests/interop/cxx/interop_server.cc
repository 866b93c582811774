// omniORB C++ implementation of Interop::Thing, for the interop tests and benchmarks.
//
// Usage: interop_server [-ORB options...]
// Prints the Thing's IOR on the first line of stdout, then serves until killed
// (or until a client calls shutdown through the "shutdown" counter value -1).

#include <iostream>
#include <sstream>
#include <string>
#include "Interop.hh"

static CORBA::ORB_var orb;

Interop::Tree* make_tree(CORBA::Long depth);
std::string describe(const CORBA::Any& a);

class ThingImpl : public POA_Interop::Thing {
 public:
  ThingImpl() : counter_(0), pokes_(0) {}
  char* name() { return CORBA::string_dup("cxx-thing"); }
  CORBA::Long counter() { return counter_; }
  void counter(CORBA::Long v) {
    counter_ = v;
    if (v == -1) orb->shutdown(0);
  }
  Interop::Everything* echo_everything(const Interop::Everything& e) {
    return new Interop::Everything(e);
  }
  Interop::Shape* echo_shape(const Interop::Shape& s) { return new Interop::Shape(s); }
  Interop::Point move(const Interop::Point& p, CORBA::Long& n, CORBA::String_out note) {
    Interop::Point r;
    r.x = p.x + n;
    r.y = p.y + n;
    std::ostringstream text;
    text << "moved by " << n;
    note = CORBA::string_dup(text.str().c_str());
    n = n * 2;
    return r;
  }
  CORBA::LongLong add_ll(CORBA::LongLong a, CORBA::ULongLong b) { return a + (CORBA::LongLong)b; }
  CORBA::WChar* echo_wstring(const CORBA::WChar* w) { return CORBA::wstring_dup(w); }
  Interop::Octets* reverse_octets(const Interop::Octets& data) {
    Interop::Octets* r = new Interop::Octets;
    CORBA::ULong n = data.length();
    r->length(n);
    for (CORBA::ULong i = 0; i < n; ++i) (*r)[i] = data[n - 1 - i];
    return r;
  }
  CORBA::Any* echo_any(const CORBA::Any& a) { return new CORBA::Any(a); }
  CORBA::Any* make_tree_any(CORBA::Long depth) {
    CORBA::Any* a = new CORBA::Any;
    *a <<= make_tree(depth);  // consuming insertion
    return a;
  }
  CORBA::Any* make_point_any(CORBA::Long x, CORBA::Long y) {
    Interop::Point p;
    p.x = x;
    p.y = y;
    CORBA::Any* a = new CORBA::Any;
    *a <<= p;
    return a;
  }
  char* describe_any(const CORBA::Any& a) { return CORBA::string_dup(describe(a).c_str()); }
  Interop::Thing_ptr self_ref() { return _this(); }
  Interop::Thing_ptr echo_ref(Interop::Thing_ptr t) { return Interop::Thing::_duplicate(t); }
  char* call_back(Interop::Callback_ptr cb, const char* text) {
    CORBA::String_var answer = cb->notify(text);
    std::string out = std::string((const char*)answer) + "!";
    return CORBA::string_dup(out.c_str());
  }
  void fail_user(const char* why) { throw Interop::Oops(why, 42); }
  void fail_system() { throw CORBA::BAD_OPERATION(77, CORBA::COMPLETED_YES); }
  void poke(CORBA::Long n) { pokes_ += n; }
  CORBA::Long poked() { return pokes_; }
  Interop::Small* echo_small(const Interop::Small& s) { return new Interop::Small(s); }

 private:
  CORBA::Long counter_;
  CORBA::Long pokes_;
};

int main(int argc, char** argv) {
  try {
    orb = CORBA::ORB_init(argc, argv);
    CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
    ThingImpl* servant = new ThingImpl;
    PortableServer::ObjectId_var id = poa->activate_object(servant);
    CORBA::Object_var ref = poa->id_to_reference(id);
    CORBA::String_var ior = orb->object_to_string(ref);
    std::cout << (const char*)ior << std::endl;
    PortableServer::POAManager_var manager = poa->the_POAManager();
    manager->activate();
    orb->run();
    orb->destroy();
  } catch (CORBA::Exception& ex) {
    std::cerr << "interop_server: CORBA exception " << ex._name() << std::endl;
    return 1;
  }
  return 0;
}
