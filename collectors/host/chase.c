/* stallscope's memory-latency probe: a dependent-load pointer chase (docs/memory-latency.md).
 *
 *   chase BYTES PAGE REPS LOADS WARM SEED
 *
 * BYTES of 64-byte nodes (one cache line each) in one anonymous mapping; PAGE "4k" asks
 * the kernel for base pages (madvise MADV_NOHUGEPAGE), "thp" for transparent huge pages
 * (MADV_HUGEPAGE). The first word of each node points to the next: one random cycle through
 * every node (Sattolo's algorithm, seeded), so the walk p = *p visits each line once a lap
 * in an order no prefetcher can guess, and every load waits for the one before it. After WARM
 * loads, REPS reps of LOADS loads each are timed with CLOCK_MONOTONIC; each rep continues
 * the walk where the last one stopped. Output, plain text (collectors/host/latency.py reads it):
 *
 *   # chase 1 bytes=B nodes=N page=4k seed=S reps=R loads=L warm=W
 *   # map_ms=M cycle_ms=C warm_ms=W huge_bytes=H
 *   rep I NS_PER_LOAD NODE               (one line a rep; NODE: where the walk stands after it)
 *   end NODE                             (printed, so the compiler cannot drop the walk)
 *
 * Exit status 2 on bad arguments, 1 when the memory cannot be had.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23      /* Linux 5.14; older kernels refuse it and fault on first touch */
#endif

#define LINE 64
#define HUGE_ALIGN (2UL << 20)

typedef struct node { struct node *next; char pad[LINE - sizeof(struct node *)]; } node;

static uint64_t rng_state;

static uint64_t splitmix64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A uniform index below `bound` (multiply-shift; its bias, < bound / 2^64, is nil here). */
static uint64_t below(uint64_t bound) {
    return (uint64_t)(((unsigned __int128)splitmix64() * bound) >> 64);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The mapping, aligned to 2 MiB so huge pages can back all of it when asked for. */
static node *map_nodes(size_t bytes, int huge) {
    size_t len = bytes + HUGE_ALIGN;
    char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *start = (char *)(((uintptr_t)raw + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1));
    if (madvise(start, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0)
        perror("chase: madvise (the kernel's default page size is used)");
    madvise(start, bytes, MADV_POPULATE_WRITE);    /* all pages at once: 3-6x faster than faults */
    return (node *)start;
}

/* Sattolo's algorithm on the nodes' own pointers: start from the identity (each node points
 * to itself), swap node i's pointer with a random earlier node's, i from the top down. The
 * result is one cycle through all n nodes. The pass walks i down the buffer (sequential) and
 * touches one random node a step; those touches do not depend on each other, so they overlap. */
static void make_cycle(node *nodes, size_t n) {
    for (size_t i = 0; i < n; i++)
        nodes[i].next = &nodes[i];
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = below(i);
        node *t = nodes[i].next;
        nodes[i].next = nodes[j].next;
        nodes[j].next = t;
    }
}

#define STEP p = p->next;
#define STEP8 STEP STEP STEP STEP STEP STEP STEP STEP

/* `loads` dependent loads from p (rounded up to a multiple of 16); returns where it stopped. */
static node *walk(node *p, size_t loads) {
    for (size_t k = 0; k < loads; k += 16) {
        STEP8 STEP8
    }
    return p;
}

/* Bytes of this process on transparent huge pages (AnonHugePages), -1 if unknown. */
static long long huge_bytes(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: chase BYTES 4k|thp REPS LOADS WARM SEED\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    int huge = strcmp(argv[2], "thp") == 0;
    long reps = strtol(argv[3], NULL, 10);
    size_t loads = strtoull(argv[4], NULL, 10), warm = strtoull(argv[5], NULL, 10);
    rng_state = strtoull(argv[6], NULL, 10);
    size_t n = bytes / LINE;
    if ((!huge && strcmp(argv[2], "4k") != 0) || n < 2 || reps < 1 || loads < 16) {
        fprintf(stderr, "chase: bad arguments (BYTES >= 128, PAGE 4k or thp, REPS >= 1, LOADS >= 16)\n");
        return 2;
    }
    printf("# chase 1 bytes=%zu nodes=%zu page=%s seed=%s reps=%ld loads=%zu warm=%zu\n",
           n * LINE, n, huge ? "thp" : "4k", argv[6], reps, loads, warm);
    double t0 = now_ns();
    node *nodes = map_nodes(n * LINE, huge);
    if (!nodes) {
        perror("chase: mmap");
        return 1;
    }
    double t1 = now_ns();
    make_cycle(nodes, n);
    double t2 = now_ns();
    node *p = walk(&nodes[0], warm);
    double t3 = now_ns();
    printf("# map_ms=%.1f cycle_ms=%.1f warm_ms=%.1f huge_bytes=%lld\n", (t1 - t0) / 1e6,
           (t2 - t1) / 1e6, (t3 - t2) / 1e6, huge_bytes());
    size_t done = (loads + 15) / 16 * 16;
    for (long r = 0; r < reps; r++) {
        double a = now_ns();
        p = walk(p, loads);
        double b = now_ns();
        printf("rep %ld %.3f %zu\n", r, (b - a) / done, (size_t)(p - nodes));
    }
    printf("end %zu\n", (size_t)(p - nodes));
    return 0;
}
