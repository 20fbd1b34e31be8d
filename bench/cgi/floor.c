/*
 * floor: what a fresh process per request costs at the least, on this machine
 * (issue 29; bench/README.md, "CGI and FastCGI", the floor).
 *
 *   floor fork  [-n N] [-p P] [--like PID] [--code K] [--heap K] [--fresh K]
 *       N times (in each of P loops at once): fork; the child does nothing but
 *       _exit(0) (or first touches what a worker touches: see below); the parent
 *       reaps it. Prints the wall time and the CPU per iteration, both of the
 *       process tree (getrusage) and of the whole machine (/proc/stat: both cores,
 *       everything that ran, other agents' work included: run it on a quiet machine).
 *
 *   floor serve PORT [--fork] [--like PID] [--code K] [--heap K] [--fresh K]
 *       A trivial FastCGI responder on 127.0.0.1:PORT: it answers every request with
 *       the same page (the bench page's bytes, 100 rows) without running anything.
 *       With --fork, every connection is answered by a child forked for it (which
 *       then exits; the parent reaps it): the mechanism of a fresh process per
 *       request and nothing else.
 *
 *   --like PID   before anything, map what process PID has mapped: the same files at
 *                the same sizes and protections, and anonymous mappings of the same
 *                sizes, with as many pages made present (written, for anonymous and
 *                copy-on-write pages; read, for file pages) as PID has resident, so
 *                that a fork copies about as many page-table entries and mappings as
 *                a fork of PID would (our own few mappings come on top).
 *   --code K     the child reads one byte in each of K pages 64 KiB apart of the first
 *                executable file mapping it was given by --like (a fork does not copy
 *                file pages' entries: each is a fault, as a worker's code faults are).
 *   --heap K     the child writes one byte in each of K of the copied anonymous pages
 *                (copy on write, as a worker's writes to the warm process's heap).
 *   --fresh K    the child writes K pages of a new anonymous mapping (as the arena).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static char *code_base;          /* the first executable file mapping of --like */
static size_t code_len;
static char **anon_pages;        /* present anonymous pages of --like */
static size_t anon_count;
static int opt_code, opt_heap, opt_fresh;

static void die(const char *what) {
    perror(what);
    exit(2);
}

/* Reserve a large region; each mapping is put in it with a hole of one page after it
 * (unmapped: no mapping of ours merges with the next). */
static char *arena_at;
static char *arena_end;

static char *place(size_t len, size_t align) {
    arena_at = (char *)(((uintptr_t)arena_at + align - 1) & ~(uintptr_t)(align - 1));
    if (arena_at + len + PAGE > arena_end) {
        fprintf(stderr, "floor: --like: the address space reserved is too small\n");
        exit(2);
    }
    char *p = arena_at;
    arena_at += len + PAGE;
    return p;
}

