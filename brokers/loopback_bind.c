/* Preloaded (LD_PRELOAD) into servers that bind their listeners to the wildcard address and take no host
 * to bind to (TubeMQ's master and broker): every bind() to 0.0.0.0 or :: goes to the loopback address
 * instead, so that nothing the launcher starts can be reached from another machine. Any other bind() is
 * passed on unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    static bind_function next_bind;
    if (next_bind == NULL) {
        next_bind = (bind_function)dlsym(RTLD_NEXT, "bind");
        if (next_bind == NULL) {
            errno = ENOSYS;
            return -1;
        }
    }
    if (address != NULL && address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in ipv4;
        memcpy(&ipv4, address, sizeof ipv4);
        if (ipv4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            ipv4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return next_bind(fd, (const struct sockaddr *)&ipv4, sizeof ipv4);
        }
    } else if (address != NULL && address->sa_family == AF_INET6 &&
               length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 ipv6;
        memcpy(&ipv6, address, sizeof ipv6);
        if (IN6_IS_ADDR_UNSPECIFIED(&ipv6.sin6_addr)) {
            /* The JVM listens on dual-stack sockets: the IPv4-mapped loopback address keeps them reachable
             * at 127.0.0.1, which is where the servers tell their clients to connect. */
            static const unsigned char mapped_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
            memcpy(&ipv6.sin6_addr, mapped_loopback, sizeof mapped_loopback);
            return next_bind(fd, (const struct sockaddr *)&ipv6, sizeof ipv6);
        }
    }
    return next_bind(fd, address, length);
}
