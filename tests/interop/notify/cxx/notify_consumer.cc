// notify_consumer: every consumer kind of the interop tests and of remote_bench.
//
//   notify_consumer MODE (--factory URL | --channel IOR) [options]
//
// MODE is one of
//   structured-push  StructuredPushConsumer; --filter TEXT adds a filter made by the
//                    channel's FilterFactory in grammar --grammar G (EXTENDED_TCL by
//                    default): constraint TEXT for type Test/Counter; Test/End passes
//                    by TRUE, in the same filter or, for another grammar, in a second,
//                    EXTENDED_TCL filter
//   sequence-push    SequencePushConsumer; --batch B and --pacing T (TimeT, 100 ns
//                    units) are set with set_qos on its proxy; stops after --expect N
//   structured-pull  StructuredProxyPullSupplier: pull_structured_event, then
//                    try_pull_structured_event (falling back to pull when empty)
//   sequence-pull    SequenceProxyPullSupplier with MaximumBatchSize --batch:
//                    pull_structured_events(--max), then try_pull_structured_events(--try-max)
//   cos-push         CosEventComm::PushConsumer via CosEventChannelAdmin (Any longs, -1 ends)
//   cos-pull         CosEventComm::PullConsumer via CosEventChannelAdmin (pull, try_pull)
//
// --direct (structured-push, cos-push) connects to no channel: it prints
// consumer=IOR for a supplier's --consumer (the benchmarks' no-channel floor).
// --destroy destroys the channel at the end (benchmarks make one channel per run).
// It prints "ready=1" once connected. Pull modes then wait for a line on stdin
// before pulling. Structured modes stop at the Test/End event, Any modes at -1,
// sequence-push after --expect events. It prints received=, numbers= (unless
// --quiet), in_order=, first_ns=, last_ns= (CLOCK_MONOTONIC) and mode details.
#include "notify_common.hh"

using namespace notify_common;
namespace CA = CosNotifyChannelAdmin;

