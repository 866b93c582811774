/* loopback_only: an LD_PRELOAD library that turns binds to the wildcard address
 * (0.0.0.0 or ::) into binds to loopback (127.0.0.1, or ::ffff:127.0.0.1 for an
 * IPv6 socket, which IPv4 clients of 127.0.0.1 still reach).
 *
 * omniEvents always listens on "giop:::PORT", i.e. on every interface; the tests
 * and benchmarks/remote_bench.py run it with this library preloaded so that it
 * listens on loopback only. Other binds pass through unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr*, socklen_t);

int bind(int fd, const struct sockaddr* addr, socklen_t len) {
  static bind_fn real_bind = 0;
  if (!real_bind) real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
  if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in copy;
    memcpy(&copy, addr, sizeof copy);
    if (copy.sin_addr.s_addr == htonl(INADDR_ANY)) {
      copy.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real_bind(fd, (const struct sockaddr*)&copy, sizeof copy);
    }
  } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 copy;
    memcpy(&copy, addr, sizeof copy);
    if (IN6_IS_ADDR_UNSPECIFIED(&copy.sin6_addr)) {
      static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
      memcpy(&copy.sin6_addr, mapped, sizeof mapped);
      return real_bind(fd, (const struct sockaddr*)&copy, sizeof copy);
    }
  }
  return real_bind(fd, addr, len);
}
