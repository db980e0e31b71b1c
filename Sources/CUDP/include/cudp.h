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

/// Sends `count` datagrams on the non-blocking UDP socket `fd` with sendmmsg(2), in windows of
/// 64, retrying on EINTR. Within a window, the datagrams to one destination (and source) keep
/// their order, and runs of one size (the last may be shorter) leave as one segmented message
/// (UDP_SEGMENT) that the kernel cuts back into those datagrams; the order between different
/// destinations may change. Returns how many datagrams the kernel took. A datagram it refuses
/// for its destination is skipped (a refused segmented message is retried datagram by
/// datagram); a full send buffer (EAGAIN) ends the batch, and the rest is dropped, not queued,
/// as a real-time sender should. The caller counts `count - returned` as dropped. `coalesced`
/// (if not NULL) is set to how many of the datagrams taken left as segments of a coalesced
/// message. Callable from any thread.
size_t chorus_udp_send_batch(int fd, const chorus_udp_datagram *datagrams, size_t count, size_t *coalesced);

/// A non-blocking, close-on-exec UDP socket with SO_REUSEADDR (as NIO's bootstrap sets it),
/// bound to `address` (a sockaddr_in or sockaddr_in6 of `address_length` bytes). Returns the
/// descriptor, or -errno of the call that failed (nothing is left open then).
int chorus_udp_bound_socket(const void *address, uint32_t address_length);

/// One datagram `chorus_udp_receive_batch` read: its length in its buffer slot, the peer's
/// address and, with packet information enabled, the local address it arrived at.
typedef struct chorus_udp_received {
    uint32_t length;
    /// 1 when the datagram was longer than its slot and was cut (the caller drops it).
    uint8_t truncated;
    /// 0: no packet information. 4: an IPv4 address it arrived at, 6: an IPv6 address
    /// (IPv4-mapped for an IPv4 peer of a dual-stack socket). The address's bytes as two
    /// big-endian numbers (an IPv4 address in the top 32 bits of `local_high`).
    uint8_t local_family;
    uint64_t local_high;
    uint64_t local_low;
    /// The receiving interface (IPV6_PKTINFO's index; IP_PKTINFO's for IPv4).
    uint32_t local_interface;
    /// 4 or 6 (0: another family, which the caller drops). The address in `peer_high` and
    /// `peer_low`: the 16 bytes of an IPv6 address as two big-endian numbers, or an IPv4
    /// address as the low 32 bits of `peer_low`. `peer_port` in host order.
    uint8_t peer_family;
    uint16_t peer_port;
    uint64_t peer_high;
    uint64_t peer_low;
    /// When the kernel received it (CLOCK_REALTIME, ns) with arrival times enabled; 0 without.
    uint64_t arrival_ns;
} chorus_udp_received;

/// Reads up to `count` (at most 64) datagrams from the non-blocking UDP socket `fd` with one
/// recvmmsg(2), datagram `i` into `buffers + i * slot_size`. Returns how many it read: 0 when
/// none is waiting, -errno on another error (the caller counts it and reads on: an ICMP error
/// queued on the socket surfaces once). Retries on EINTR.
int chorus_udp_receive_batch(int fd, uint8_t *buffers, size_t slot_size, chorus_udp_received *received,
                             size_t count);

/// Asks the kernel for each datagram's local address: IP_PKTINFO, or IPV6_RECVPKTINFO (which a
/// dual-stack socket's IPv4 datagrams carry as an IPv4-mapped address). Returns 0 or -errno.
int chorus_udp_enable_packet_info(int fd, int is_ipv6);

/// Asks the kernel to stamp each datagram with its arrival time (SO_TIMESTAMPNS), so a reader
/// that reads late still knows when each datagram came. Returns 0 or -errno.
int chorus_udp_enable_arrival_times(int fd);
/// CLOCK_REALTIME in nanoseconds: the clock of `arrival_ns`.
uint64_t chorus_udp_realtime_ns(void);
/// Sleeps `timeout_ns` (with ppoll's nanosecond timeout), or until `wake_fd` is signalled.
/// Returns 1 when woken, 0 when the time passed, -errno on error.
int chorus_udp_sleep(int wake_fd, uint64_t timeout_ns);
/// Waits until `fd` is readable or `wake_fd` (an eventfd) is signalled, at most `timeout_ns`
/// (negative: no limit; ppoll's nanosecond timeout, so a wait for the next tick ends on time).
/// Returns 1 when `fd` is readable, 0 when woken or timed out, -errno on error.
int chorus_udp_wait_readable(int fd, int wake_fd, int64_t timeout_ns);

/// A non-blocking, close-on-exec eventfd that `chorus_udp_wake` signals; -errno on error.
int chorus_udp_wake_descriptor(void);

/// Signals `wake_fd`, so that a `chorus_udp_wait_readable` on it returns.
void chorus_udp_wake(int wake_fd);

/// Names the calling thread (at most 15 characters), as `perf` and `top -H` show it.
void chorus_udp_name_thread(const char *name);

#endif
