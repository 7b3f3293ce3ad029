/*
 * The shim's port-forward relay: one per pod being forwarded to (src/streaming/pod-relay.ts
 * starts and stops it). It enters the pod's network namespace by the descriptor the shim opened
 * and checked (fd 3), then only dials: for each request on its channel to the shim (fd 4) it
 * connects to 127.0.0.1:<port> in that namespace and hands the connected socket back over the
 * channel (SCM_RIGHTS), or says why it could not. The bytes then flow between the shim and the
 * pod's socket directly, never through this process, which reads nothing from the pod. It takes
 * no arguments and reads no environment; it exits when the shim's end of the channel closes.
 *
 * The channel is Node's IPC channel (child_process 'ipc', JSON serialization): lines of JSON,
 * a socket travelling as {"cmd":"NODE_HANDLE","type":"net.Socket","msg":...} with the
 * descriptor, which the shim answers NODE_HANDLE_ACK (or NACK: send it again), as Node's own
 * process.send(msg, socket) does. So the shim receives plain net.Socket objects. Like Node's
 * sender, nothing else is sent while a socket waits for its ACK. Lines it takes:
 *   {"id":<n>,"port":<1..65535>}   dial (other ports are ignored, as malformed requests are)
 *   {"cmd":"NODE_HANDLE_ACK"}, {"cmd":"NODE_HANDLE_NACK"}
 * and it sends {"ready":true} once in the namespace, {"id":<n>,"error":"..."} for a failed dial.
 * Bounds: a line over 256 bytes ends the relay (the shim never sends one); at most 256 dials in
 * progress (more are dropped: the shim's dial times out), each given up after 10 s.
 *
 * `npm run build` compiles it with `gcc -static` (scripts/build-programs.mjs).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NETNS_FD 3
#define CHANNEL_FD 4
#define MAX_DIALS 256
#define MAX_LINE 256
/* As the shim's own dial timeout (DIAL_TIMEOUT_MS in pod-relay.ts): past it nobody waits. */
#define DIAL_TIMEOUT_MS 10000
/* Node's MAX_HANDLE_RETRANSMISSIONS. */
#define MAX_RETRANSMISSIONS 3
/* Node's Number.MAX_SAFE_INTEGER has 16 digits. */
#define MAX_ID_DIGITS 16

enum dial_state { FREE, CONNECTING, DONE };

struct dial {
    enum dial_state state;
    uint64_t id;
    unsigned port;
    int fd;
    int err; /* 0: connected */
    int64_t deadline_ms;
};

static struct dial dials[MAX_DIALS];

/* The message being written, and the descriptor that goes with its first byte. */
static char out[512];
static size_t out_len, out_off;
static int out_fd = -1;

/* The socket last sent, kept until the shim ACKs it (or to send again on NACK). */
static int unacked_fd = -1;
static char unacked[512];
static size_t unacked_len;
static int retransmissions;

