// structured_supplier: a C++ (omniORB) structured push supplier of a notification server.
//
//   structured_supplier FACTORY_URL CHANNEL_ID [COUNT]
//
// FACTORY_URL names the EventChannelFactory (see structured_consumer.cc); CHANNEL_ID
// is the channel the consumer printed. The supplier pushes COUNT (default 10)
// structured events of type Example/Reading with filterable fields n (long) and
// temperature (double), then disconnects and exits. It only makes calls, so its
// ORB needs no endpoint of its own.
#include <omniORB4/CORBA.h>

#include <CosNotifyChannelAdmin.hh>
#include <CosNotifyComm.hh>

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace CA = CosNotifyChannelAdmin;

static CosNotification::StructuredEvent reading(CORBA::Long n) {
  CosNotification::StructuredEvent event;
  event.header.fixed_header.event_type.domain_name = CORBA::string_dup("Example");
  event.header.fixed_header.event_type.type_name = CORBA::string_dup("Reading");
  std::ostringstream name, body;
  name << "reading-" << n;
  event.header.fixed_header.event_name = CORBA::string_dup(name.str().c_str());
  CORBA::Double temperature = 20.0 + (n % 10) * 0.5;
  event.filterable_data.length(2);
  event.filterable_data[0].name = CORBA::string_dup("n");
  event.filterable_data[0].value <<= n;
  event.filterable_data[1].name = CORBA::string_dup("temperature");
  event.filterable_data[1].value <<= temperature;
  body << "reading " << n << ": " << temperature << " C";
  event.remainder_of_body <<= body.str().c_str();
  return event;
}

int main(int argc, char** argv) {
  CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
  if (argc < 3) {
    std::cerr << "usage: structured_supplier FACTORY_URL CHANNEL_ID [COUNT]" << std::endl;
    return 2;
  }
  CA::ChannelID channel_id = std::atol(argv[2]);
  long count = argc > 3 ? std::atol(argv[3]) : 10;
  int status = 0;
  try {
    CORBA::Object_var obj = orb->string_to_object(argv[1]);
    CA::EventChannelFactory_var factory = CA::EventChannelFactory::_narrow(obj);
    CA::EventChannel_var channel = factory->get_event_channel(channel_id);

    CA::SupplierAdmin_var admin = channel->default_supplier_admin();
    CA::ProxyID proxy_id;
    CA::ProxyConsumer_var proxy =
        admin->obtain_notification_push_consumer(CA::STRUCTURED_EVENT, proxy_id);
    CA::StructuredProxyPushConsumer_var consumer = CA::StructuredProxyPushConsumer::_narrow(proxy);
    // A nil supplier: we do not want subscription_change calls.
    consumer->connect_structured_push_supplier(CosNotifyComm::StructuredPushSupplier::_nil());

    for (long n = 0; n < count; ++n) consumer->push_structured_event(reading((CORBA::Long)n));
    std::cout << "pushed " << count << " events to channel " << channel_id << std::endl;
    consumer->disconnect_structured_push_consumer();
  } catch (CA::ChannelNotFound&) {
    std::cerr << "no channel " << channel_id << std::endl;
    status = 1;
  } catch (CORBA::Exception& exc) {
    std::cerr << "CORBA exception: " << exc._name() << std::endl;
    status = 1;
  }
  orb->destroy();
  return status;
}