static void like(int pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps", pid);
    FILE *f = fopen(path, "r");
    if (!f) die("floor: smaps");
    size_t reserve = 1UL << 36; /* 64 GiB of address space, PROT_NONE, then given back */
    char *r = mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) die("floor: reserve");
    arena_at = r;
    arena_end = r + reserve;
    char line[4096];
    unsigned long lo = 0, hi = 0, off = 0;
    char perms[8] = "", file[4096] = "";
    long rss = -1, anon = -1, anon_huge = 0;
    int have = 0, maps = 0;
    long pages_anon = 0, pages_file = 0;
    anon_pages = calloc(1 << 20, sizeof *anon_pages);
    for (;;) {
        char *got = fgets(line, sizeof line, f);
        unsigned long a, b;
        int is_head = got && sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ');
        if ((is_head || !got) && have && rss >= 0 && anon >= 0) {
            size_t len = hi - lo;
            int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                       (perms[2] == 'x' ? PROT_EXEC : 0);
            int special = file[0] == '[' && strcmp(file, "[heap]") && strcmp(file, "[stack]");
            if (!special) {
                char *at = place(len, anon_huge > 0 ? (2UL << 20) : PAGE);
                char *m;
                if (file[0] == '/') {
                    int fd = open(file, O_RDONLY);
                    if (fd < 0) die(file);
                    m = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, off);
                    close(fd);
                } else {
                    m = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
                }
                if (m == MAP_FAILED) die("floor: mmap");
                if (anon_huge > 0) madvise(m, len, MADV_HUGEPAGE); /* as the warm process's code in huge pages */
                size_t npages = len / PAGE;
                size_t want_anon = (size_t)anon / 4, want_file = (size_t)(rss - anon) / 4;
                for (size_t i = 0; i < npages && (want_anon || want_file); i++) {
                    volatile char *p = m + i * PAGE;
                    if (want_anon) {
                        *p = *p; /* a write: this page becomes the process's own (anonymous) */
                        want_anon--;
                        if (prot & PROT_WRITE) anon_pages[anon_count++] = (char *)p;
                        pages_anon++;
                    } else if (file[0] == '/') {
                        (void)*p; /* a read: a file page mapped */
                        want_file--;
                        pages_file++;
                    } else {
                        break;
                    }
                }
                if (mprotect(m, len, prot) < 0) die("floor: mprotect");
                if ((prot & PROT_EXEC) && file[0] == '/' && !code_base) {
                    code_base = m;
                    code_len = len;
                }
                maps++;
            }
            have = 0;
        }
        if (!got) break;
        if (is_head) {
            lo = a;
            hi = b;
            file[0] = 0;
            sscanf(line, "%*x-%*x %7s %lx %*s %*s %4095[^\n]", perms, &off, file);
            char *s = file;
            while (*s == ' ') s++;
            memmove(file, s, strlen(s) + 1);
            rss = anon = -1;
            anon_huge = 0;
            have = 1;
        } else if (!strncmp(line, "Rss:", 4)) {
            rss = atol(line + 4);
        } else if (!strncmp(line, "Anonymous:", 10)) {
            anon = atol(line + 10);
        } else if (!strncmp(line, "AnonHugePages:", 14)) {
            anon_huge = atol(line + 14);
        }
    }
    fclose(f);
    /* the reserved space not used is given back */
    munmap(arena_at, arena_end - arena_at);
    fprintf(stderr, "floor: like %d: %d mappings, %ld anonymous pages written, %ld file pages read\n", pid, maps,
            pages_anon, pages_file);
}

/* What a child touches before it exits. */
static void child_work(void) {
    if (opt_code && code_base) {
        for (int i = 0; i < opt_code; i++) {
            size_t o = ((size_t)i * 16 * PAGE) % code_len;
            (void)*(volatile char *)(code_base + o);
        }
    }
    if (opt_heap && anon_count) {
        /* every third page: spread over the mappings, as a worker's writes are */
        int done = 0;
        for (size_t i = 0; i < anon_count && done < opt_heap; i += 3, done++) {
            volatile char *q = anon_pages[i];
            *q = *q;
        }
    }
    if (opt_fresh) {
        char *m = mmap(NULL, (size_t)opt_fresh * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED)
            for (int i = 0; i < opt_fresh; i++) m[(size_t)i * PAGE] = 1;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* user+nice+system+irq+softirq+steal jiffies of the whole machine, and idle+iowait */
static void machine(unsigned long long *busy, unsigned long long *idle) {
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long u, n, s, i, w, x, y, z;
    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &n, &s, &i, &w, &x, &y, &z) != 8)
        die("/proc/stat");
    fclose(f);
    *busy = u + n + s + x + y + z;
    *idle = i + w;
}

static double rus(int who) {
    struct rusage r;
    getrusage(who, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static void fork_loop(long n) {
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) die("fork");
        if (p == 0) {
            child_work();
            _exit(0);
        }
        int st;
        if (waitpid(p, &st, 0) != p) die("waitpid");
    }
}

static int cmd_fork(long n, int par) {
    long tick = sysconf(_SC_CLK_TCK);
    unsigned long long b0, i0, b1, i1;
    fork_loop(n / 10 + 1); /* warm up */
    double s0 = rus(RUSAGE_SELF) + rus(RUSAGE_CHILDREN);
    machine(&b0, &i0);
    double t0 = now();
    if (par <= 1) {
        fork_loop(n);
    } else {
        for (int k = 0; k < par; k++) {
            pid_t p = fork();
            if (p == 0) {
                fork_loop(n);
                _exit(0);
            }
        }
        while (wait(NULL) > 0) {
        }
    }
    double t1 = now();
    machine(&b1, &i1);
    double s1 = rus(RUSAGE_SELF) + rus(RUSAGE_CHILDREN);
    long total = n * (par < 1 ? 1 : par);
    printf("forks %ld (%d loops): wall %.3f s, %.0f forks/s; CPU per fork: process tree %.1f us, "
           "machine %.1f us (busy %.0f%% of %ld CPUs)\n",
           total, par, t1 - t0, total / (t1 - t0), (s1 - s0) / total * 1e6,
           (double)(b1 - b0) / tick / total * 1e6,
           100.0 * (b1 - b0) / ((b1 - b0) + (i1 - i0) + 1e-9), sysconf(_SC_NPROCESSORS_ONLN));
    return 0;
}

