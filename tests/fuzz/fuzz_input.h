/* tests/fuzz/fuzz_input.h — the fuzz input as a file, for targets whose parser
 * opens a path (model files, tokenizer files).
 *
 * The bytes go into one memfd per process (no disk writes), rewritten for each
 * input. Readers that choose by file name (safetensors) get a symlink ending in
 * the given suffix, /tmp/memra-fuzz-PID<suffix>, removed at exit; the others
 * read /proc/self/fd/N. Returns the path, or NULL when the memfd cannot be
 * made or written (the target then skips the input). */
#ifndef MEMRA_FUZZ_INPUT_H
#define MEMRA_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static char fuzz_input_link[64];

static void fuzz_input_remove_link(void) { unlink(fuzz_input_link); }

static inline const char *fuzz_input_path(const uint8_t *data, size_t size, const char *suffix)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-input", 0);
        if (fd < 0)
            return NULL;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (suffix) {
            char target[64];
            snprintf(target, sizeof(target), "/proc/%d/fd/%d", (int)getpid(), fd);
            snprintf(fuzz_input_link, sizeof(fuzz_input_link), "/tmp/memra-fuzz-%d%s", (int)getpid(), suffix);
            unlink(fuzz_input_link);
            if (symlink(target, fuzz_input_link) != 0)
                abort();
            atexit(fuzz_input_remove_link);
        }
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        return NULL;
    return suffix ? fuzz_input_link : path;
}

#endif
