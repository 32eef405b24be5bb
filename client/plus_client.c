/*
 * plus_client: the PluS commands' compiled client (issue 34), after
 * Mercurial's chg. Installed under each served command's name; the name it
 * was run by (argv[0]'s last part) is the command. It finds plus_scheduler's
 * socket as overlay.wire.protocol.client_socket_path does (PLUS_CONF, else
 * /etc/plus/plus.yaml; its top-level state_dir: and socket: scalars) and
 * connects to the command server beside it (the socket's path + ".cmd").
 * It sends its argument words, its whole environment, its umask, and, as
 * descriptors, its working directory and standard streams
 * (overlay/cmdserver/frames.py has the format). A worker running as this
 * user runs the Python command's own main on them; this client forwards
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT to it and leaves with its exit status,
 * or by its signal. Whenever no worker took the request (no configuration it
 * can read simply, no socket, refused, an old daemon), it runs the Python
 * command instead (PLUS_LIBEXEC/NAME), which then says what it always says.
 *
 * libc only. Built by scripts/install.sh, linked statically with musl where
 * it is installed (glibc's start asks the processor for its caches with
 * cpuid, a trap to the hypervisor on a virtual machine: 0.52 ms a start
 * here, musl's 0.10), else statically where the C library allows (no
 * dynamic loader at each start: 0.2 ms here):
 *   musl-gcc -O2 -Wall -Wextra -static -DPLUS_LIBEXEC='"DIR"' -DPLUS_CLIENT_SOURCE='"SHA256"' \
 *       -DPLUS_CLIENT_LIBC='"musl"'
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef PLUS_LIBEXEC
#error "PLUS_LIBEXEC (the folder of the Python commands) must be defined"
#endif
#ifndef PLUS_CLIENT_SOURCE
#define PLUS_CLIENT_SOURCE "unknown"
#endif

#ifndef PLUS_CLIENT_LIBC
#define PLUS_CLIENT_LIBC "the system's C library"
#endif

/* What tests/test_environment.py finds in the binary: the source it came
 * from, and the C library it was built with (scripts/install.sh). */
const char plus_client_source[] = "plus_client source sha256 " PLUS_CLIENT_SOURCE;
const char plus_client_libc[] = "plus_client built with " PLUS_CLIENT_LIBC;

#define DEFAULT_CONF "/etc/plus/plus.yaml"
#define DEFAULT_STATE_DIR "/var/lib/plus"
#define DEFAULT_SOCKET "plus.sock"
#define SUFFIX ".cmd"
#define CONF_BYTES (1 << 20)   /* a larger plus.yaml: the Python command reads it */
#define PATH_BYTES 4096

/* The bounds of overlay/cmdserver/frames.py (tests/test_client_differential.py checks). */
#define MAX_WORDS 4096
#define MAX_WORDS_BYTES (1 << 20)
#define MAX_ENTRIES 4096
#define MAX_ENTRIES_BYTES (256 << 10)
enum { STARTED = 1, EXITED = 2, SIGNALLED = 3, REFUSED = 4 };

extern char **environ;
static char **words;
static const char *command;
static volatile sig_atomic_t worker = 0, pending = 0, forwarded = 0;

/* The Python command, in place of this process. */
static void python_command(void) {
    char path[PATH_BYTES];
    if (snprintf(path, sizeof path, "%s/%s", PLUS_LIBEXEC, command) >= (int)sizeof path) {
        fprintf(stderr, "%s: command name too long\n", command);
        _exit(127);
    }
    execv(path, words);
    fprintf(stderr, "%s: cannot run %s: %s\n", command, path, strerror(errno));
    _exit(127);
}

/* ---- the socket's path, as overlay/wire/protocol.py finds it ---- */

