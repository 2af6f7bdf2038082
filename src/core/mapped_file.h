/* core/mapped_file.h — a read-only memory map of a whole file.
 * Model weights are used in place from the map; at load only plain float
 * weights a file put off their element size are copied (model/weights.c). */
#ifndef MEMRA_CORE_MAPPED_FILE_H
#define MEMRA_CORE_MAPPED_FILE_H

#include <stddef.h>
#include <stdint.h>

struct mapped_file {
    const uint8_t *data; /* (size) bytes, read-only; NULL for an empty file */
    uint64_t size;
};

/* 0 on success; -1 with "PATH: reason" in err. */
int mapped_file_open(struct mapped_file *mf, const char *path, char *err, size_t errlen);
void mapped_file_close(struct mapped_file *mf);

#endif
