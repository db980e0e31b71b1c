// Batched sends: sendmmsg(2), with the datagrams of a batch that go to one destination in a
// row coalesced into one segmented message (UDP GSO, UDP_SEGMENT, Linux 4.18+).
//
// Why: on a forwarded video frame, the kernel's per-datagram path (routing, netfilter, the
// device, on loopback the receiver's side too) is most of a subscriber's cost. A frame's
// packets to one subscriber are equal-sized but for the last, which is exactly the shape a
// segmented message carries: the stack is walked once per message and the datagrams are cut
// apart at the device (or the NIC). Measured on this machine: 3 packets of a frame to each of 4
// receivers cost the sender about 40 % less as 4 segmented messages than as 12 datagrams.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cudp.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

enum {
    CHORUS_UDP_SEND_WINDOW = 64,
    // The kernel's limit on segments per message (UDP_MAX_SEGMENTS).
    CHORUS_UDP_MAX_SEGMENTS = 64,
    // A segment must fit the path's MTU with its IP and UDP headers (the kernel refuses a
    // larger one): 1,400 fits a 1,500 MTU over IPv6. Media packets are ~1,200 at most.
    CHORUS_UDP_MAX_SEGMENT_SIZE = 1400,
    // A message's payload must fit one IP datagram.
    CHORUS_UDP_MAX_MESSAGE_BYTES = 60000,
    // Slots of the window's destination table: twice the window, so probes stay short.
    CHORUS_UDP_PATH_SLOTS = 128,
};

// Set once a segmented message failed with EIO: the device cannot checksum for us (no
// offload) or IPsec is in the path, and every later message would fail the same way.
static atomic_int chorus_udp_segmenting_off;

// Room for one IPV6_PKTINFO (the larger of the two packet informations) and one UDP_SEGMENT.
typedef union chorus_udp_send_control {
    struct cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
} chorus_udp_send_control;

// One window's messages: each a run of datagrams to one path, its vectors contiguous.
typedef struct chorus_udp_send_plan {
    struct mmsghdr messages[CHORUS_UDP_SEND_WINDOW];
    struct iovec vectors[CHORUS_UDP_SEND_WINDOW];
    chorus_udp_send_control controls[CHORUS_UDP_SEND_WINDOW];
    // The control bytes of each message without its UDP_SEGMENT (its packet information only).
    size_t source_control_length[CHORUS_UDP_SEND_WINDOW];
    size_t count;
} chorus_udp_send_plan;

// Writes the datagram's source address (IP_PKTINFO or IPV6_PKTINFO) at `bytes`, if it has
// one; returns the bytes used.
static size_t chorus_udp_put_source(char *bytes, const chorus_udp_datagram *datagram) {
    struct cmsghdr *header = (struct cmsghdr *)bytes;
    if (datagram->source_family == 4) {
        struct in_pktinfo info;
        memset(&info, 0, sizeof(info));
        memcpy(&info.ipi_spec_dst, datagram->source, 4);
        header->cmsg_level = IPPROTO_IP;
        header->cmsg_type = IP_PKTINFO;
        header->cmsg_len = CMSG_LEN(sizeof(info));
        memcpy(CMSG_DATA(header), &info, sizeof(info));
        return CMSG_SPACE(sizeof(info));
    }
    if (datagram->source_family == 6) {
        struct in6_pktinfo info;
        memset(&info, 0, sizeof(info));
        memcpy(&info.ipi6_addr, datagram->source, 16);
        info.ipi6_ifindex = datagram->source_interface;
        header->cmsg_level = IPPROTO_IPV6;
        header->cmsg_type = IPV6_PKTINFO;
        header->cmsg_len = CMSG_LEN(sizeof(info));
        memcpy(CMSG_DATA(header), &info, sizeof(info));
        return CMSG_SPACE(sizeof(info));
    }
    return 0;
}

// Whether two datagrams take the same path: destination, and source if either names one.
static int chorus_udp_same_path(const chorus_udp_datagram *a, const chorus_udp_datagram *b) {
    if (a->address_length != b->address_length || memcmp(a->address, b->address, a->address_length) != 0) return 0;
    if (a->source_family != b->source_family) return 0;
    if (a->source_family == 0) return 1;
    return a->source_interface == b->source_interface && memcmp(a->source, b->source, 16) == 0;
}

