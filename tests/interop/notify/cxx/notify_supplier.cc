// notify_supplier: every supplier kind of the interop tests and of remote_bench.
//
//   notify_supplier MODE --channel IOR [--count N] [options]
//
// MODE is one of
//   structured  StructuredProxyPushConsumer: pushes Test/Counter events n = 0..N-1,
//               then one Test/End event (unless --no-end)
//   sequence    SequenceProxyPushConsumer: the same events in sequences of --batch
//               (default 100), Test/End in a sequence of its own
//   cos-push    CosEventComm::PushSupplier via CosEventChannelAdmin: Any longs
//               0..N-1, then -1
//   cos-pull    CosEventComm::PullSupplier servant that the channel pulls from
//               (try_pull and pull): Any longs 0..N-1, then -1
//
// With --nodes (structured, sequence) each Test/Counter event also carries a
// filterable string `node`, an OES pathname (notify_common.hh counter_node).
// With --consumer IOR (structured, cos-push) it pushes straight to that consumer,
// no channel between (the benchmarks' floor).
//
// It prints start_ns= (CLOCK_MONOTONIC before the first push) and end_ns=, and
// pushed= (or pulled_by_channel= with try_pull_calls= for cos-pull).
#include "notify_common.hh"

using namespace notify_common;
namespace CA = CosNotifyChannelAdmin;

namespace {

// Disconnect at the end; the channel may be gone already (a benchmark consumer
// destroys it as soon as it has every event).
template <class Body>
void disconnect(Body body) {
  try {
    body();
  } catch (CORBA::OBJECT_NOT_EXIST&) {
    std::cout << "disconnect=gone" << std::endl;
  }
}

void report(long count, long long start, long long end) {
  std::cout << "pushed=" << count << "\nstart_ns=" << start << "\nend_ns=" << end << std::endl;
}

// The timed loops, shared by the channel and the --consumer (no channel) cases;
// `push` is a StructuredPushConsumer or a PushConsumer: a proxy or the consumer itself.
template <class Push>
void push_structured(Push push, long count, const Args& args) {
  // Build the events first so that the timed loop only pushes.
  std::vector<CosNotification::StructuredEvent> events;
  events.reserve(count);
  bool nodes = args.count("nodes") > 0;
  for (long n = 0; n < count; ++n) events.push_back(counter_event((CORBA::Long)n, "Counter", nodes));
  long long start = now_ns();
  for (long n = 0; n < count; ++n) push->push_structured_event(events[n]);
  if (!args.count("no-end")) push->push_structured_event(counter_event(-1, "End"));
  report(count, start, now_ns());
}

template <class Push>
void push_anys(Push push, long count) {
  CORBA::Any data;
  long long start = now_ns();
  for (long n = 0; n < count; ++n) {
    data <<= (CORBA::Long)n;
    push->push(data);
  }
  data <<= (CORBA::Long)-1;
  push->push(data);
  report(count, start, now_ns());
}

// --consumer IOR: push straight to that consumer, with no channel between.
int structured_direct(CORBA::ORB_ptr orb, const Args& args) {
  CORBA::Object_var obj = orb->string_to_object(arg(args, "consumer").c_str());
  CosNotifyComm::StructuredPushConsumer_var push = CosNotifyComm::StructuredPushConsumer::_narrow(obj);
  push_structured(push.in(), arg_long(args, "count", 100), args);
  return 0;
}

int structured(CORBA::ORB_ptr orb, const Args& args) {
  if (args.count("consumer")) return structured_direct(orb, args);
  long count = arg_long(args, "count", 100);
  CA::EventChannel_var channel = channel_from(orb, args);
  CA::SupplierAdmin_var admin = channel->default_supplier_admin();
  CA::ProxyID id;
  CA::ProxyConsumer_var proxy = admin->obtain_notification_push_consumer(CA::STRUCTURED_EVENT, id);
  CA::StructuredProxyPushConsumer_var push = CA::StructuredProxyPushConsumer::_narrow(proxy);
  push->connect_structured_push_supplier(CosNotifyComm::StructuredPushSupplier::_nil());
  push_structured(push.in(), count, args);
  disconnect([&] { push->disconnect_structured_push_consumer(); });
  return 0;
}

int sequence(CORBA::ORB_ptr orb, const Args& args) {
  long count = arg_long(args, "count", 100), batch = arg_long(args, "batch", 100);
  CA::EventChannel_var channel = channel_from(orb, args);
  CA::SupplierAdmin_var admin = channel->default_supplier_admin();
  CA::ProxyID id;
  CA::ProxyConsumer_var proxy = admin->obtain_notification_push_consumer(CA::SEQUENCE_EVENT, id);
  CA::SequenceProxyPushConsumer_var push = CA::SequenceProxyPushConsumer::_narrow(proxy);
  push->connect_sequence_push_supplier(CosNotifyComm::SequencePushSupplier::_nil());
  std::vector<CosNotification::EventBatch> sequences;
  for (long n = 0; n < count; n += batch) {
    CosNotification::EventBatch events;
    long size = count - n < batch ? count - n : batch;
    events.length((CORBA::ULong)size);
    for (long i = 0; i < size; ++i)
      events[(CORBA::ULong)i] = counter_event((CORBA::Long)(n + i), "Counter", args.count("nodes") > 0);
    sequences.push_back(events);
  }
  long long start = now_ns();
  for (size_t i = 0; i < sequences.size(); ++i) push->push_structured_events(sequences[i]);
  if (!args.count("no-end")) {
    CosNotification::EventBatch end;
    end.length(1);
    end[0] = counter_event(-1, "End");
    push->push_structured_events(end);
  }
  long long end = now_ns();
  std::cout << "sequences=" << sequences.size() << std::endl;
  report(count, start, end);
  disconnect([&] { push->disconnect_sequence_push_consumer(); });
  return 0;
}

CosEventChannelAdmin::EventChannel_ptr cos_channel(CORBA::ORB_ptr orb, const Args& args) {
  CORBA::Object_var obj = orb->string_to_object(arg(args, "channel").c_str());
  return CosEventChannelAdmin::EventChannel::_narrow(obj);
}

int cos_push_direct(CORBA::ORB_ptr orb, const Args& args) {
  CORBA::Object_var obj = orb->string_to_object(arg(args, "consumer").c_str());
  CosEventComm::PushConsumer_var push = CosEventComm::PushConsumer::_narrow(obj);
  push_anys(push.in(), arg_long(args, "count", 100));
  return 0;
}

int cos_push(CORBA::ORB_ptr orb, const Args& args) {
  if (args.count("consumer")) return cos_push_direct(orb, args);
  long count = arg_long(args, "count", 100);
  CosEventChannelAdmin::EventChannel_var channel = cos_channel(orb, args);
  CosEventChannelAdmin::SupplierAdmin_var admin = channel->for_suppliers();
  CosEventChannelAdmin::ProxyPushConsumer_var proxy = admin->obtain_push_consumer();
  proxy->connect_push_supplier(CosEventComm::PushSupplier::_nil());
  push_anys(proxy.in(), count);
  disconnect([&] { proxy->disconnect_push_consumer(); });
  return 0;
}

// The channel pulls from this servant: try_pull hands out the next value, or
// has_event FALSE once all are gone; pull blocks until a value or disconnection.
class PullSupplier : public POA_CosEventComm::PullSupplier {
 public:
  explicit PullSupplier(long count) : count_(count) {}
  CORBA::Any* pull() {
    {
      omni_mutex_lock lock(monitor.mutex);
      ++pull_calls;
      if (handed_ <= count_) return next();
    }
    monitor.wait([this] { return disconnected; }, 30);
    throw CosEventComm::Disconnected();
  }
  CORBA::Any* try_pull(CORBA::Boolean& has_event) {
    omni_mutex_lock lock(monitor.mutex);
    ++try_pull_calls;
    if (handed_ > count_) {
      ++empty_after_end;
      monitor.notify();
      has_event = 0;
      return new CORBA::Any;
    }
    has_event = 1;
    return next();
  }
  void disconnect_pull_supplier() {
    omni_mutex_lock lock(monitor.mutex);
    disconnected = true;
    monitor.notify();
  }
  Monitor monitor;
  long pull_calls = 0, try_pull_calls = 0, empty_after_end = 0;
  bool disconnected = false;
  long handed() { return handed_; }

