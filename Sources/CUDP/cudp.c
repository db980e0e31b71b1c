// sendmmsg(2) and struct mmsghdr are GNU extensions: Swift's Glibc module is built without
// _GNU_SOURCE, so they are reached through this small C target.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cudp.h"

enum { CHORUS_UDP_BATCH = 64 };

// Room for one IPV6_PKTINFO (the larger of the two) per message, aligned as cmsghdr wants.
typedef union chorus_udp_control {
    struct cmsghdr align;
    char bytes[CMSG_SPACE(sizeof(struct in6_pktinfo))];
} chorus_udp_control;

// Puts the datagram's source address, if it has one, in the message's ancillary data.
static void chorus_udp_set_source(struct msghdr *message, chorus_udp_control *control,
                                  const chorus_udp_datagram *datagram) {
    if (datagram->source_family != 4 && datagram->source_family != 6) return;
    memset(control, 0, sizeof(*control));
    message->msg_control = control->bytes;
    struct cmsghdr *header = (struct cmsghdr *)control->bytes;
    if (datagram->source_family == 4) {
        struct in_pktinfo info;
        memset(&info, 0, sizeof(info));
        memcpy(&info.ipi_spec_dst, datagram->source, 4);
        header->cmsg_level = IPPROTO_IP;
        header->cmsg_type = IP_PKTINFO;
        header->cmsg_len = CMSG_LEN(sizeof(info));
        memcpy(CMSG_DATA(header), &info, sizeof(info));
        message->msg_controllen = CMSG_SPACE(sizeof(info));
    } else {
        struct in6_pktinfo info;
        memset(&info, 0, sizeof(info));
        memcpy(&info.ipi6_addr, datagram->source, 16);
        info.ipi6_ifindex = datagram->source_interface;
        header->cmsg_level = IPPROTO_IPV6;
        header->cmsg_type = IPV6_PKTINFO;
        header->cmsg_len = CMSG_LEN(sizeof(info));
        memcpy(CMSG_DATA(header), &info, sizeof(info));
        message->msg_controllen = CMSG_SPACE(sizeof(info));
    }
}

size_t chorus_udp_send_batch(int fd, const chorus_udp_datagram *datagrams, size_t count) {
    struct mmsghdr messages[CHORUS_UDP_BATCH];
    struct iovec vectors[CHORUS_UDP_BATCH];
    chorus_udp_control controls[CHORUS_UDP_BATCH];
    size_t position = 0, delivered = 0;
    while (position < count) {
        size_t chunk = count - position < CHORUS_UDP_BATCH ? count - position : CHORUS_UDP_BATCH;
        memset(messages, 0, sizeof(struct mmsghdr) * chunk);
        for (size_t i = 0; i < chunk; i++) {
            const chorus_udp_datagram *datagram = &datagrams[position + i];
            vectors[i].iov_base = (void *)datagram->bytes;
            vectors[i].iov_len = datagram->length;
            messages[i].msg_hdr.msg_name = (void *)datagram->address;
            messages[i].msg_hdr.msg_namelen = (socklen_t)datagram->address_length;
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
            chorus_udp_set_source(&messages[i].msg_hdr, &controls[i], datagram);
        }
        int result = sendmmsg(fd, messages, (unsigned int)chunk, 0);
        if (result > 0) {
            position += (size_t)result;
            delivered += (size_t)result;
            continue;
        }
        if (result < 0 && errno == EINTR) continue;
        // A full send buffer ends the batch (the rest is dropped, not queued: it would be late).
        if (result == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return delivered;
        // This datagram was refused (a destination the socket cannot reach): skip it alone.
        position += 1;
    }
    return delivered;
}

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