/* ---- FastCGI ---- */

static char response[8192];
static size_t response_len;

static void build_response(void) {
    char body[6000];
    size_t b = 0;
    b += sprintf(body + b, "Content-Type: text/html; charset=utf-8\r\n\r\n");
    b += sprintf(body + b, "<!doctype html><html><head><title>Table</title></head><body><table>\n");
    for (int i = 1; i <= 100; i++)
        b += sprintf(body + b, "<tr><td>%d</td><td>&lt;b&gt;bench&lt;/b&gt;</td></tr>\n", i);
    b += sprintf(body + b, "</table></body></html>\n");
    response_len = 0;
    size_t pad = (8 - b % 8) % 8;
    unsigned char h[8] = {1, 6, 0, 1, (unsigned char)(b >> 8), (unsigned char)b, (unsigned char)pad, 0};
    memcpy(response, h, 8);
    memcpy(response + 8, body, b);
    memset(response + 8 + b, 0, pad);
    response_len = 8 + b + pad;
    unsigned char e[8] = {1, 6, 0, 1, 0, 0, 0, 0};
    memcpy(response + response_len, e, 8);
    response_len += 8;
    unsigned char end[16] = {1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(response + response_len, end, 16);
    response_len += 16;
}

/* Reads records until the empty FCGI_STDIN record; answers; again if KEEP_CONN. */
static void answer(int c) {
    static unsigned char buf[65536];
    size_t have = 0;
    for (;;) {
        int keep = 0, done = 0;
        while (!done) {
            while (have >= 8) {
                size_t clen = ((size_t)buf[4] << 8) | buf[5], rlen = 8 + clen + buf[6];
                if (have < rlen) break;
                unsigned type = buf[1];
                unsigned rid = ((unsigned)buf[2] << 8) | buf[3];
                if (type == 1 && clen >= 3) keep = buf[8 + 2] & 1;
                if (type == 5 && clen == 0) done = 1;
                if (type == 5 || type == 1 || type == 4) {
                    response[2] = response[response_len - 16 - 8 + 2] = response[response_len - 16 + 2] =
                        (unsigned char)(rid >> 8);
                    response[3] = response[response_len - 16 - 8 + 3] = response[response_len - 16 + 3] =
                        (unsigned char)rid;
                }
                memmove(buf, buf + rlen, have - rlen);
                have -= rlen;
            }
            if (done) break;
            ssize_t r = read(c, buf + have, sizeof buf - have);
            if (r <= 0) return;
            have += (size_t)r;
        }
        size_t off = 0;
        while (off < response_len) {
            ssize_t w = write(c, response + off, response_len - off);
            if (w <= 0) return;
            off += (size_t)w;
        }
        if (!keep) return;
    }
}

static int cmd_serve(int port, int do_fork) {
    build_response();
    signal(SIGPIPE, SIG_IGN);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(s, 1024) < 0) die("listen");
    fprintf(stderr, "floor: serving on 127.0.0.1:%d%s\n", port, do_fork ? ", a child forked per connection" : "");
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR) continue;
            die("accept");
        }
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (!do_fork) {
            answer(c);
            close(c);
            continue;
        }
        pid_t p = fork();
        if (p == 0) {
            close(s);
            child_work();
            answer(c);
            _exit(0);
        }
        close(c);
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: floor fork|serve ...\n");
        return 2;
    }
    long n = 20000;
    int par = 1, pid = 0, do_fork = 0, port = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) par = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--like") && i + 1 < argc) pid = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--code") && i + 1 < argc) opt_code = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--heap") && i + 1 < argc) opt_heap = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fresh") && i + 1 < argc) opt_fresh = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fork")) do_fork = 1;
        else if (argv[i][0] != '-') port = atoi(argv[i]);
        else {
            fprintf(stderr, "floor: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (pid) like(pid);
    if (!strcmp(argv[1], "fork")) return cmd_fork(n, par);
    if (!strcmp(argv[1], "serve")) return cmd_serve(port, do_fork);
    fprintf(stderr, "floor: unknown command %s\n", argv[1]);
    return 2;
}