 private:
  CORBA::Any* next() {  // with the mutex held
    CORBA::Any* data = new CORBA::Any;
    *data <<= (CORBA::Long)(handed_ < count_ ? handed_ : -1);
    ++handed_;
    monitor.notify();
    return data;
  }
  long count_;
  long handed_ = 0;
};

int cos_pull(CORBA::ORB_ptr orb, PortableServer::POA_ptr poa, const Args& args) {
  long count = arg_long(args, "count", 100);
  CosEventChannelAdmin::EventChannel_var channel = cos_channel(orb, args);
  CosEventChannelAdmin::SupplierAdmin_var admin = channel->for_suppliers();
  CosEventChannelAdmin::ProxyPullConsumer_var proxy = admin->obtain_pull_consumer();
  PullSupplier* servant = new PullSupplier(count);
  PortableServer::ObjectId_var oid = poa->activate_object(servant);
  CosEventComm::PullSupplier_var ref = servant->_this();
  long long start = now_ns();
  proxy->connect_pull_supplier(ref);
  // Done once the channel came back for more after taking the -1: the reply
  // carrying -1 has then surely reached it.
  bool done = servant->monitor.wait(
      [servant] { return servant->empty_after_end > 0 || servant->disconnected; },
      arg_long(args, "wait", 50));
  long long end = now_ns();
  {
    omni_mutex_lock lock(servant->monitor.mutex);
    std::cout << "pulled_by_channel=" << servant->handed() << "\ntry_pull_calls="
              << servant->try_pull_calls << "\npull_calls=" << servant->pull_calls
              << "\ndone=" << (done ? 1 : 0) << "\nstart_ns=" << start << "\nend_ns=" << end
              << std::endl;
  }
  if (!servant->disconnected) disconnect([&] { proxy->disconnect_pull_consumer(); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CORBA::ORB_var orb = init_orb(argc, argv);
  if (argc < 2) {
    std::cerr << "usage: notify_supplier MODE --channel IOR [--count N] [options]\n";
    return 2;
  }
  std::string mode = argv[1];
  Args args = parse_args(argc, argv, 2);
  watchdog(args);
  int status = 2;
  try {
    PortableServer::POA_var poa = root_poa(orb);
    if (mode == "structured") status = structured(orb, args);
    else if (mode == "sequence") status = sequence(orb, args);
    else if (mode == "cos-push") status = cos_push(orb, args);
    else if (mode == "cos-pull") status = cos_pull(orb, poa, args);
    else std::cerr << "unknown mode " << mode << std::endl;
  } catch (CORBA::Exception& exc) {
    std::cout << "FAIL " << exception_name(exc) << std::endl;
    status = 1;
  }
  orb->destroy();
  return status;
}
