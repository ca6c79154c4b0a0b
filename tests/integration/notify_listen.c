/*
 * notify_listen.c — a stand-in for systemd's notification socket, for
 * test_admin.sh: binds a unix datagram socket at PATH and appends every
 * datagram to OUT as one line (newlines shown as '|').  When a datagram
 * says READY=1 and its STATUS names "port N", it connects to
 * 127.0.0.1:N at once and appends " connect=ok" or " connect=fail", so
 * the test can tell that READY=1 was only sent once the MNS port answered.
 *
 * usage: notify_listen PATH OUT      (runs until killed)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *try_connect(const char *msg)
{
    const char *p = strstr(msg, "port ");
    struct sockaddr_in sin;
    int fd, rc;

    if (strstr(msg, "READY=1") == NULL || p == NULL)
        return "";
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)atoi(p + 5));
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return " connect=fail";
    rc = connect(fd, (struct sockaddr *)&sin, sizeof sin);
    close(fd);
    return rc == 0 ? " connect=ok" : " connect=fail";
}

int main(int argc, char **argv)
{
    struct sockaddr_un sun;
    char msg[4096];
    FILE *out;
    int fd;

    if (argc != 3 || strlen(argv[1]) >= sizeof sun.sun_path) {
        fprintf(stderr, "usage: notify_listen PATH OUT\n");
        return 2;
    }
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, argv[1], strlen(argv[1]) + 1);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    unlink(argv[1]);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
        perror("notify_listen: bind");
        return 1;
    }
    out = fopen(argv[2], "a");
    if (out == NULL) {
        perror("notify_listen: open");
        return 1;
    }
    for (;;) {
        ssize_t n = recv(fd, msg, sizeof msg - 1, 0);
        if (n < 0)
            continue;
        msg[n] = '\0';
        for (char *c = msg; *c; c++)
            if (*c == '\n')
                *c = '|';
        fprintf(out, "%s%s\n", msg, try_connect(msg));
        fflush(out);
    }
}