// FNV-1a over the destination's bytes (port and address are all in it).
static uint32_t chorus_udp_path_hash(const chorus_udp_datagram *datagram) {
    const uint8_t *bytes = datagram->address;
    uint32_t hash = 2166136261u;
    for (uint32_t i = 0; i < datagram->address_length; i++) hash = (hash ^ bytes[i]) * 16777619u;
    return hash;
}

// Links each datagram of the window to the next one on its path (`next`, -1 at the end) and
// lists each path's first datagram in order of first appearance; returns the paths' count.
static size_t chorus_udp_group_paths(const chorus_udp_datagram *datagrams, size_t count, int coalesce,
                                     int16_t *next, int16_t *heads) {
    int16_t slots[CHORUS_UDP_PATH_SLOTS], tails[CHORUS_UDP_SEND_WINDOW];
    size_t paths = 0;
    memset(slots, 0xFF, sizeof(slots));
    for (size_t i = 0; i < count; i++) {
        next[i] = -1;
        uint32_t slot = coalesce ? chorus_udp_path_hash(&datagrams[i]) % CHORUS_UDP_PATH_SLOTS : 0;
        for (;;) {
            int16_t path = coalesce ? slots[slot] : -1;
            if (path < 0) {
                if (coalesce) slots[slot] = (int16_t)paths;
                heads[paths] = tails[paths] = (int16_t)i;
                paths += 1;
                break;
            }
            if (chorus_udp_same_path(&datagrams[heads[path]], &datagrams[i])) {
                next[tails[path]] = (int16_t)i;
                tails[path] = (int16_t)i;
                break;
            }
            slot = (slot + 1) % CHORUS_UDP_PATH_SLOTS;
        }
    }
    return paths;
}

// Ends the plan's next message: `segments` datagrams from vector `first`, cut at `segment_size`.
static void chorus_udp_close_message(chorus_udp_send_plan *plan, const chorus_udp_datagram *head, size_t first,
                                     size_t segments, uint16_t segment_size) {
    struct mmsghdr *message = &plan->messages[plan->count];
    chorus_udp_send_control *control = &plan->controls[plan->count];
    memset(message, 0, sizeof(*message));
    message->msg_hdr.msg_name = (void *)head->address;
    message->msg_hdr.msg_namelen = (socklen_t)head->address_length;
    message->msg_hdr.msg_iov = &plan->vectors[first];
    message->msg_hdr.msg_iovlen = segments;
    size_t used = chorus_udp_put_source(control->bytes, head);
    plan->source_control_length[plan->count] = used;
    if (segments > 1) {
        struct cmsghdr *header = (struct cmsghdr *)(control->bytes + used);
        header->cmsg_level = SOL_UDP;
        header->cmsg_type = UDP_SEGMENT;
        header->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        memcpy(CMSG_DATA(header), &segment_size, sizeof(segment_size));
        used += CMSG_SPACE(sizeof(uint16_t));
    }
    if (used > 0) {
        message->msg_hdr.msg_control = control->bytes;
        message->msg_hdr.msg_controllen = used;
    }
    plan->count += 1;
}

// Plans the window's messages: per path, in its order, runs of datagrams of one size, the
// last of a run allowed to be shorter (what a segmented message can carry).
static void chorus_udp_plan_window(chorus_udp_send_plan *plan, const chorus_udp_datagram *datagrams, size_t count,
                                   int coalesce) {
    int16_t next[CHORUS_UDP_SEND_WINDOW], heads[CHORUS_UDP_SEND_WINDOW];
    size_t paths = chorus_udp_group_paths(datagrams, count, coalesce, next, heads);
    size_t vector = 0;
    plan->count = 0;
    for (size_t path = 0; path < paths; path++) {
        int16_t index = heads[path];
        while (index >= 0) {
            const chorus_udp_datagram *head = &datagrams[index];
            size_t size = head->length, first = vector, segments = 0, bytes = 0;
            int may_coalesce = size > 0 && size <= CHORUS_UDP_MAX_SEGMENT_SIZE;
            while (index >= 0) {
                const chorus_udp_datagram *datagram = &datagrams[index];
                if (segments > 0 && (!may_coalesce || datagram->length == 0 || datagram->length > size ||
                                     segments == CHORUS_UDP_MAX_SEGMENTS ||
                                     bytes + datagram->length > CHORUS_UDP_MAX_MESSAGE_BYTES)) break;
                plan->vectors[vector].iov_base = (void *)datagram->bytes;
                plan->vectors[vector].iov_len = datagram->length;
                vector += 1;
                segments += 1;
                bytes += datagram->length;
                index = next[index];
                if (datagram->length < size) break;  // a shorter datagram ends its run
            }
            chorus_udp_close_message(plan, head, first, segments, (uint16_t)size);
        }
    }
}

