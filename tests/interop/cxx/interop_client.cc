// omniORB C++ client of Interop::Thing, for the interop tests and benchmarks.
//
// Usage: interop_client IOR            call every operation, print "name=value" lines
//        interop_client IOR bench N    N two-way echo_small calls; print "calls_per_second=X"
//
// Every result line is "key=value"; the Python test compares them with what
// the Python servant must have produced. A failure prints "FAIL key: reason".

#include <iostream>
#include <sstream>
#include <string>
#include <cstdlib>
#include <sys/time.h>
#include "Interop.hh"

extern std::string describe(const CORBA::Any& a);

static CORBA::ORB_var orb;

class CallbackImpl : public POA_Interop::Callback {
 public:
  char* notify(const char* text) {
    std::string out = std::string("cb:") + text;
    return CORBA::string_dup(out.c_str());
  }
};

static double now() {
  struct timeval tv;
  gettimeofday(&tv, 0);
  return tv.tv_sec + tv.tv_usec / 1e6;
}

static std::string wide_to_utf8(const CORBA::WChar* w) {
  std::string out;
  for (; *w; ++w) {
    unsigned long c = (unsigned long)*w;
    if (c < 0x80) {
      out += (char)c;
    } else if (c < 0x800) {
      out += (char)(0xC0 | (c >> 6));
      out += (char)(0x80 | (c & 0x3F));
    } else {
      out += (char)(0xE0 | (c >> 12));
      out += (char)(0x80 | ((c >> 6) & 0x3F));
      out += (char)(0x80 | (c & 0x3F));
    }
  }
  return out;
}

static void run_all(Interop::Thing_ptr thing, PortableServer::POA_ptr poa) {
  CORBA::String_var name = thing->name();
  std::cout << "name=" << (const char*)name << std::endl;
  thing->counter(41);
  std::cout << "counter=" << thing->counter() << std::endl;

  Interop::Point p;
  p.x = 1;
  p.y = 2;
  CORBA::Long n = 5;
  CORBA::String_var note;
  Interop::Point moved = thing->move(p, n, note.out());
  std::cout << "move=" << moved.x << "," << moved.y << "," << n << "," << (const char*)note
            << std::endl;

  std::cout << "add_ll=" << thing->add_ll(-5000000000LL, 18000000000000000000ULL) << std::endl;

  CORBA::WChar wide[] = {0x48, 0xe9, 0x20ac, 0x4e2d, 0};
  CORBA::WString_var w = thing->echo_wstring(wide);
  std::cout << "echo_wstring=" << wide_to_utf8(w) << std::endl;

  Interop::Octets data;
  data.length(4);
  for (CORBA::ULong i = 0; i < 4; ++i) data[i] = (CORBA::Octet)(i * 100);
  Interop::Octets_var reversed = thing->reverse_octets(data);
  std::cout << "reverse_octets=";
  for (CORBA::ULong i = 0; i < reversed->length(); ++i)
    std::cout << (i ? "," : "") << (int)reversed[i];
  std::cout << std::endl;

  Interop::Everything e;
  e.tint = Interop::blue;
  Interop::Point sp;
  sp.x = 3;
  sp.y = 4;
  e.outline.p(sp);
  e.longs.length(3);
  e.longs[0] = -1;
  e.longs[1] = 0;
  e.longs[2] = 2147483647;
  e.points.length(2);
  e.points[0] = sp;
  e.points[1] = p;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) e.grid[i][j] = i * 10 + j;
  e.text = CORBA::string_dup("text");
  e.wide = CORBA::wstring_dup(wide);
  e.big = -9000000000000000000LL;
  e.ubig = 18446744073709551615ULL;
  e.ushort_ = 65535;
  e.dbl = 2.5;
  e.flag = 1;
  e.data.length(2);
  e.data[0] = 0;
  e.data[1] = 255;
  Interop::Everything_var back = thing->echo_everything(e);
  std::cout << "echo_everything=" << (int)back->tint << "," << back->outline.p().x << ","
            << back->longs[2] << "," << back->points.length() << "," << back->grid[1][2] << ","
            << (const char*)back->text << "," << wide_to_utf8(back->wide) << "," << back->big
            << "," << back->ubig << "," << back->ushort_ << "," << back->dbl << ","
            << (int)back->flag << "," << (int)back->data[1] << std::endl;

  Interop::Shape shape;
  shape.label("free");  // the default member
  Interop::Shape_var shape_back = thing->echo_shape(shape);
  std::cout << "echo_shape_default=" << (int)shape_back->_d() << ","
            << (const char*)shape_back->label() << std::endl;
  Interop::Shape radius;
  radius.radius(9);
  shape_back = thing->echo_shape(radius);
  std::cout << "echo_shape_radius=" << shape_back->radius() << std::endl;

  CORBA::Any_var tree_any = thing->make_tree_any(3);
  std::cout << "make_tree_any=" << describe(tree_any) << std::endl;
  CORBA::Any_var echoed = thing->echo_any(tree_any);
  std::cout << "echo_any_tree=" << describe(echoed) << std::endl;
  CORBA::Any_var point_any = thing->make_point_any(7, 8);
  std::cout << "make_point_any=" << describe(point_any) << std::endl;
  CORBA::Any a;
  a <<= sp;
  CORBA::String_var described = thing->describe_any(a);
  std::cout << "describe_any=" << (const char*)described << std::endl;

  Interop::Thing_var self = thing->self_ref();
  CORBA::String_var self_name = self->name();
  std::cout << "self_ref=" << (const char*)self_name << std::endl;
  Interop::Thing_var echoed_ref = thing->echo_ref(self);
  std::cout << "echo_ref_equivalent=" << (int)echoed_ref->_is_equivalent(self) << std::endl;

  CallbackImpl* cb = new CallbackImpl;
  PortableServer::ObjectId_var id = poa->activate_object(cb);
  CORBA::Object_var cb_obj = poa->id_to_reference(id);
  Interop::Callback_var cb_ref = Interop::Callback::_narrow(cb_obj);
  CORBA::String_var called = thing->call_back(cb_ref, "hi");
  std::cout << "call_back=" << (const char*)called << std::endl;

  try {
    thing->fail_user("bad");
    std::cout << "FAIL fail_user: no exception" << std::endl;
  } catch (Interop::Oops& oops) {
    std::cout << "fail_user=" << (const char*)oops.why << "," << oops.code << std::endl;
  }
  try {
    thing->fail_system();
    std::cout << "FAIL fail_system: no exception" << std::endl;
  } catch (CORBA::SystemException& ex) {
    std::cout << "fail_system=" << ex._name() << "," << ex.minor() << ","
              << (int)ex.completed() << std::endl;
  }
  thing->poke(3);
  thing->poke(4);
  std::cout << "poked=" << thing->poked() << std::endl;

  Interop::Small small;
  small.a = 1;
  small.b = 0.5;
  small.c = CORBA::string_dup("small");
  Interop::Small_var back_small = thing->echo_small(small);
  std::cout << "echo_small=" << back_small->a << "," << back_small->b << ","
            << (const char*)back_small->c << std::endl;
  std::cout << "is_a=" << (int)thing->_is_a("IDL:cosnotify.test/Interop/Thing:1.0") << ","
            << (int)thing->_is_a("IDL:cosnotify.test/Interop/Callback:1.0") << std::endl;
  std::cout << "non_existent=" << (int)thing->_non_existent() << std::endl;
}