namespace {

Monitor monitor;
Tally tally;                    // under monitor.mutex
std::vector<CORBA::ULong> batches;
bool finished = false;
bool disconnected = false;
long long first_ns = 0, last_ns = 0;
long expect = -1;

void record(CORBA::Long n) {    // with monitor.mutex held
  long long now = now_ns();
  if (tally.numbers.empty()) first_ns = now;
  last_ns = now;
  tally.numbers.push_back(n);
  if (expect >= 0 && (long)tally.numbers.size() >= expect) finished = true;
}

void record_event(const CosNotification::StructuredEvent& event) {
  if (is_end(event)) {
    finished = true;
  } else {
    record(number_of(event));
  }
}

class StructuredConsumer : public POA_CosNotifyComm::StructuredPushConsumer {
 public:
  void push_structured_event(const CosNotification::StructuredEvent& event) {
    omni_mutex_lock lock(monitor.mutex);
    record_event(event);
    monitor.notify();
  }
  void offer_change(const CosNotification::EventTypeSeq&, const CosNotification::EventTypeSeq&) {}
  void disconnect_structured_push_consumer() {
    omni_mutex_lock lock(monitor.mutex);
    disconnected = true;
    monitor.notify();
  }
};

class SequenceConsumer : public POA_CosNotifyComm::SequencePushConsumer {
 public:
  void push_structured_events(const CosNotification::EventBatch& events) {
    omni_mutex_lock lock(monitor.mutex);
    batches.push_back(events.length());
    for (CORBA::ULong i = 0; i < events.length(); ++i) record_event(events[i]);
    monitor.notify();
  }
  void offer_change(const CosNotification::EventTypeSeq&, const CosNotification::EventTypeSeq&) {}
  void disconnect_sequence_push_consumer() {
    omni_mutex_lock lock(monitor.mutex);
    disconnected = true;
    monitor.notify();
  }
};

class AnyConsumer : public POA_CosEventComm::PushConsumer {
 public:
  void push(const CORBA::Any& data) {
    CORBA::Long n = -2;
    data >>= n;
    omni_mutex_lock lock(monitor.mutex);
    if (n == -1) {
      finished = true;
    } else {
      record(n);
    }
    monitor.notify();
  }
  void disconnect_push_consumer() {
    omni_mutex_lock lock(monitor.mutex);
    disconnected = true;
    monitor.notify();
  }
};

// Destroy the channel (--destroy); a failure is reported, not fatal: the run is done.
template <class Channel>
void destroy(Channel& channel) {
  try {
    channel->destroy();
  } catch (CORBA::Exception& exc) {
    std::cout << "destroy=" << exception_name(exc) << std::endl;
  }
}

bool wait_finished(const Args& args) {
  return monitor.wait([] { return finished || disconnected; }, arg_long(args, "wait", 50));
}

CosNotifyFilter::ConstraintExp typed_constraint(const char* type, const char* text) {
  CosNotifyFilter::ConstraintExp constraint;
  constraint.event_types.length(1);
  constraint.event_types[0].domain_name = CORBA::string_dup("Test");
  constraint.event_types[0].type_name = CORBA::string_dup(type);
  constraint.constraint_expr = CORBA::string_dup(text);
  return constraint;
}

void add_filter(CA::EventChannel_ptr channel, CA::ProxySupplier_ptr proxy, const std::string& text,
                const std::string& grammar) {
  CosNotifyFilter::FilterFactory_var factory = channel->default_filter_factory();
  bool tcl = grammar.empty() || grammar == "EXTENDED_TCL";
  CosNotifyFilter::Filter_var filter = factory->create_filter(tcl ? "EXTENDED_TCL" : grammar.c_str());
  CORBA::String_var made_as = filter->constraint_grammar();
  CosNotifyFilter::ConstraintExpSeq constraints;
  constraints.length(tcl ? 2 : 1);
  constraints[0] = typed_constraint("Counter", text.c_str());
  if (tcl) constraints[1] = typed_constraint("End", "TRUE");
  CosNotifyFilter::ConstraintInfoSeq_var added = filter->add_constraints(constraints);
  CORBA::ULong count = added->length();
  CosNotifyFilter::FilterID id = proxy->add_filter(filter);
  if (!tcl) {  // the end marker passes through a second filter (filters are ORed)
    CosNotifyFilter::Filter_var end = factory->create_filter("EXTENDED_TCL");
    CosNotifyFilter::ConstraintExpSeq end_constraints;
    end_constraints.length(1);
    end_constraints[0] = typed_constraint("End", "TRUE");
    CosNotifyFilter::ConstraintInfoSeq_var end_added = end->add_constraints(end_constraints);
    count += end_added->length();
    proxy->add_filter(end);
  }
  std::cout << "filter_id=" << id << "\ngrammar=" << made_as.in() << "\nconstraints=" << count
            << std::endl;
}

void set_batching(CA::ProxySupplier_ptr proxy, const Args& args) {
  CosNotification::QoSProperties qos;
  long batch = arg_long(args, "batch", 0);
  std::string pacing = arg(args, "pacing");
  if (batch > 0) {
    qos.length(qos.length() + 1);
    qos[qos.length() - 1] = long_property("MaximumBatchSize", batch);
  }
  if (!pacing.empty()) {
    qos.length(qos.length() + 1);
    qos[qos.length() - 1].name = CORBA::string_dup("PacingInterval");
    qos[qos.length() - 1].value <<= (CORBA::ULongLong)std::strtoull(pacing.c_str(), 0, 10);
  }
  if (qos.length()) proxy->set_qos(qos);
  // Read back what the proxy now reports.
  CosNotification::QoSProperties_var now = proxy->get_qos();
  for (CORBA::ULong i = 0; i < now->length(); ++i) {
    std::string name = now[i].name.in();
    if (name == "MaximumBatchSize") {
      CORBA::Long value;
      if (now[i].value >>= value) std::cout << "qos.MaximumBatchSize=" << value << std::endl;
    } else if (name == "PacingInterval") {
      CORBA::ULongLong value;
      if (now[i].value >>= value) std::cout << "qos.PacingInterval=" << value << std::endl;
    }
  }
}

void print_result(const Args& args) {
  omni_mutex_lock lock(monitor.mutex);
  bool in_order = true;
  for (size_t i = 1; i < tally.numbers.size(); ++i)
    if (tally.numbers[i] <= tally.numbers[i - 1]) in_order = false;
  std::cout << "received=" << tally.numbers.size() << "\nfinished=" << (finished ? 1 : 0)
            << "\ndisconnected=" << (disconnected ? 1 : 0) << "\nin_order=" << (in_order ? 1 : 0)
            << "\nfirst_ns=" << first_ns << "\nlast_ns=" << last_ns << std::endl;
  if (!args.count("quiet")) tally.print("numbers");
  if (!batches.empty()) {
    std::cout << "batches=";
    for (size_t i = 0; i < batches.size(); ++i) std::cout << (i ? "," : "") << batches[i];
    std::cout << std::endl;
  }
}

// --direct: no channel at all; the consumer prints its own reference as
// consumer=IOR for a supplier to push to straight (the benchmarks' floor).
int direct(CORBA::ORB_ptr orb, PortableServer::ServantBase* servant, PortableServer::POA_ptr poa,
           const Args& args) {
  PortableServer::ObjectId_var oid = poa->activate_object(servant);
  CORBA::Object_var ref = poa->id_to_reference(oid);
  CORBA::String_var ior = orb->object_to_string(ref);
  std::cout << "consumer=" << ior.in() << "\nready=1" << std::endl;
  wait_finished(args);
  print_result(args);
  return 0;
}

int structured_push(CORBA::ORB_ptr orb, PortableServer::POA_ptr poa, const Args& args) {
  if (args.count("direct")) return direct(orb, new StructuredConsumer, poa, args);
  CA::EventChannel_var channel = channel_from(orb, args);
  CA::ConsumerAdmin_var admin = channel->default_consumer_admin();
  CA::ProxyID id;
  CA::ProxySupplier_var proxy = admin->obtain_notification_push_supplier(CA::STRUCTURED_EVENT, id);
  CA::StructuredProxyPushSupplier_var push = CA::StructuredProxyPushSupplier::_narrow(proxy);
  std::string filter = arg(args, "filter");
  if (!filter.empty()) add_filter(channel, proxy, filter, arg(args, "grammar"));
  StructuredConsumer* servant = new StructuredConsumer;
  PortableServer::ObjectId_var oid = poa->activate_object(servant);
  CosNotifyComm::StructuredPushConsumer_var ref = servant->_this();
  push->connect_structured_push_consumer(ref);
  std::cout << "proxy_id=" << id << "\nready=1" << std::endl;
  wait_finished(args);
  print_result(args);
  push->disconnect_structured_push_supplier();
  if (args.count("destroy")) destroy(channel);
  return 0;
}

int sequence_push(CORBA::ORB_ptr orb, PortableServer::POA_ptr poa, const Args& args) {
  CA::EventChannel_var channel = channel_from(orb, args);
  CA::ConsumerAdmin_var admin = channel->default_consumer_admin();
  CA::ProxyID id;
  CA::ProxySupplier_var proxy = admin->obtain_notification_push_supplier(CA::SEQUENCE_EVENT, id);
  CA::SequenceProxyPushSupplier_var push = CA::SequenceProxyPushSupplier::_narrow(proxy);
  set_batching(proxy, args);
  std::string filter = arg(args, "filter");
  if (!filter.empty()) add_filter(channel, proxy, filter, arg(args, "grammar"));
  SequenceConsumer* servant = new SequenceConsumer;
  PortableServer::ObjectId_var oid = poa->activate_object(servant);
  CosNotifyComm::SequencePushConsumer_var ref = servant->_this();
  push->connect_sequence_push_consumer(ref);
  std::cout << "proxy_id=" << id << "\nready=1" << std::endl;
  wait_finished(args);
  print_result(args);
  push->disconnect_sequence_push_supplier();
  if (args.count("destroy")) destroy(channel);
  return 0;
}

int structured_pull(CORBA::ORB_ptr orb, const Args& args) {
  CA::EventChannel_var channel = channel_from(orb, args);
  CA::ConsumerAdmin_var admin = channel->default_consumer_admin();
  CA::ProxyID id;
  CA::ProxySupplier_var proxy = admin->obtain_notification_pull_supplier(CA::STRUCTURED_EVENT, id);
  CA::StructuredProxyPullSupplier_var pull = CA::StructuredProxyPullSupplier::_narrow(proxy);
  pull->connect_structured_pull_consumer(CosNotifyComm::StructuredPullConsumer::_nil());
  std::cout << "proxy_id=" << id << "\nready=1" << std::endl;
  wait_for_go();
  long pulled = 0, tried = 0, empty = 0;
  CosNotification::StructuredEvent_var event = pull->pull_structured_event();
  ++pulled;
  while (true) {
    {
      omni_mutex_lock lock(monitor.mutex);
      record_event(event.in());
      if (finished) break;
    }
    CORBA::Boolean has_event = 0;
    event = pull->try_pull_structured_event(has_event);
    if (has_event) {
      ++tried;
    } else {
      ++empty;
      event = pull->pull_structured_event();
      ++pulled;
    }
  }
  CORBA::Boolean has_event = 1;
  event = pull->try_pull_structured_event(has_event);
  std::cout << "pulled=" << pulled << "\ntry_pulled=" << tried << "\ntry_empty=" << empty
            << "\nafter_end_has_event=" << (has_event ? 1 : 0) << std::endl;
  print_result(args);
  pull->disconnect_structured_pull_supplier();
  return 0;
}

int sequence_pull(CORBA::ORB_ptr orb, const Args& args) {
  CA::EventChannel_var channel = channel_from(orb, args);
  CA::ConsumerAdmin_var admin = channel->default_consumer_admin();
  CA::ProxyID id;
  CA::ProxySupplier_var proxy = admin->obtain_notification_pull_supplier(CA::SEQUENCE_EVENT, id);
  CA::SequenceProxyPullSupplier_var pull = CA::SequenceProxyPullSupplier::_narrow(proxy);
  set_batching(proxy, args);
  pull->connect_sequence_pull_consumer(CosNotifyComm::SequencePullConsumer::_nil());
  std::cout << "proxy_id=" << id << "\nready=1" << std::endl;
  wait_for_go();
  CORBA::Long max = arg_long(args, "max", 100), try_max = arg_long(args, "try-max", 5);
  std::vector<std::string> calls;
  CosNotification::EventBatch_var events = pull->pull_structured_events(max);
  calls.push_back("pull:");
  while (true) {
    {
      omni_mutex_lock lock(monitor.mutex);
      std::ostringstream size;
      size << events->length();
      calls.back() += size.str();
      batches.push_back(events->length());
      for (CORBA::ULong i = 0; i < events->length(); ++i) record_event(events[i]);
      if (finished) break;
    }
    CORBA::Boolean has_event = 0;
    events = pull->try_pull_structured_events(try_max, has_event);
    calls.push_back("try:");
    if (!has_event) {
      calls.back() += "0";
      events = pull->pull_structured_events(max);
      calls.push_back("pull:");
    }
  }
  std::cout << "calls=";
  for (size_t i = 0; i < calls.size(); ++i) std::cout << (i ? "," : "") << calls[i];
  std::cout << std::endl;
  print_result(args);
  pull->disconnect_sequence_pull_supplier();
  return 0;
}

CosEventChannelAdmin::EventChannel_ptr cos_channel(CORBA::ORB_ptr orb, const Args& args) {
  std::string channel = arg(args, "channel");
  if (channel.empty()) {
    CA::EventChannel_var made = channel_from(orb, args);
    return CosEventChannelAdmin::EventChannel::_duplicate(made);
  }
  CORBA::Object_var obj = orb->string_to_object(channel.c_str());
  return CosEventChannelAdmin::EventChannel::_narrow(obj);
}

int cos_push(CORBA::ORB_ptr orb, PortableServer::POA_ptr poa, const Args& args) {
  if (args.count("direct")) return direct(orb, new AnyConsumer, poa, args);
  CosEventChannelAdmin::EventChannel_var channel = cos_channel(orb, args);
  CosEventChannelAdmin::ConsumerAdmin_var admin = channel->for_consumers();
  CosEventChannelAdmin::ProxyPushSupplier_var proxy = admin->obtain_push_supplier();
  AnyConsumer* servant = new AnyConsumer;
  PortableServer::ObjectId_var oid = poa->activate_object(servant);
  CosEventComm::PushConsumer_var ref = servant->_this();
  proxy->connect_push_consumer(ref);
  std::string again = "none";
  try {
    proxy->connect_push_consumer(ref);
  } catch (CosEventChannelAdmin::AlreadyConnected&) {
    again = "AlreadyConnected";
  }
  std::cout << "connect_again=" << again << "\nready=1" << std::endl;
  wait_finished(args);
  print_result(args);
  proxy->disconnect_push_supplier();
  if (args.count("destroy")) destroy(channel);
  return 0;
}

int cos_pull(CORBA::ORB_ptr orb, const Args& args) {
  CosEventChannelAdmin::EventChannel_var channel = cos_channel(orb, args);
  CosEventChannelAdmin::ConsumerAdmin_var admin = channel->for_consumers();
  CosEventChannelAdmin::ProxyPullSupplier_var proxy = admin->obtain_pull_supplier();
  proxy->connect_pull_consumer(CosEventComm::PullConsumer::_nil());
  std::cout << "ready=1" << std::endl;
  wait_for_go();
  long pulled = 0, tried = 0, empty = 0;
  CORBA::Any_var data = proxy->pull();
  ++pulled;
  while (true) {
    CORBA::Long n = -2;
    data.in() >>= n;
    {
      omni_mutex_lock lock(monitor.mutex);
      if (n == -1) {
        finished = true;
        break;
      }
      record(n);
    }
    CORBA::Boolean has_event = 0;
    data = proxy->try_pull(has_event);
    if (has_event) {
      ++tried;
    } else {
      ++empty;
      data = proxy->pull();
      ++pulled;
    }
  }
  CORBA::Boolean has_event = 1;
  data = proxy->try_pull(has_event);
  std::cout << "pulled=" << pulled << "\ntry_pulled=" << tried << "\ntry_empty=" << empty
            << "\nafter_end_has_event=" << (has_event ? 1 : 0) << std::endl;
  print_result(args);
  proxy->disconnect_pull_supplier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CORBA::ORB_var orb = init_orb(argc, argv);
  if (argc < 2) {
    std::cerr << "usage: notify_consumer MODE (--factory URL | --channel IOR) [options]\n";
    return 2;
  }
  std::string mode = argv[1];
  Args args = parse_args(argc, argv, 2);
  watchdog(args);
  expect = arg_long(args, "expect", -1);
  int status = 2;
  try {
    PortableServer::POA_var poa = root_poa(orb);
    if (mode == "structured-push") status = structured_push(orb, poa, args);
    else if (mode == "sequence-push") status = sequence_push(orb, poa, args);
    else if (mode == "structured-pull") status = structured_pull(orb, args);
    else if (mode == "sequence-pull") status = sequence_pull(orb, args);
    else if (mode == "cos-push") status = cos_push(orb, poa, args);
    else if (mode == "cos-pull") status = cos_pull(orb, args);
    else std::cerr << "unknown mode " << mode << std::endl;
  } catch (CORBA::Exception& exc) {
    std::cout << "FAIL " << exception_name(exc) << std::endl;
    status = 1;
  }
  orb->destroy();
  return status;
}