// Whether the error means the socket's send buffer is full (the rest of the batch is dropped).
static int chorus_udp_buffer_full(int result) {
    return result == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS;
}

// Sends a refused segmented message's datagrams one by one (the same path, no UDP_SEGMENT).
static size_t chorus_udp_send_apart(int fd, const chorus_udp_send_plan *plan, size_t index, int *full) {
    const struct msghdr *whole = &plan->messages[index].msg_hdr;
    struct mmsghdr singles[CHORUS_UDP_MAX_SEGMENTS];
    size_t count = whole->msg_iovlen, position = 0, delivered = 0;
    memset(singles, 0, sizeof(struct mmsghdr) * count);
    for (size_t i = 0; i < count; i++) {
        singles[i].msg_hdr = *whole;
        singles[i].msg_hdr.msg_iov = &whole->msg_iov[i];
        singles[i].msg_hdr.msg_iovlen = 1;
        singles[i].msg_hdr.msg_controllen = plan->source_control_length[index];
        if (plan->source_control_length[index] == 0) singles[i].msg_hdr.msg_control = NULL;
    }
    while (position < count) {
        int result = sendmmsg(fd, singles + position, (unsigned int)(count - position), 0);
        if (result > 0) {
            position += (size_t)result;
            delivered += (size_t)result;
            continue;
        }
        if (result < 0 && errno == EINTR) continue;
        if (chorus_udp_buffer_full(result)) {
            *full = 1;
            return delivered;
        }
        position += 1;
    }
    return delivered;
}

// Sends the plan; returns the datagrams the kernel took, and adds those it took as segments to
// `coalesced`. Sets `full` when the send buffer filled. A refused message is skipped alone; a
// refused segmented one is sent apart first.
static size_t chorus_udp_send_planned(int fd, const chorus_udp_send_plan *plan, int *full, size_t *coalesced) {
    size_t position = 0, delivered = 0;
    while (position < plan->count) {
        int result = sendmmsg(fd, (struct mmsghdr *)plan->messages + position,
                              (unsigned int)(plan->count - position), 0);
        if (result > 0) {
            for (size_t i = position; i < position + (size_t)result; i++) {
                size_t segments = plan->messages[i].msg_hdr.msg_iovlen;
                delivered += segments;
                if (segments > 1) *coalesced += segments;
            }
            position += (size_t)result;
            continue;
        }
        if (result < 0 && errno == EINTR) continue;
        if (chorus_udp_buffer_full(result)) {
            *full = 1;
            return delivered;
        }
        if (plan->messages[position].msg_hdr.msg_iovlen > 1) {
            if (errno == EIO) atomic_store_explicit(&chorus_udp_segmenting_off, 1, memory_order_relaxed);
            delivered += chorus_udp_send_apart(fd, plan, position, full);
            if (*full) return delivered;
        }
        position += 1;
    }
    return delivered;
}

size_t chorus_udp_send_batch(int fd, const chorus_udp_datagram *datagrams, size_t count, size_t *coalesced) {
    chorus_udp_send_plan plan;
    size_t segments = 0;
    size_t position = 0, delivered = 0;
    while (position < count) {
        size_t window = count - position < CHORUS_UDP_SEND_WINDOW ? count - position : CHORUS_UDP_SEND_WINDOW;
        int coalesce = window > 1 && !atomic_load_explicit(&chorus_udp_segmenting_off, memory_order_relaxed);
        chorus_udp_plan_window(&plan, datagrams + position, window, coalesce);
        int full = 0;
        delivered += chorus_udp_send_planned(fd, &plan, &full, &segments);
        // A full send buffer ends the batch (the rest is dropped, not queued: it would be late).
        if (full) break;
        position += window;
    }
    if (coalesced != NULL) *coalesced = segments;
    return delivered;
}