int main(int argc, char** argv) {
  try {
    orb = CORBA::ORB_init(argc, argv);
    if (argc < 2) {
      std::cerr << "usage: interop_client IOR [bench N | relay]" << std::endl;
      return 2;
    }
    CORBA::Object_var obj = orb->string_to_object(argv[1]);
    Interop::Thing_var thing = Interop::Thing::_narrow(obj);
    if (CORBA::is_nil(thing)) {
      std::cerr << "interop_client: not a Thing" << std::endl;
      return 1;
    }
    CORBA::Object_var poa_obj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(poa_obj);
    PortableServer::POAManager_var manager = poa->the_POAManager();
    manager->activate();
    if (argc >= 4 && std::string(argv[2]) == "bench") {
      long calls = atol(argv[3]);
      Interop::Small small;
      small.a = 1;
      small.b = 2.0;
      small.c = CORBA::string_dup("abc");
      for (int i = 0; i < 200; ++i) Interop::Small_var r = thing->echo_small(small);
      double start = now();
      for (long i = 0; i < calls; ++i) Interop::Small_var r = thing->echo_small(small);
      double elapsed = now() - start;
      std::cout << "calls_per_second=" << calls / elapsed << std::endl;
    } else if (argc >= 3 && std::string(argv[2]) == "relay") {
      // One echo_small per line of stdin, its answer (or exception) per line of stdout.
      std::string line;
      while (std::getline(std::cin, line)) {
        Interop::Small small;
        small.a = 1;
        small.b = 2.0;
        small.c = CORBA::string_dup(line.c_str());
        try {
          Interop::Small_var r = thing->echo_small(small);
          std::cout << "echo=" << (const char*)r->c << std::endl;
        } catch (CORBA::Exception& ex) {
          std::cout << "FAIL " << ex._name() << std::endl;
        }
      }
    } else {
      run_all(thing, poa);
    }
    orb->destroy();
  } catch (CORBA::Exception& ex) {
    std::cout << "FAIL exception: " << ex._name() << std::endl;
    return 1;
  }
  return 0;
}