static int is_identifier(const char *s, size_t n) {
    if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

static int is_space(char c) {   /* str.isspace() for ASCII */
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* One line (no line break in it): its value into *value if it is a
 * top-level `key: value` line whose key is `want` (the last such line wins). */
static void scalar(const char *line, size_t n, const char *want, char *value) {
    const char *colon = memchr(line, ':', n);
    if (colon == NULL || !is_identifier(line, (size_t)(colon - line)) ||
        strlen(want) != (size_t)(colon - line) || memcmp(line, want, strlen(want)) != 0)
        return;
    const char *rest = colon + 1, *end = line + n;
    while (rest < end && is_blank(*rest))
        rest++;
    const char *from, *to;
    if (rest < end && (*rest == '\'' || *rest == '"')) {
        const char *close = memchr(rest + 1, *rest, (size_t)(end - rest - 1));
        if (close == NULL)
            return;
        const char *after = close + 1;
        while (after < end && is_blank(*after))
            after++;
        if (after < end && *after != '#')
            return;
        from = rest + 1, to = close;
    } else {
        if (rest < end && is_space(*rest))
            return;
        const char *hash = memchr(rest, '#', (size_t)(end - rest));
        from = rest, to = hash ? hash : end;
        while (to > from && is_blank(to[-1]))
            to--;
    }
    if ((size_t)(to - from) >= PATH_BYTES)
        python_command();
    memcpy(value, from, (size_t)(to - from));
    value[to - from] = '\0';
}

/* os.path.join(a, b) into out. */
static void join(char *out, const char *a, const char *b) {
    char joined[2 * PATH_BYTES + 2];
    if (b[0] == '/')
        snprintf(joined, sizeof joined, "%s", b);
    else
        snprintf(joined, sizeof joined, "%s%s%s", a, (a[0] && a[strlen(a) - 1] != '/') ? "/" : "", b);
    if (strlen(joined) >= PATH_BYTES)
        python_command();
    strcpy(out, joined);
}

/* posixpath.normpath, in place. */
static void normpath(char *path) {
    char copy[PATH_BYTES], *parts[PATH_BYTES / 2];
    size_t count = 0;
    int initial = path[0] == '/' ? (path[1] == '/' && path[2] != '/' ? 2 : 1) : 0;
    strcpy(copy, path);
    for (char *part = strtok(copy, "/"); part; part = strtok(NULL, "/")) {
        if (strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") != 0 || (!initial && count == 0) ||
            (count > 0 && strcmp(parts[count - 1], "..") == 0))
            parts[count++] = part;
        else if (count > 0)
            count--;
    }
    char out[PATH_BYTES] = "";
    size_t len = 0;
    for (int i = 0; i < initial; i++)
        out[len++] = '/';
    for (size_t i = 0; i < count; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s", i ? "/" : "", parts[i]);
    out[len] = '\0';
    strcpy(path, len ? out : ".");
}

static void socket_path(char *out) {
    const char *conf = getenv("PLUS_CONF");
    if (conf == NULL || conf[0] == '\0')
        conf = DEFAULT_CONF;
    if (strlen(conf) >= PATH_BYTES)
        python_command();
    int fd = open(conf, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        python_command();
    static char text[CONF_BYTES + 1];
    size_t size = 0;
    for (ssize_t got; (got = read(fd, text + size, CONF_BYTES + 1 - size)) != 0; size += (size_t)got)
        if (got < 0 || size + (size_t)got > CONF_BYTES)
            python_command();
    close(fd);
    char state_dir[PATH_BYTES] = "", sock[PATH_BYTES] = "";
    for (size_t start = 0; start < size;) {
        size_t end = start;
        while (end < size && text[end] != '\n' && text[end] != '\r') {
            if ((unsigned char)text[end] >= 0x80 || text[end] == '\0')
                python_command();   /* the Python command decodes UTF-8 and judges */
            end++;
        }
        scalar(text + start, end - start, "state_dir", state_dir);
        scalar(text + start, end - start, "socket", sock);
        start = end + (end < size && text[end] == '\r' && end + 1 < size && text[end + 1] == '\n' ? 2 : 1);
    }
    char absolute[PATH_BYTES], base[PATH_BYTES];
    if (conf[0] == '/')
        strcpy(absolute, conf);
    else {
        char cwd[PATH_BYTES];
        if (getcwd(cwd, sizeof cwd) == NULL)
            python_command();
        join(absolute, cwd, conf);
    }
    normpath(absolute);
    char *slash = strrchr(absolute, '/');   /* os.path.dirname */
    size_t head = slash ? (size_t)(slash - absolute) + 1 : 0;
    absolute[head] = '\0';
    if (strspn(absolute, "/") != head)
        while (head > 0 && absolute[head - 1] == '/')
            absolute[--head] = '\0';
    join(base, absolute, state_dir[0] ? state_dir : DEFAULT_STATE_DIR);
    join(out, base, sock[0] ? sock : DEFAULT_SOCKET);
    normpath(out);
}

/* ---- signals ---- */

static void die_by(int number) {
    if (number == SIGINT)
        _exit(128 + SIGINT);           /* as the Python command leaves on KeyboardInterrupt */
    signal(number, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, number);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(number);
    _exit(128 + number);
}

static void forward(int number) {
    if (worker > 0) {
        int saved = errno;
        kill((pid_t)worker, number);
        forwarded = number;
        errno = saved;
    } else
        pending = number;
}

/* ---- the request ---- */

static int send_all(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t sent = send(fd, data, size, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0)
            return -1;
        data += sent, size -= (size_t)sent;
    }
    return 0;
}

static int read_frame(int fd, int32_t frame[2]) {
    size_t got = 0;
    while (got < 8) {
        ssize_t n = read(fd, (char *)frame + got, 8 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

int main(int argc, char **argv) {
    (void)argc;
    words = argv;
    command = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

    size_t nwords = 0, words_bytes = 0, nentries = 0, entries_bytes = 0;
    for (char **w = argv; *w; w++)
        nwords++, words_bytes += strlen(*w) + 1;
    for (char **e = environ; *e; e++)
        nentries++, entries_bytes += strlen(*e) + 1;
    if (nwords == 0 || nwords > MAX_WORDS || words_bytes > MAX_WORDS_BYTES ||
        nentries > MAX_ENTRIES || entries_bytes > MAX_ENTRIES_BYTES)
        python_command();

    char path[PATH_BYTES + sizeof SUFFIX];
    socket_path(path);
    strcat(path, SUFFIX);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path)
        python_command();
    strcpy(address.sun_path, path);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0 || connect(sock, (struct sockaddr *)&address, sizeof address) < 0)
        python_command();

    int fds[4], nfds = 0;
    uint32_t streams = 0;
    fds[nfds] = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fds[nfds++] < 0)
        python_command();
    for (int i = 0; i < 3; i++)
        if (fcntl(i, F_GETFD) != -1)
            streams |= 1u << i, fds[nfds++] = i;
    mode_t mask = umask(0);
    umask(mask);

    size_t body_size = words_bytes + entries_bytes;
    char *body = malloc(body_size ? body_size : 1), *at = body;
    if (body == NULL)
        python_command();
    for (char **w = argv; *w; w++)
        at = stpcpy(at, *w) + 1;
    for (char **e = environ; *e; e++)
        at = stpcpy(at, *e) + 1;
    struct {
        char magic[4];
        uint32_t streams, umask, words, entries, size;
    } __attribute__((packed)) header = {{'P', 'L', 'C', '1'}, streams, (uint32_t)mask,
                                        (uint32_t)nwords, (uint32_t)nentries, (uint32_t)body_size};
    union {
        char buffer[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec parts[2] = {{&header, sizeof header}, {body, body_size}};
    struct msghdr message = {.msg_iov = parts, .msg_iovlen = 2, .msg_control = control.buffer,
                             .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds)};
    struct cmsghdr *rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
    memcpy(CMSG_DATA(rights), fds, sizeof(int) * (size_t)nfds);

    struct sigaction forwarding = {.sa_handler = forward, .sa_flags = SA_RESTART};
    sigemptyset(&forwarding.sa_mask);
    int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof *forwarded_signals; i++)
        sigaction(forwarded_signals[i], &forwarding, NULL);

    ssize_t sent;               /* one sendmsg: the header, its descriptors and the body */
    while ((sent = sendmsg(sock, &message, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (sent >= 0 && (size_t)sent < sizeof header)
        send_all(sock, (char *)&header + sent, sizeof header - (size_t)sent), sent = sizeof header;
    if (sent >= 0)          /* what the socket's buffer did not take; a refusal is read below */
        send_all(sock, body + (sent - (ssize_t)sizeof header),
                 body_size - (size_t)(sent - (ssize_t)sizeof header));
    close(fds[0]);
    free(body);

    int32_t frame[2];
    for (;;) {
        if (read_frame(sock, frame) < 0) {
            if (worker <= 0) {          /* no worker took it: nothing ran */
                if (pending)
                    die_by(pending);
                python_command();
            }
            if (forwarded)
                die_by(forwarded);
            /* The worker died mid-command (the daemon's whole group was
             * killed): whether it took effect is unknown, as when the daemon
             * dies under the Python command, which says so in these words
             * with EXIT_UNREACHABLE (overlay/wire/protocol.py), never 1
             * ("refused"), which would tell a script that nothing was done. */
            fprintf(stderr, "%s: plus_scheduler closed the connection without an answer\n",
                    command);
            _exit(3);
        }
        switch (frame[0]) {
        case STARTED:
            worker = frame[1];
            if (pending)
                forward(pending);
            break;
        case EXITED:
            _exit(frame[1] & 0xFF);
        case SIGNALLED:
            die_by(frame[1]);
            break;
        case REFUSED:
            if (worker <= 0) {
                if (pending)
                    die_by(pending);
                python_command();
            }
            break;
        default:
            break;
        }
    }
}
