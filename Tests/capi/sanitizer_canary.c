/*
 * sanitizer_canary heap|race
 *
 * A bug the sanitizer of this build must catch; its tests are marked WILL_FAIL, so a sanitizer build that silently
 * lost its instrumentation (wrong compiler, flags dropped) fails instead of passing everything.
 *   heap  reads one byte past a heap block (AddressSanitizer)
 *   race  two threads increment one counter without a lock (ThreadSanitizer)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long counter;

static void *bump(void *arg) {
    (void)arg;
    for (int i = 0; i < 100000; i++) counter = counter + 1;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s heap|race\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "heap") == 0) {
        volatile char *p = malloc(16);
        int past = p[16]; /* the bug */
        free((void *)p);
        printf("read %d past the block unnoticed\n", past);
        return 0;
    }
    if (strcmp(argv[1], "race") == 0) {
        pthread_t a, b;
        pthread_create(&a, NULL, bump, NULL);
        pthread_create(&b, NULL, bump, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        printf("counter %ld, race unnoticed\n", counter);
        return 0;
    }
    return 2;
}
