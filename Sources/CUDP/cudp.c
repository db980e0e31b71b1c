// sendmmsg(2) and struct mmsghdr are GNU extensions: Swift's Glibc module is built without
// _GNU_SOURCE, so they are reached through this small C target.
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cudp.h"

enum { CHORUS_UDP_BATCH = 64 };

// Room for one IPV6_PKTINFO (the larger of the two packet informations) and one
// SCM_TIMESTAMPNS per message, aligned as cmsghdr wants.
typedef union chorus_udp_control {
    struct cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct timespec))];
} chorus_udp_control;

int chorus_udp_bound_socket(const void *address, uint32_t address_length) {
    const struct sockaddr *socket_address = address;
    int fd = socket(socket_address->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, socket_address, address_length) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

// Big-endian bytes as a number.
static uint64_t chorus_udp_big_endian(const uint8_t *bytes, size_t count) {
    uint64_t value = 0;
    for (size_t i = 0; i < count; i++) value = value << 8 | bytes[i];
    return value;
}

// Copies the message's IP_PKTINFO or IPV6_PKTINFO, and its SCM_TIMESTAMPNS, if it carries
// them, into `received`.
static void chorus_udp_get_local(struct msghdr *message, chorus_udp_received *received) {
    received->local_family = 0;
    received->arrival_ns = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(message); header != NULL; header = CMSG_NXTHDR(message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(header), sizeof(stamp));
            received->arrival_ns = (uint64_t)stamp.tv_sec * 1000000000u + (uint64_t)stamp.tv_nsec;
        } else if (header->cmsg_level == IPPROTO_IP && header->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo info;
            memcpy(&info, CMSG_DATA(header), sizeof(info));
            received->local_high = (uint64_t)ntohl(info.ipi_addr.s_addr) << 32;
            received->local_low = 0;
            received->local_interface = (uint32_t)info.ipi_ifindex;
            received->local_family = 4;
        } else if (header->cmsg_level == IPPROTO_IPV6 && header->cmsg_type == IPV6_PKTINFO) {
            struct in6_pktinfo info;
            memcpy(&info, CMSG_DATA(header), sizeof(info));
            received->local_high = chorus_udp_big_endian(info.ipi6_addr.s6_addr, 8);
            received->local_low = chorus_udp_big_endian(info.ipi6_addr.s6_addr + 8, 8);
            received->local_interface = info.ipi6_ifindex;
            received->local_family = 6;
        }
    }
}

// Fills in the peer's family, address and port from the sockaddr the kernel wrote.
static void chorus_udp_get_peer(const struct sockaddr_storage *name, socklen_t length,
                                chorus_udp_received *received) {
    received->peer_family = 0;
    if (name->ss_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)name;
        received->peer_family = 4;
        received->peer_high = 0;
        received->peer_low = ntohl(v4->sin_addr.s_addr);
        received->peer_port = ntohs(v4->sin_port);
    } else if (name->ss_family == AF_INET6 && length >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)name;
        received->peer_family = 6;
        received->peer_high = chorus_udp_big_endian(v6->sin6_addr.s6_addr, 8);
        received->peer_low = chorus_udp_big_endian(v6->sin6_addr.s6_addr + 8, 8);
        received->peer_port = ntohs(v6->sin6_port);
    }
}

int chorus_udp_receive_batch(int fd, uint8_t *buffers, size_t slot_size, chorus_udp_received *received,
                             size_t count) {
    struct mmsghdr messages[CHORUS_UDP_BATCH];
    struct iovec vectors[CHORUS_UDP_BATCH];
    chorus_udp_control controls[CHORUS_UDP_BATCH];
    struct sockaddr_storage names[CHORUS_UDP_BATCH];
    if (count > CHORUS_UDP_BATCH) count = CHORUS_UDP_BATCH;
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (size_t i = 0; i < count; i++) {
        vectors[i].iov_base = buffers + i * slot_size;
        vectors[i].iov_len = slot_size;
        messages[i].msg_hdr.msg_name = &names[i];
        messages[i].msg_hdr.msg_namelen = sizeof(names[i]);
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_control = controls[i].bytes;
        messages[i].msg_hdr.msg_controllen = sizeof(controls[i].bytes);
    }
    int result;
    do {
        result = recvmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT, NULL);
    } while (result < 0 && errno == EINTR);
    if (result < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    for (int i = 0; i < result; i++) {
        received[i].length = messages[i].msg_len;
        received[i].truncated = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
        chorus_udp_get_peer(&names[i], messages[i].msg_hdr.msg_namelen, &received[i]);
        chorus_udp_get_local(&messages[i].msg_hdr, &received[i]);
    }
    return result;
}

int chorus_udp_enable_packet_info(int fd, int is_ipv6) {
    int one = 1;
    if (is_ipv6) {
        // A dual-stack socket's IPv4 datagrams carry it too, with the IPv4-mapped address.
        return setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one) == 0 ? 0 : -errno;
    }
    return setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) == 0 ? 0 : -errno;
}

int chorus_udp_enable_arrival_times(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0 ? 0 : -errno;
}

uint64_t chorus_udp_realtime_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int chorus_udp_sleep(int wake_fd, uint64_t timeout_ns) {
    struct pollfd descriptor = {.fd = wake_fd, .events = POLLIN};
    struct timespec timeout = {.tv_sec = (time_t)(timeout_ns / 1000000000u), .tv_nsec = (long)(timeout_ns % 1000000000u)};
    int result = ppoll(&descriptor, 1, &timeout, NULL);
    if (result < 0) return errno == EINTR ? 0 : -errno;
    if (result > 0) {
        uint64_t value;
        (void)read(wake_fd, &value, sizeof value);
        return 1;
    }
    return 0;
}

int chorus_udp_wait_readable(int fd, int wake_fd, int64_t timeout_ns) {
    struct pollfd descriptors[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    struct timespec timeout = {.tv_sec = (time_t)(timeout_ns / 1000000000), .tv_nsec = (long)(timeout_ns % 1000000000)};
    int result = ppoll(descriptors, 2, timeout_ns < 0 ? NULL : &timeout, NULL);
    if (result < 0) return errno == EINTR ? 0 : -errno;
    if (descriptors[1].revents != 0) {
        uint64_t value;
        (void)read(wake_fd, &value, sizeof value);
        return 0;
    }
    return descriptors[0].revents != 0 ? 1 : 0;
}

int chorus_udp_wake_descriptor(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

void chorus_udp_wake(int wake_fd) {
    uint64_t one = 1;
    (void)write(wake_fd, &one, sizeof one);
}

void chorus_udp_name_thread(const char *name) {
    (void)pthread_setname_np(pthread_self(), name);
}
