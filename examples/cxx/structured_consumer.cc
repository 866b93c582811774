// structured_consumer: a C++ (omniORB) structured push consumer of a notification server.
//
//   structured_consumer FACTORY_URL [COUNT [CONSTRAINT]]
//
// FACTORY_URL names the EventChannelFactory, e.g.
// corbaname::127.0.0.1:2809#NotifyEventChannelFactory (what `cosnotify serve` prints).
// The consumer creates a channel and prints "channel ID" for the supplier, attaches
// an EXTENDED_TCL filter made by the channel's FilterFactory if CONSTRAINT is given
// (e.g. '$n >= 5'), prints "ready", then prints each event the server pushes to it.
// After COUNT events (default 10) it disconnects and exits.
#include <omniORB4/CORBA.h>
#include <omnithread.h>

#include <CosNotifyChannelAdmin.hh>
#include <CosNotifyComm.hh>
#include <CosNotifyFilter.hh>

#include <cstdlib>
#include <iostream>

namespace CA = CosNotifyChannelAdmin;

// The servant: the server calls push_structured_event once per event, in order.
class Consumer : public POA_CosNotifyComm::StructuredPushConsumer {
 public:
  explicit Consumer(long count) : count_(count), received_(0), done_(false), cond_(&mutex_) {}

  void push_structured_event(const CosNotification::StructuredEvent& event) {
    {
      omni_mutex_lock lock(mutex_);
      if (done_) return;  // more events may come while we disconnect: ignore them
    }
    const CosNotification::FixedEventHeader& header = event.header.fixed_header;
    std::cout << "received " << header.event_type.domain_name.in() << "/"
              << header.event_type.type_name.in() << " " << header.event_name.in();
    for (CORBA::ULong i = 0; i < event.filterable_data.length(); ++i) {
      CORBA::Long l;
      CORBA::Double d;
      std::cout << " " << event.filterable_data[i].name.in() << "=";
      if (event.filterable_data[i].value >>= l) std::cout << l;
      else if (event.filterable_data[i].value >>= d) std::cout << d;
      else std::cout << "?";
    }
    std::cout << std::endl;
    omni_mutex_lock lock(mutex_);
    if (++received_ >= count_) {
      done_ = true;
      cond_.broadcast();
    }
  }

  void offer_change(const CosNotification::EventTypeSeq&, const CosNotification::EventTypeSeq&) {}

  void disconnect_structured_push_consumer() {
    omni_mutex_lock lock(mutex_);
    done_ = true;
    cond_.broadcast();
  }

  // Wait until COUNT events arrived (or the channel disconnected us); false on timeout.
  bool wait(unsigned long seconds) {
    omni_mutex_lock lock(mutex_);
    unsigned long s, ns;
    omni_thread::get_time(&s, &ns, seconds, 0);
    while (!done_) {
      if (!cond_.timedwait(s, ns)) break;
    }
    return done_;
  }

  long received() {
    omni_mutex_lock lock(mutex_);
    return received_;
  }

 private:
  long count_, received_;
  bool done_;
  omni_mutex mutex_;
  omni_condition cond_;
};

int main(int argc, char** argv) {
  // The server calls us back, so the ORB listens: on loopback, on a free port.
  const char* options[][2] = {{"endPoint", "giop:tcp:127.0.0.1:"}, {0, 0}};
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv, "omniORB4", options);
  if (argc < 2) {
    std::cerr << "usage: structured_consumer FACTORY_URL [COUNT [CONSTRAINT]]" << std::endl;
    return 2;
  }
  long count = argc > 2 ? std::atol(argv[2]) : 10;
  int status = 0;
  try {
    CORBA::Object_var obj = orb->resolve_initial_references("RootPOA");
    PortableServer::POA_var poa = PortableServer::POA::_narrow(obj);
    PortableServer::POAManager_var manager = poa->the_POAManager();
    manager->activate();

    obj = orb->string_to_object(argv[1]);
    CA::EventChannelFactory_var factory = CA::EventChannelFactory::_narrow(obj);
    CosNotification::QoSProperties qos;
    CosNotification::AdminProperties admin;
    CA::ChannelID channel_id;
    CA::EventChannel_var channel = factory->create_channel(qos, admin, channel_id);
    std::cout << "channel " << channel_id << std::endl;

    CA::ConsumerAdmin_var consumer_admin = channel->default_consumer_admin();
    CA::ProxyID proxy_id;
    CA::ProxySupplier_var proxy =
        consumer_admin->obtain_notification_push_supplier(CA::STRUCTURED_EVENT, proxy_id);
    CA::StructuredProxyPushSupplier_var supplier = CA::StructuredProxyPushSupplier::_narrow(proxy);

    if (argc > 3) {  // a filter object made and run by the server
      CosNotifyFilter::FilterFactory_var filters = channel->default_filter_factory();
      CosNotifyFilter::Filter_var filter = filters->create_filter("EXTENDED_TCL");
      CosNotifyFilter::ConstraintExpSeq constraints;
      constraints.length(1);  // no event types: the constraint applies to every type
      constraints[0].constraint_expr = CORBA::string_dup(argv[3]);
      CosNotifyFilter::ConstraintInfoSeq_var added = filter->add_constraints(constraints);
      supplier->add_filter(filter);
    }

    Consumer* consumer = new Consumer(count);
    PortableServer::ObjectId_var oid = poa->activate_object(consumer);
    CosNotifyComm::StructuredPushConsumer_var ref = consumer->_this();
    consumer->_remove_ref();  // the POA holds it now
    supplier->connect_structured_push_consumer(ref);
    std::cout << "ready" << std::endl;

    if (consumer->wait(60)) {
      std::cout << "received " << consumer->received() << " events" << std::endl;
    } else {
      std::cerr << "timed out after " << consumer->received() << " events" << std::endl;
      status = 1;
    }
    supplier->disconnect_structured_push_supplier();
  } catch (CosNotifyFilter::InvalidConstraint& exc) {
    std::cerr << "invalid constraint: " << exc.constr.constraint_expr.in() << std::endl;
    status = 1;
  } catch (CORBA::Exception& exc) {
    std::cerr << "CORBA exception: " << exc._name() << std::endl;
    status = 1;
  }
  orb->destroy();
  return status;
}
