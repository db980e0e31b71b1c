#ifndef CHORUS_CUDP_H
#define CHORUS_CUDP_H

#include <stddef.h>
#include <stdint.h>

/// One datagram to send: its bytes and its destination (a sockaddr_in or sockaddr_in6).
typedef struct chorus_udp_datagram {
    const uint8_t *bytes;
    size_t length;
    const void *address;
    uint32_t address_length;
} chorus_udp_datagram;

/// Sends `count` datagrams on the non-blocking UDP socket `fd` with sendmmsg(2), 64 per system
/// call, retrying on EINTR. Returns how many the kernel took. A datagram it refuses for its
/// destination is skipped; a full send buffer (EAGAIN) ends the batch, and the rest is dropped,
/// not queued, as a real-time sender should. The caller counts `count - returned` as dropped.
/// Callable from any thread.
size_t chorus_udp_send_batch(int fd, const chorus_udp_datagram *datagrams, size_t count);

#endif
