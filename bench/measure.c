/*
 * measure: run a command and report its CPU time and peak RSS.
 *
 *   measure CMD [ARG...]
 *
 * The command inherits stdin, stdout and stderr. When it ends, one line is
 * appended to stderr:
 *
 *   @@measure <status> <user_us> <sys_us> <maxrss_kb>
 *
 * where <status> is the exit code, or 128 + signal number.
 *
 * Why not os.wait4 from Python directly: on Linux a child's ru_maxrss also
 * counts the memory of the process that forked it (the pages copied at fork,
 * or the whole parent with vfork/posix_spawn, are recorded at exec), so any
 * child of a ~10 MB Python runner reports at least ~10 MB. This helper is a
 * tiny C program that uses plain fork(), so what it adds is a few pages,
 * below any interpreter's own footprint.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: measure CMD [ARG...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("measure: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "measure: cannot run %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("measure: wait4");
            return 2;
        }
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status)
             : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
    long long user_us = (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec;
    long long sys_us = (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
    fflush(stdout);
    fprintf(stderr, "\n@@measure %d %lld %lld %ld\n", code, user_us, sys_us, ru.ru_maxrss);
    return 0;
}
