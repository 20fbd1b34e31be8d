// What a parsed record of the 100 MB document would hold under other value layouts:
// 739,159 records allocated block by block with glibc malloc, as each layout would
// allocate them, and the peak RSS (WORKLOG, ninth session, "strings of up to 22 bytes").
//
//   cc -O2 -o /tmp/layouts layouts.c && /tmp/layouts NAME SIZE...
//
// SIZE: the request of each allocation of one record (bytes), e.g. this session's
// layout: `/tmp/layouts now 56 104 40 40` (the map's Rc box, the shaped values' box, the
// name's and the e-mail's string boxes). The list's slots (16 bytes a record) are one
// block; the process's own pages are in every figure (run with no SIZE for them).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(int argc, char **argv) {
    int n = 739159;
    char *slots = malloc((size_t)n * 16);
    memset(slots, 1, (size_t)n * 16);
    for (int i = 0; i < n; i++)
        for (int j = 2; j < argc; j++) {
            size_t s = (size_t)atoi(argv[j]);
            char *p = malloc(s);
            memset(p, 1, s);
        }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%-24s %7.1f MiB\n", argc > 1 ? argv[1] : "", ru.ru_maxrss / 1024.0);
    return 0;
}
