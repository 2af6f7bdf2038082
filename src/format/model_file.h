/* format/model_file.h — one read-only view over a model on disk.
 *
 * A GGUF file, a safetensors file (or a sharded set through its
 * model.safetensors.index.json), or a Hugging Face model folder all open into
 * the same struct: typed metadata key/values, a table of named tensors whose
 * bytes stay in the memory map, and (for a folder) config.json plus the paths of
 * the tokenizer files. Everything downstream (tokenizer, model registry,
 * memra-inspect) reads this view and never parses a file format itself.
 *
 * Model files are untrusted input: every reader bounds every length and offset
 * against the bytes actually present and fails with "PATH: what is wrong" in the
 * caller's buffer — never an abort or an out-of-bounds read.
 *
 * Conventions:
 * - Tensor shapes are outermost first (PyTorch order): a Linear weight of
 *   out_features × in_features has shape {out, in}. GGUF stores ne[] innermost
 *   first; its reader reverses them.
 * - Metadata value types use GGUF's numbering. Safetensors "__metadata__" entries
 *   become string values. For a folder, config.json is kept as JSON (`config`).
 * - All strings handed out are NUL-terminated copies in the view's arena; a
 *   string may also contain NUL bytes, so use the length where it matters.
 */
#ifndef MEMRA_FORMAT_MODEL_FILE_H
#define MEMRA_FORMAT_MODEL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/strmap.h"

struct json_t; /* jansson */

#define MF_MAX_DIMS 8
/* Limits that stop absurd counts before any allocation (each is far above what
 * real checkpoints use; a file beyond them is refused with a message). */
#define MF_MAX_TENSORS (1u << 20)
#define MF_MAX_KVS (1u << 16)
#define MF_MAX_NESTING 8
#define MF_MAX_SHARDS 4096
#define MF_MAX_NAME_LEN 4096            /* tensor names and metadata keys */
#define MF_MAX_JSON_HEADER (100u << 20) /* safetensors header bytes */

enum mf_format { MF_FORMAT_GGUF, MF_FORMAT_SAFETENSORS, MF_FORMAT_HF_DIR };

enum mf_vtype { /* same numbers as GGUF's value types */
    MF_VT_U8 = 0, MF_VT_I8 = 1, MF_VT_U16 = 2, MF_VT_I16 = 3, MF_VT_U32 = 4, MF_VT_I32 = 5,
    MF_VT_F32 = 6, MF_VT_BOOL = 7, MF_VT_STR = 8, MF_VT_ARR = 9, MF_VT_U64 = 10,
    MF_VT_I64 = 11, MF_VT_F64 = 12,
    MF_VT_COUNT
};

struct mf_str {
    const char *ptr; /* NUL-terminated copy; may hold inner NULs */
    uint64_t len;
};

struct mf_value {
    enum mf_vtype type;
    union {
        uint64_t u64;    /* U8, U16, U32, U64 (widened) */
        int64_t i64;     /* I8, I16, I32, I64 (widened) */
        double f64;      /* F32, F64 (widened) */
        bool b;          /* BOOL */
        struct mf_str str;
        struct {
            enum mf_vtype type; /* element type */
            uint64_t n;
            /* (n) elements: uint8_t/int8_t/.../float/double/bool packed in their
             * own C type for scalars, struct mf_str for STR, struct mf_value
             * (each of type ARR) for nested arrays */
            const void *data;
        } arr;
    } v;
};

struct mf_kv {
    const char *key;
    struct mf_value value;
};

struct mf_tensor {
    const char *name;
    enum dtype dtype;
    uint32_t n_dims;
    uint64_t shape[MF_MAX_DIMS]; /* outermost first; unused dims are 1 */
    uint64_t n_elements;
    uint64_t n_bytes;
    const uint8_t *data;         /* (n_bytes) inside files[file_index]'s map; GGUF data is
                                  * aligned to gguf_alignment, safetensors data to nothing
                                  * in particular (read it with memcpy or copy it) */
    uint32_t file_index;
};

struct model_file {
    enum mf_format format;
    const char *path;            /* as opened */

    /* GGUF only */
    uint32_t gguf_version;       /* 2 or 3 */
    uint64_t gguf_alignment;     /* general.alignment, default 32 */

    struct mf_kv *kvs;           /* (n_kvs) in file order */
    uint64_t n_kvs;
    struct mf_tensor *tensors;   /* (n_tensors) in file order */
    uint64_t n_tensors;

    struct mapped_file *files;   /* (n_files) the GGUF or the safetensors shards */
    const char **file_paths;     /* (n_files) */
    uint32_t n_files;

    /* Hugging Face folder only (NULL when absent or not a folder) */
    struct json_t *config;            /* config.json */
    struct json_t *generation_config; /* generation_config.json */
    const char *dir;                  /* the folder */
    const char *tokenizer_json_path;  /* tokenizer.json */
    const char *tokenizer_config_path;/* tokenizer_config.json */
    const char *chat_template_path;   /* chat_template.jinja, if shipped separately */

    /* private */
    struct arena arena;
    struct strmap tensor_index;  /* name → index into tensors */
    struct strmap kv_index;      /* key → index into kvs */
};

/* Open PATH: a .gguf file, a .safetensors file, a model.safetensors.index.json,
 * or a folder holding config.json and safetensors weights (a folder holding a
 * single .gguf opens that). 0 on success; -1 with the reason in err. */
int model_file_open(struct model_file *mf, const char *path, char *err, size_t errlen);
void model_file_close(struct model_file *mf);

const struct mf_tensor *model_file_find_tensor(const struct model_file *mf, const char *name);
const struct mf_value *model_file_find_kv(const struct model_file *mf, const char *key);

/* Typed getters: 0 when the key exists with a compatible type (any integer type
 * that fits for the integer getters, F32/F64 or integer for get_f64), -1 when
 * absent or mismatched — with "PATH: KEY ..." in err. */
int model_file_get_u64(const struct model_file *mf, const char *key, uint64_t *out, char *err, size_t errlen);
int model_file_get_i64(const struct model_file *mf, const char *key, int64_t *out, char *err, size_t errlen);
int model_file_get_f64(const struct model_file *mf, const char *key, double *out, char *err, size_t errlen);
int model_file_get_bool(const struct model_file *mf, const char *key, bool *out, char *err, size_t errlen);
int model_file_get_str(const struct model_file *mf, const char *key, struct mf_str *out, char *err, size_t errlen);
/* An array of ELEM type (MF_VT_COUNT accepts any element type). */
int model_file_get_arr(const struct model_file *mf, const char *key, enum mf_vtype elem,
                       const struct mf_value **out, char *err, size_t errlen);

const char *mf_vtype_name(enum mf_vtype t);
const char *mf_format_name(enum mf_format f);

/* --- for the readers (gguf.c, safetensors.c, hfdir.c), not for users of the view --- */
int gguf_open(struct model_file *mf, const char *path, char *err, size_t errlen);
int safetensors_open(struct model_file *mf, const char *path, char *err, size_t errlen);
int hfdir_open(struct model_file *mf, const char *dir, char *err, size_t errlen);
/* A reader of one file: mf's file table set to path, mapped. */
int model_file_map_one(struct model_file *mf, const char *path, char *err, size_t errlen);
/* Finish a reader's work: build the name indexes, refusing duplicate tensor
 * names and metadata keys. */
int model_file_build_index(struct model_file *mf, char *err, size_t errlen);

#endif
