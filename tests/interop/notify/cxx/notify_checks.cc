// notify_checks: one-shot checks of the interop tests.
//
//   notify_checks exceptions --factory URL
//       provokes UnsupportedQoS, UnsupportedAdmin, AdminLimitExceeded,
//       InvalidConstraint, InvalidGrammar, ChannelNotFound and OBJECT_NOT_EXIST
//       and prints the fields each arrived with, one "key=value" per line
//   notify_checks channel --factory URL
//       creates a channel, lists the factory's channels, and sends one
//       structured event through it (push in, pull out)
#include "notify_common.hh"

using namespace notify_common;
namespace CA = CosNotifyChannelAdmin;
namespace N = CosNotification;

namespace {

const char* code_name(N::QoSError_code code) {
  switch (code) {
    case N::UNSUPPORTED_PROPERTY: return "UNSUPPORTED_PROPERTY";
    case N::UNAVAILABLE_PROPERTY: return "UNAVAILABLE_PROPERTY";
    case N::UNSUPPORTED_VALUE: return "UNSUPPORTED_VALUE";
    case N::UNAVAILABLE_VALUE: return "UNAVAILABLE_VALUE";
    case N::BAD_PROPERTY: return "BAD_PROPERTY";
    case N::BAD_TYPE: return "BAD_TYPE";
    case N::BAD_VALUE: return "BAD_VALUE";
    default: return "?";
  }
}

std::string any_text(const CORBA::Any& value) {
  std::ostringstream out;
  CORBA::Long l;
  CORBA::Short s;
  CORBA::ULongLong ull;
  CORBA::TypeCode_var tc = value.type();
  if (value >>= l) out << l;
  else if (value >>= s) out << s;
  else if (value >>= ull) out << ull;
  else if (tc->kind() == CORBA::tk_null || tc->kind() == CORBA::tk_void) out << "none";
  else out << "kind" << (int)tc->kind();
  return out.str();
}

void print_errors(const char* key, const N::PropertyErrorSeq& errors) {
  std::cout << key << ".count=" << errors.length() << std::endl;
  for (CORBA::ULong i = 0; i < errors.length(); ++i) {
    std::cout << key << "." << i << "=" << code_name(errors[i].code) << ":"
              << errors[i].name.in() << ":" << any_text(errors[i].available_range.low_val)
              << ":" << any_text(errors[i].available_range.high_val) << std::endl;
  }
}

// Runs one check; an exception it did not expect is printed as "key=UNEXPECTED name".
template <class Body>
void check(const char* key, Body body) {
  try {
    body();
  } catch (CORBA::Exception& exc) {
    std::cout << key << "=UNEXPECTED " << exception_name(exc) << std::endl;
  }
}

CA::EventChannelFactory_ptr factory_from(CORBA::ORB_ptr orb, const Args& args) {
  CORBA::Object_var obj = orb->string_to_object(arg(args, "factory").c_str());
  return CA::EventChannelFactory::_narrow(obj);
}

int exceptions(CORBA::ORB_ptr orb, const Args& args) {
  CA::EventChannelFactory_var factory = factory_from(orb, args);
  CA::ChannelID id;
  N::QoSProperties no_qos;
  N::AdminProperties no_admin;
  CA::EventChannel_var channel = factory->create_channel(no_qos, no_admin, id);

  // UnsupportedQoS: one bad property, then three at once.
  N::QoSProperties qos;
  check("unsupported_qos", [&] {
    qos.length(1);
    qos[0] = long_property("MaximumBatchSize", 0);
    try {
      channel->set_qos(qos);
      std::cout << "unsupported_qos=none" << std::endl;
    } catch (N::UnsupportedQoS& exc) {
      print_errors("unsupported_qos", exc.qos_err);
    }
    qos.length(3);
    qos[0] = long_property("NoSuchProperty", 1);
    qos[1] = long_property("Priority", 3);  // must be a short
    qos[2] = long_property("MaximumBatchSize", 0);
    try {
      channel->set_qos(qos);
      std::cout << "unsupported_qos3=none" << std::endl;
    } catch (N::UnsupportedQoS& exc) {
      print_errors("unsupported_qos3", exc.qos_err);
    }
    // validate_qos reports through the same exception.
    N::NamedPropertyRangeSeq_var ranges;
    try {
      channel->validate_qos(qos, ranges.out());
      std::cout << "validate_qos=none" << std::endl;
    } catch (N::UnsupportedQoS& exc) {
      print_errors("validate_qos", exc.qos_err);
    }
  });
  // MaximumBatchSize on a structured proxy is not supported there.
  CA::ConsumerAdmin_var consumer_admin = channel->default_consumer_admin();
  CA::ProxyID proxy_id;
  CA::ProxySupplier_var structured =
      consumer_admin->obtain_notification_push_supplier(CA::STRUCTURED_EVENT, proxy_id);
  check("proxy_qos", [&] {
    qos.length(1);
    qos[0] = long_property("MaximumBatchSize", 5);
    try {
      structured->set_qos(qos);
      std::cout << "proxy_qos=none" << std::endl;
    } catch (N::UnsupportedQoS& exc) {
      print_errors("proxy_qos", exc.qos_err);
    }
  });

  // UnsupportedAdmin, then AdminLimitExceeded from a MaxConsumers of 2 once two consumers
  // are connected (one proxy exists, never connected: it does not count).
  check("admin_limit", [&] {
    N::AdminProperties admin;
    admin.length(1);
    admin[0] = long_property("MaxConsumers", -1);
    try {
      channel->set_admin(admin);
      std::cout << "unsupported_admin=none" << std::endl;
    } catch (N::UnsupportedAdmin& exc) {
      print_errors("unsupported_admin", exc.admin_err);
    }
    admin[0] = long_property("MaxConsumers", 2);
    channel->set_admin(admin);
    CA::ProxySupplier_var second =
        consumer_admin->obtain_notification_pull_supplier(CA::ANY_EVENT, proxy_id);
    std::cout << "second_proxy_id=" << proxy_id << std::endl;
    CA::ProxySupplier_var third =
        consumer_admin->obtain_notification_pull_supplier(CA::ANY_EVENT, proxy_id);
    CA::ProxyPullSupplier_var pulls[] = {CA::ProxyPullSupplier::_narrow(second),
                                         CA::ProxyPullSupplier::_narrow(third)};
    for (auto& pull : pulls) pull->connect_any_pull_consumer(CosNotifyComm::PullConsumer::_nil());
    try {
      CA::ProxySupplier_var fourth =
          consumer_admin->obtain_notification_push_supplier(CA::SEQUENCE_EVENT, proxy_id);
      std::cout << "admin_limit=none" << std::endl;
    } catch (CA::AdminLimitExceeded& exc) {
      std::cout << "admin_limit.name=" << exc.admin_property_err.name.in()
                << "\nadmin_limit.value=" << any_text(exc.admin_property_err.value) << std::endl;
    }
  });

  // InvalidConstraint carries the constraint; InvalidGrammar has no fields.
  check("invalid_constraint", [&] {
    CosNotifyFilter::FilterFactory_var filters = channel->default_filter_factory();
    CosNotifyFilter::Filter_var filter = filters->create_filter("EXTENDED_TCL");
    CosNotifyFilter::ConstraintExpSeq constraints;
    constraints.length(1);
    constraints[0].event_types.length(1);
    constraints[0].event_types[0].domain_name = CORBA::string_dup("Test");
    constraints[0].event_types[0].type_name = CORBA::string_dup("Counter");
    constraints[0].constraint_expr = CORBA::string_dup("$a ## 1");
    try {
      CosNotifyFilter::ConstraintInfoSeq_var added = filter->add_constraints(constraints);
      std::cout << "invalid_constraint=none" << std::endl;
    } catch (CosNotifyFilter::InvalidConstraint& exc) {
      std::cout << "invalid_constraint.expr=" << exc.constr.constraint_expr.in()
                << "\ninvalid_constraint.types=" << exc.constr.event_types.length() << ":"
                << exc.constr.event_types[0].domain_name.in() << "/"
                << exc.constr.event_types[0].type_name.in() << std::endl;
    }
    CosNotifyFilter::ConstraintInfoSeq_var all = filter->get_all_constraints();
    std::cout << "constraints_after=" << all->length() << std::endl;
    try {
      CosNotifyFilter::Filter_var other = filters->create_filter("XPATH");
      std::cout << "invalid_grammar=none" << std::endl;
    } catch (CosNotifyFilter::InvalidGrammar&) {
      std::cout << "invalid_grammar=InvalidGrammar" << std::endl;
    }
    filter->destroy();
  });

  // ChannelNotFound, and a system exception for a destroyed object.
  check("channel_not_found", [&] {
    try {
      CA::EventChannel_var missing = factory->get_event_channel(424242);
      std::cout << "channel_not_found=none" << std::endl;
    } catch (CA::ChannelNotFound&) {
      std::cout << "channel_not_found=ChannelNotFound" << std::endl;
    }
    CA::SupplierAdmin_var doomed = channel->new_for_suppliers(CA::AND_OP, proxy_id);
    doomed->destroy();
    try {
      doomed->MyID();
      std::cout << "destroyed=none" << std::endl;
    } catch (CORBA::OBJECT_NOT_EXIST&) {
      std::cout << "destroyed=OBJECT_NOT_EXIST" << std::endl;
    }
  });
  channel->destroy();
  return 0;
}

int channel_check(CORBA::ORB_ptr orb, const Args& args) {
  CA::EventChannelFactory_var factory = factory_from(orb, args);
  CA::ChannelID id;
  N::QoSProperties qos;
  N::AdminProperties admin;
  CA::EventChannel_var channel = factory->create_channel(qos, admin, id);
  CA::ChannelIDSeq_var all = factory->get_all_channels();
  bool listed = false;
  for (CORBA::ULong i = 0; i < all->length(); ++i) listed = listed || all[i] == id;
  std::cout << "channel_id=" << id << "\nlisted=" << (listed ? 1 : 0) << std::endl;

  CA::ConsumerAdmin_var consumers = channel->default_consumer_admin();
  CA::ProxyID proxy_id;
  CA::ProxySupplier_var out = consumers->obtain_notification_pull_supplier(CA::STRUCTURED_EVENT, proxy_id);
  CA::StructuredProxyPullSupplier_var pull = CA::StructuredProxyPullSupplier::_narrow(out);
  pull->connect_structured_pull_consumer(CosNotifyComm::StructuredPullConsumer::_nil());
  CA::SupplierAdmin_var suppliers = channel->default_supplier_admin();
  CA::ProxyConsumer_var in = suppliers->obtain_notification_push_consumer(CA::STRUCTURED_EVENT, proxy_id);
  CA::StructuredProxyPushConsumer_var push = CA::StructuredProxyPushConsumer::_narrow(in);
  push->connect_structured_push_supplier(CosNotifyComm::StructuredPushSupplier::_nil());
  push->push_structured_event(counter_event(42));
  N::StructuredEvent_var event = pull->pull_structured_event();
  std::cout << "roundtrip=" << event->header.fixed_header.event_name.in() << ":" << number_of(event.in())
            << std::endl;
  channel->destroy();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CORBA::ORB_var orb = init_orb(argc, argv);
  if (argc < 2) {
    std::cerr << "usage: notify_checks (exceptions|channel) --factory URL\n";
    return 2;
  }
  std::string mode = argv[1];
  Args args = parse_args(argc, argv, 2);
  watchdog(args);
  int status = 2;
  try {
    if (mode == "exceptions") status = exceptions(orb, args);
    else if (mode == "channel") status = channel_check(orb, args);
    else std::cerr << "unknown mode " << mode << std::endl;
  } catch (CORBA::Exception& exc) {
    std::cout << "FAIL " << exception_name(exc) << std::endl;
    status = 1;
  }
  orb->destroy();
  return status;
}
