// A typed push supplier in C++ (Debian's omniORB), for tests/typed/test_cxx_peer.py.
//
//   typed_supplier CHANNEL_IOR COUNT
//
// Narrows CHANNEL_IOR to CosTypedNotifyChannelAdmin::TypedEventChannel, obtains a
// TypedProxyPushConsumer for CoffeeTest::Coffee from the default supplier admin,
// narrows get_typed_consumer() to CoffeeTest::Coffee and calls
// drinking_coffee("cxx", n) for n = 0..COUNT-1. Prints "ready", then
// "start_ns=" and "end_ns=" (CLOCK_MONOTONIC around the calls, as
// notify_supplier does for benchmarks/) and "done"; "FAIL <why>" on a CORBA
// exception.

#include <time.h>

#include <cstdlib>
#include <iostream>

#include "Coffee.hh"
#include "CosTypedNotifyChannelAdmin.hh"

static long long monotonic_ns() {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

int main(int argc, char** argv) {
    const char* options[][2] = {{"endPoint", "giop:tcp:127.0.0.1:"}, {0, 0}};
    CORBA::ORB_var orb = CORBA::ORB_init(argc, argv, "omniORB4", options);
    if (argc != 3) {
        std::cout << "FAIL usage: typed_supplier CHANNEL_IOR COUNT" << std::endl;
        return 2;
    }
    try {
        CORBA::Object_var found = orb->string_to_object(argv[1]);
        CosTypedNotifyChannelAdmin::TypedEventChannel_var channel =
            CosTypedNotifyChannelAdmin::TypedEventChannel::_narrow(found);
        CosTypedNotifyChannelAdmin::TypedSupplierAdmin_var admin =
            channel->default_supplier_admin();
        CosNotifyChannelAdmin::ProxyID id;
        CosTypedNotifyChannelAdmin::TypedProxyPushConsumer_var proxy =
            admin->obtain_typed_notification_push_consumer("IDL:CoffeeTest/Coffee:1.0", id);
        proxy->connect_typed_push_supplier(CosEventComm::PushSupplier::_nil());
        CORBA::Object_var typed = proxy->get_typed_consumer();
        CoffeeTest::Coffee_var coffee = CoffeeTest::Coffee::_narrow(typed);
        if (CORBA::is_nil(coffee)) {
            std::cout << "FAIL get_typed_consumer() is no CoffeeTest::Coffee" << std::endl;
            return 1;
        }
        std::cout << "ready" << std::endl;
        long count = std::atol(argv[2]);
        long long start = monotonic_ns();
        for (long n = 0; n < count; ++n) coffee->drinking_coffee("cxx", n);
        long long end = monotonic_ns();
        std::cout << "start_ns=" << start << std::endl << "end_ns=" << end << std::endl;
        proxy->disconnect_push_consumer();
        std::cout << "done" << std::endl;
    } catch (CORBA::Exception& exc) {
        std::cout << "FAIL " << exc._name() << std::endl;
        orb->destroy();
        return 1;
    }
    orb->destroy();
    return 0;
}
