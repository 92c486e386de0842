// A MySQL-protocol server that does nothing: it sends the protocol 4.1
// handshake, accepts any login and answers every command with an OK packet
// (one affected row), on one epoll thread. Run sysbench against it to see
// what the client and the loopback TCP cost on a machine: no server can
// answer faster, so it is the ceiling of `oltp_insert`'s queries/s there.
//
//   gcc -O2 -o /tmp/null-mysql-server scripts/null-mysql-server.c
//   /tmp/null-mysql-server 23399 &
//   sysbench oltp_insert --db-driver=mysql --mysql-host=127.0.0.1
//       --mysql-port=23399 --mysql-user=root --mysql-db=x --tables=4
//       --threads=16 --time=10 run          (one line)
//
// A measuring aid, not part of Shoal: loopback only, no TLS; packets are
// skipped as they stream in, not kept.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { CONNECTIONS_MAX = 4096, BUFFER_BYTES = 65536, EVENTS_PER_WAIT = 256 };
enum { COM_QUIT = 1 };

struct connection {
    int logged_in;
    // The header of the packet being read, and how much of it came.
    unsigned char header[4];
    int header_length;
    // Payload bytes of that packet still to come (they are not kept).
    long remaining;
    // Its first payload byte (the command), -1 until it came.
    int command;
};

static struct connection *connections[CONNECTIONS_MAX];

static void send_all(int fd, const unsigned char *bytes, int length) {
    // Loopback sockets take these few bytes at once; a short write only
    // means the client stopped reading, and the answer is dropped.
    (void)send(fd, bytes, length, MSG_NOSIGNAL);
}

static void send_ok(int fd, int sequence) {
    // header (length 7), 0x00, affected rows 1, insert id 0,
    // status SERVER_STATUS_AUTOCOMMIT, warnings 0
    unsigned char ok[11] = {7, 0, 0, (unsigned char)sequence, 0, 1, 0, 2, 0, 0, 0};
    send_all(fd, ok, sizeof ok);
}

static void send_handshake(int fd) {
    unsigned char packet[128];
    int n = 4;
    const char *version = "8.0.30-null";
    const char *plugin = "mysql_native_password";
    // CLIENT_LONG_PASSWORD .. CLIENT_TRANSACTIONS, PROTOCOL_41,
    // SECURE_CONNECTION, MULTI_STATEMENTS/RESULTS, PLUGIN_AUTH; no SSL,
    // no compression.
    unsigned capabilities = 0x000FA2FFu & ~(1u << 11) & ~(1u << 5);
    capabilities |= (1u << 9) | (1u << 15) | (1u << 16) | (1u << 17) | (1u << 19);
    packet[n++] = 10;
    memcpy(packet + n, version, strlen(version) + 1);
    n += (int)strlen(version) + 1;
    packet[n++] = 1, packet[n++] = 0, packet[n++] = 0, packet[n++] = 0;  // thread id
    memcpy(packet + n, "abcdefgh", 8);  // first 8 bytes of the scramble
    n += 8;
    packet[n++] = 0;
    packet[n++] = capabilities & 0xff, packet[n++] = (capabilities >> 8) & 0xff;
    packet[n++] = 45;  // utf8mb4_general_ci
    packet[n++] = 2, packet[n++] = 0;  // status: autocommit
    packet[n++] = (capabilities >> 16) & 0xff, packet[n++] = (capabilities >> 24) & 0xff;
    packet[n++] = 21;  // scramble length
    memset(packet + n, 0, 10);
    n += 10;
    memcpy(packet + n, "ijklmnopqrst", 12);  // the scramble's other 12 bytes
    n += 12;
    packet[n++] = 0;
    memcpy(packet + n, plugin, strlen(plugin) + 1);
    n += (int)strlen(plugin) + 1;
    int payload = n - 4;
    packet[0] = payload & 0xff, packet[1] = (payload >> 8) & 0xff, packet[2] = 0, packet[3] = 0;
    send_all(fd, packet, n);
}

static void close_connection(int fd) {
    close(fd);
    free(connections[fd]);
    connections[fd] = NULL;
}

// Reads what came, answering each packet once its payload is in; false
// once the connection ended. Payloads are skipped, not kept, so a packet of
// any size (sysbench's bulk inserts) takes no memory.
static int consume(int fd, struct connection *c, const unsigned char *bytes, long length) {
    while (length > 0) {
        if (c->header_length < 4) {
            c->header[c->header_length++] = *bytes++;
            length--;
            if (c->header_length == 4) {
                c->remaining = c->header[0] | c->header[1] << 8 | c->header[2] << 16;
                c->command = -1;
            }
        } else {
            long take = length < c->remaining ? length : c->remaining;
            if (take > 0 && c->command == -1) c->command = bytes[0];
            bytes += take;
            length -= take;
            c->remaining -= take;
        }
        if (c->header_length == 4 && c->remaining == 0) {
            int sequence = c->header[3];
            c->header_length = 0;
            if (!c->logged_in) {
                c->logged_in = 1;
                send_ok(fd, sequence + 1);
            } else if (c->command == COM_QUIT) {
                close_connection(fd);
                return 0;
            } else {
                send_ok(fd, 1);
            }
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    int one = 1;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)atoi(argv[1]));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, 128) != 0) {
        perror("null-mysql-server: bind/listen");
        return 1;
    }
    int poller = epoll_create1(0);
    struct epoll_event listen_event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &listen_event);
    struct epoll_event events[EVENTS_PER_WAIT];
    static unsigned char buffer[BUFFER_BYTES];
    for (;;) {
        int ready = epoll_wait(poller, events, EVENTS_PER_WAIT, -1);
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
                if (client < 0) continue;
                if (client >= CONNECTIONS_MAX) {
                    close(client);
                    continue;
                }
                setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                connections[client] = calloc(1, sizeof(struct connection));
                if (connections[client] == NULL) {
                    close(client);
                    continue;
                }
                send_handshake(client);
                struct epoll_event client_event = {.events = EPOLLIN, .data.fd = client};
                epoll_ctl(poller, EPOLL_CTL_ADD, client, &client_event);
                continue;
            }
            struct connection *c = connections[fd];
            if (c == NULL) continue;
            ssize_t received = recv(fd, buffer, sizeof buffer, 0);
            if (received < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (received <= 0) {
                close_connection(fd);
                continue;
            }
            consume(fd, c, buffer, received);
        }
    }
}
