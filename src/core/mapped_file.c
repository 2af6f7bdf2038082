/* core/mapped_file.c — see mapped_file.h. */
#include "core/mapped_file.h"
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int mapped_file_open(struct mapped_file *mf, const char *path, char *err, size_t errlen)
{
    memset(mf, 0, sizeof(*mf));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        err_set(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        goto err;
    }
    if (!S_ISREG(st.st_mode)) {
        err_set(err, errlen, "%s: not a regular file", path);
        goto err;
    }
    mf->size = (uint64_t)st.st_size;
    if (mf->size > 0) {
        void *p = mmap(NULL, mf->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            err_set(err, errlen, "%s: cannot map %llu bytes: %s", path,
                    (unsigned long long)mf->size, strerror(errno));
            goto err;
        }
        mf->data = p;
    }
    close(fd);
    return 0;
err:
    close(fd);
    mf->size = 0;
    return -1;
}

void mapped_file_close(struct mapped_file *mf)
{
    if (mf->data)
        munmap((void *)mf->data, mf->size);
    mf->data = NULL;
    mf->size = 0;
}
