// Shared helpers of the C++ notification interop programs (omniORB 4.2, COS stubs).
//
// Every program prints "key=value" lines on stdout (read by the Python tests and
// benchmarks/remote_bench.py), "FAIL reason" lines on failure, and is killed by
// SIGALRM after --timeout seconds (default 60) so that it can never hang a test.
#ifndef NOTIFY_COMMON_HH
#define NOTIFY_COMMON_HH

#include <omniORB4/CORBA.h>
#include <omnithread.h>

// From Debian's libcos4-dev: build with -I/usr/include/COS.
#include <CosEventChannelAdmin.hh>
#include <CosEventComm.hh>
#include <CosNotification.hh>
#include <CosNotifyChannelAdmin.hh>
#include <CosNotifyComm.hh>
#include <CosNotifyFilter.hh>

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace notify_common {

typedef std::map<std::string, std::string> Args;

// "--key value" pairs after argv[first]; a lone "--flag" maps to "1".
inline Args parse_args(int argc, char** argv, int first) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string key = argv[i];
    if (key.compare(0, 2, "--") != 0) continue;
    key = key.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).compare(0, 2, "--") != 0) {
      args[key] = argv[++i];
    } else {
      args[key] = "1";
    }
  }
  return args;
}

inline std::string arg(const Args& args, const std::string& key, const std::string& fallback = "") {
  Args::const_iterator found = args.find(key);
  return found == args.end() ? fallback : found->second;
}

inline long arg_long(const Args& args, const std::string& key, long fallback) {
  std::string text = arg(args, key);
  return text.empty() ? fallback : std::atol(text.c_str());
}

// Nanoseconds on CLOCK_MONOTONIC: one clock for every process of the machine.
inline long long now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// An ORB whose servants listen on loopback only; calls time out after 20 s.
inline CORBA::ORB_ptr init_orb(int& argc, char** argv) {
  const char* options[][2] = {{"endPoint", "giop:tcp:127.0.0.1:"},
                              {"clientCallTimeOutPeriod", "20000"},
                              {0, 0}};
  return CORBA::ORB_init(argc, argv, "omniORB4", options);
}

inline PortableServer::POA_ptr root_poa(CORBA::ORB_ptr orb) {
  CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
  PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
  PortableServer::POAManager_var manager = poa->the_POAManager();
  manager->activate();
  return poa._retn();
}

inline void watchdog(const Args& args) { alarm((unsigned)arg_long(args, "timeout", 60)); }

// The channel: --channel IOR/URL, or a new one from --factory URL.
inline CosNotifyChannelAdmin::EventChannel_ptr channel_from(CORBA::ORB_ptr orb, const Args& args) {
  std::string channel = arg(args, "channel");
  if (!channel.empty()) {
    CORBA::Object_var obj = orb->string_to_object(channel.c_str());
    return CosNotifyChannelAdmin::EventChannel::_narrow(obj);
  }
  CORBA::Object_var obj = orb->string_to_object(arg(args, "factory").c_str());
  CosNotifyChannelAdmin::EventChannelFactory_var factory =
      CosNotifyChannelAdmin::EventChannelFactory::_narrow(obj);
  CosNotification::QoSProperties qos;
  CosNotification::AdminProperties admin;
  CosNotifyChannelAdmin::ChannelID id;
  CosNotifyChannelAdmin::EventChannel_var made = factory->create_channel(qos, admin, id);
  CORBA::String_var ior = orb->object_to_string(made);
  std::cout << "channel_id=" << id << "\nchannel=" << ior.in() << std::endl;
  return made._retn();
}

// The OES node of event n, when events carry one (notify_supplier --nodes).
inline const char* counter_node(CORBA::Long n) {
  static const char* const nodes[] = {"\\Asia", "\\Asia\\India", "\\Asia\\India\\Calcutta",
                                      "\\Europe\\France"};
  return nodes[(n < 0 ? -n : n) % 4];
}

// A structured event of type Test/Counter with filterable field n (also the body),
// and with `nodes` a second filterable field, node: an OES pathname (counter_node).
inline CosNotification::StructuredEvent counter_event(CORBA::Long n, const char* type = "Counter",
                                                      bool nodes = false) {
  CosNotification::StructuredEvent event;
  event.header.fixed_header.event_type.domain_name = CORBA::string_dup("Test");
  event.header.fixed_header.event_type.type_name = CORBA::string_dup(type);
  std::ostringstream name;
  name << "e" << n;
  event.header.fixed_header.event_name = CORBA::string_dup(name.str().c_str());
  event.filterable_data.length(nodes ? 2 : 1);
  event.filterable_data[0].name = CORBA::string_dup("n");
  event.filterable_data[0].value <<= n;
  if (nodes) {
    event.filterable_data[1].name = CORBA::string_dup("node");
    event.filterable_data[1].value <<= counter_node(n);
  }
  event.remainder_of_body <<= n;
  return event;
}

inline bool is_end(const CosNotification::StructuredEvent& event) {
  return std::string(event.header.fixed_header.event_type.type_name.in()) == "End";
}

// The n field of a counter event (-1 if absent).
inline CORBA::Long number_of(const CosNotification::StructuredEvent& event) {
  for (CORBA::ULong i = 0; i < event.filterable_data.length(); ++i) {
    if (std::string(event.filterable_data[i].name.in()) == "n") {
      CORBA::Long n;
      if (event.filterable_data[i].value >>= n) return n;
    }
  }
  return -1;
}

inline CosNotification::Property long_property(const char* name, CORBA::Long value) {
  CosNotification::Property property;
  property.name = CORBA::string_dup(name);
  property.value <<= value;
  return property;
}

// Numbers received, printed as "a,b,c" and checked against an expected ascending range.
struct Tally {
  std::vector<CORBA::Long> numbers;
  void print(const char* key) const {
    std::cout << key << "=";
    for (size_t i = 0; i < numbers.size(); ++i) std::cout << (i ? "," : "") << numbers[i];
    std::cout << std::endl;
  }
};

// A mutex and condition: servants change state under it, main waits on a predicate.
class Monitor {
 public:
  Monitor() : cond_(&mutex) {}
  omni_mutex mutex;
  void notify() { cond_.broadcast(); }  // call with mutex held
  // Wait (up to seconds) until pred() holds; returns pred().
  template <class Pred>
  bool wait(Pred pred, long seconds) {
    omni_mutex_lock lock(mutex);
    unsigned long s, ns;
    omni_thread::get_time(&s, &ns, seconds, 0);
    while (!pred()) {
      if (!cond_.timedwait(s, ns)) return pred();
    }
    return true;
  }

 private:
  omni_condition cond_;
};

// Reads one line from stdin: the test says "go" once the supplier has finished.
inline void wait_for_go() {
  std::string line;
  std::getline(std::cin, line);
}

inline std::string exception_name(const CORBA::Exception& exc) {
  std::string name = exc._name();
  const CORBA::SystemException* sys = CORBA::SystemException::_downcast(&exc);
  if (sys) {
    std::ostringstream out;
    out << name << "(minor " << sys->minor() << ")";
    return out.str();
  }
  return name;
}

}  // namespace notify_common

#endif
