#ifndef CHORUS_CUDP_H
#define CHORUS_CUDP_H

#include <stddef.h>
#include <stdint.h>

/// One datagram to send: its bytes, its destination (a sockaddr_in or sockaddr_in6) and,
/// optionally, the local address to send it from (on a socket bound to a wildcard address).
typedef struct chorus_udp_datagram {
    const uint8_t *bytes;
    size_t length;
    const void *address;
    uint32_t address_length;
    /// 0: the kernel picks the source address. 4: `source[0..<4]` is an IPv4 address, sent
    /// with IP_PKTINFO (an AF_INET socket). 6: `source` is an IPv6 address (IPv4-mapped for an
    /// IPv4 peer of a dual-stack socket), sent with IPV6_PKTINFO (an AF_INET6 socket).
    uint8_t source_family;
    uint8_t source[16];
    /// The interface for a link-local source; 0 otherwise.
    uint32_t source_interface;
} chorus_udp_datagram;

/// Sends `count` datagrams on the non-blocking UDP socket `fd` with sendmmsg(2), 64 per system
/// call, retrying on EINTR. Returns how many the kernel took. A datagram it refuses for its
/// destination is skipped; a full send buffer (EAGAIN) ends the batch, and the rest is dropped,
/// not queued, as a real-time sender should. The caller counts `count - returned` as dropped.
/// Callable from any thread.
size_t chorus_udp_send_batch(int fd, const chorus_udp_datagram *datagrams, size_t count);

/// A non-blocking, close-on-exec UDP socket with SO_REUSEADDR (as NIO's bootstrap sets it),
/// bound to `address` (a sockaddr_in or sockaddr_in6 of `address_length` bytes). Returns the
/// descriptor, or -errno of the call that failed (nothing is left open then).
int chorus_udp_bound_socket(const void *address, uint32_t address_length);

#endif
