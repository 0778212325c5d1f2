/* Preloaded (LD_PRELOAD) into servers that bind their listeners to the wildcard address and take no host
 * to bind to (TubeMQ's master and broker): every bind() to 0.0.0.0 or :: goes to a loopback address
 * instead, so that nothing the launcher starts can be reached from another machine. The address is
 * MQWIRE_BIND_ADDRESS when that is in 127.0.0.0/8 (a cluster's nodes each have one of their own, since TubeMQ
 * tells brokers apart by address), else 127.0.0.1. Any other bind() is passed on unchanged. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static struct in_addr loopback_address(void) {
    struct in_addr address;
    const char *text = getenv("MQWIRE_BIND_ADDRESS");
    if (text == NULL || inet_pton(AF_INET, text, &address) != 1 || (ntohl(address.s_addr) >> 24) != 127) {
        address.s_addr = htonl(INADDR_LOOPBACK);
    }
    return address;
}

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
            ipv4.sin_addr = loopback_address();
            return next_bind(fd, (const struct sockaddr *)&ipv4, sizeof ipv4);
        }
    } else if (address != NULL && address->sa_family == AF_INET6 &&
               length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 ipv6;
        memcpy(&ipv6, address, sizeof ipv6);
        if (IN6_IS_ADDR_UNSPECIFIED(&ipv6.sin6_addr)) {
            /* The JVM listens on dual-stack sockets: the IPv4-mapped form of the loopback address keeps them
             * reachable at the IPv4 address the servers tell their clients to connect to. */
            struct in_addr ipv4 = loopback_address();
            static const unsigned char mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
            memcpy(&ipv6.sin6_addr, mapped_prefix, sizeof mapped_prefix);
            memcpy((uint8_t *)&ipv6.sin6_addr + sizeof mapped_prefix, &ipv4, sizeof ipv4);
            return next_bind(fd, (const struct sockaddr *)&ipv6, sizeof ipv6);
        }
    }
    return next_bind(fd, address, length);
}