static char in[4096];
static size_t in_len;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(const char *what) {
    fprintf(stderr, "port-relay: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* As Node names the error in err.message ("connect ECONNREFUSED 127.0.0.1:80"). */
static const char *errno_name(int err) {
    switch (err) {
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNRESET: return "ECONNRESET";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EADDRINUSE: return "EADDRINUSE";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOBUFS: return "ENOBUFS";
    case ENOMEM: return "ENOMEM";
    default: return NULL;
    }
}

static void queue_answer(struct dial *d) {
    if (d->err == 0) {
        out_len = (size_t)snprintf(out, sizeof out, "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Socket\",\"msg\":{\"id\":%llu}}\n", (unsigned long long)d->id);
        out_fd = d->fd;
    } else {
        if (d->fd >= 0) close(d->fd);
        const char *name = errno_name(d->err);
        /* strerror's texts hold no quote or backslash, so the line is valid JSON as it is. */
        out_len = (size_t)snprintf(out, sizeof out,
                                   "{\"id\":%llu,\"error\":\"failed to connect to localhost:%u in the pod's network namespace: connect %s 127.0.0.1:%u\"}\n",
                                   (unsigned long long)d->id, d->port, name ? name : strerror(d->err), d->port);
    }
    out_off = 0;
    d->state = FREE;
    d->fd = -1;
}

/* Writes what it can of `out`; false when the shim's end is gone. */
static int write_out(void) {
    struct iovec iov = {out + out_off, out_len - out_off};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    union {
        struct cmsghdr hdr;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    if (out_fd >= 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &out_fd, sizeof(int));
    }
    ssize_t n = sendmsg(CHANNEL_FD, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    out_off += (size_t)n;
    if (out_fd >= 0) {
        /* The descriptor went with the first byte; it is closed once the shim ACKs it. */
        unacked_fd = out_fd;
        memcpy(unacked, out, out_len);
        unacked_len = out_len;
        out_fd = -1;
    }
    if (out_off == out_len) out_len = out_off = 0;
    return 1;
}

/* Parses digits at *p (at most `max`), advancing it; -1 when there are none or too many. */
static int64_t digits(const char **p, int max) {
    int64_t v = 0;
    int n = 0;
    while (**p >= '0' && **p <= '9') {
        if (++n > max) return -1;
        v = v * 10 + (**p - '0');
        (*p)++;
    }
    return n == 0 ? -1 : v;
}

static void start_dial(uint64_t id, unsigned port) {
    struct dial *d = NULL;
    for (int i = 0; i < MAX_DIALS && !d; i++)
        if (dials[i].state == FREE) d = &dials[i];
    if (!d) return; /* bounded: the shim's dial times out */
    d->id = id;
    d->port = port;
    d->deadline_ms = now_ms() + DIAL_TIMEOUT_MS;
    d->err = 0;
    d->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->fd < 0) {
        d->err = errno;
        d->state = DONE;
        return;
    }
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(d->fd, (struct sockaddr *)&addr, sizeof addr) == 0) d->state = DONE;
    else if (errno == EINPROGRESS) d->state = CONNECTING;
    else {
        d->err = errno;
        d->state = DONE;
    }
}

static void on_ack(void) {
    if (unacked_fd < 0) return;
    close(unacked_fd);
    unacked_fd = -1;
    retransmissions = 0;
}

static void on_nack(void) {
    if (unacked_fd < 0 || out_len > 0) return;
    if (retransmissions++ == MAX_RETRANSMISSIONS) return on_ack();
    memcpy(out, unacked, unacked_len);
    out_len = unacked_len;
    out_off = 0;
    out_fd = unacked_fd;
    unacked_fd = -1;
}

static void on_line(const char *line) {
    if (strcmp(line, "{\"cmd\":\"NODE_HANDLE_ACK\"}") == 0) return on_ack();
    if (strcmp(line, "{\"cmd\":\"NODE_HANDLE_NACK\"}") == 0) return on_nack();
    const char *p = line;
    if (strncmp(p, "{\"id\":", 6) != 0) return;
    p += 6;
    int64_t id = digits(&p, MAX_ID_DIGITS);
    if (id < 0 || strncmp(p, ",\"port\":", 8) != 0) return;
    p += 8;
    int64_t port = digits(&p, 5);
    if (port < 1 || port > 65535 || strcmp(p, "}") != 0) return;
    start_dial((uint64_t)id, (unsigned)port);
}

/* Reads the channel and acts on each whole line; false when the shim's end is gone. */
static int read_channel(void) {
    ssize_t n = recv(CHANNEL_FD, in + in_len, sizeof in - in_len, MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    if (n == 0) return 0;
    in_len += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < in_len; i++) {
        if (i - start > MAX_LINE) break;
        if (in[i] != '\n') continue;
        in[i] = '\0';
        on_line(in + start);
        start = i + 1;
    }
    memmove(in, in + start, in_len - start);
    in_len -= start;
    if (in_len > MAX_LINE) {
        fputs("port-relay: a line from the shim is too long\n", stderr);
        exit(2);
    }
    return 1;
}

int main(void) {
    if (setns(NETNS_FD, CLONE_NEWNET) != 0) fail("cannot enter the pod's network namespace (fd 3)");
    close(NETNS_FD);
    int type;
    socklen_t len = sizeof type;
    if (getsockopt(CHANNEL_FD, SOL_SOCKET, SO_TYPE, &type, &len) != 0) fail("no channel to the shim on fd 4");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < MAX_DIALS; i++) dials[i].fd = -1;
    out_len = (size_t)snprintf(out, sizeof out, "{\"ready\":true}\n");

    struct pollfd fds[1 + MAX_DIALS];
    struct dial *polled[1 + MAX_DIALS];
    for (;;) {
        int64_t now = now_ms();
        int64_t next = -1;
        for (int i = 0; i < MAX_DIALS; i++) {
            struct dial *d = &dials[i];
            if (d->state != CONNECTING) continue;
            if (now >= d->deadline_ms) {
                d->err = ETIMEDOUT;
                d->state = DONE;
            } else if (next < 0 || d->deadline_ms < next) next = d->deadline_ms;
        }
        /*
         * Answers one at a time, none while a socket waits for its ACK (as Node's sender), each
         * finished one followed by the next until the channel is full: a dial done meanwhile
         * has no event left to wake the poll for it.
         */
        for (;;) {
            if (out_len == 0 && unacked_fd < 0) {
                for (int i = 0; i < MAX_DIALS; i++) {
                    if (dials[i].state != DONE) continue;
                    queue_answer(&dials[i]);
                    break;
                }
            }
            if (out_len == 0) break;
            if (!write_out()) return 0;
            if (out_len > 0) break;
        }

        int nfds = 0;
        fds[nfds] = (struct pollfd){CHANNEL_FD, POLLIN | (out_len > 0 ? POLLOUT : 0), 0};
        polled[nfds++] = NULL;
        for (int i = 0; i < MAX_DIALS; i++) {
            if (dials[i].state != CONNECTING) continue;
            fds[nfds] = (struct pollfd){dials[i].fd, POLLOUT, 0};
            polled[nfds++] = &dials[i];
        }
        int timeout = next < 0 ? -1 : (int)(next - now + 1);
        if (poll(fds, (nfds_t)nfds, timeout) < 0) {
            if (errno == EINTR) continue;
            fail("poll");
        }
        if (fds[0].revents & POLLIN) {
            if (!read_channel()) return 0;
        } else if (fds[0].revents & (POLLHUP | POLLERR)) return 0;
        for (int i = 1; i < nfds; i++) {
            if (!fds[i].revents) continue;
            struct dial *d = polled[i];
            int err = 0;
            socklen_t errlen = sizeof err;
            if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &errlen) != 0) err = errno;
            d->err = err;
            d->state = DONE;
        }
    }
}
