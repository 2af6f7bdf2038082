/* engine/backend.c — the list of backends built into this binary and the
 * open/close helpers over their vtables. The CUDA backend joins the list when
 * the build has it (MEMRA_HAVE_CUDA_BACKEND, set by CMake whenever nvcc is
 * found); it is the default only when a device is actually usable, so a CUDA
 * build on a machine without a GPU still runs on the CPU. Nothing else in the
 * engine names a backend. */
#include "engine/backend.h"
#include "backend/cpu/backend_cpu.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#ifdef MEMRA_HAVE_CUDA_BACKEND
#include "backend/cuda/backend_cuda.h"
#endif

static const struct backend_ops *const g_backends[] = {
#ifdef MEMRA_HAVE_CUDA_BACKEND
    &backend_cuda_ops,
#endif
    &backend_cpu_ops,
};

const struct backend_ops *backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof(g_backends) / sizeof(g_backends[0]); i++)
        if (strcmp(g_backends[i]->name, name) == 0)
            return g_backends[i];
    return NULL;
}

const char *backend_default_name(void)
{
    const char *env = getenv("MEMRA_BACKEND");
    if (env && *env)
        return env;
#ifdef MEMRA_HAVE_CUDA_BACKEND
    if (backend_cuda_usable())
        return backend_cuda_ops.name;
#endif
    return backend_cpu_ops.name;
}

/* "f32" → false, "bf16" → true in *bf16; else −1 naming what and the value (the
 * KV and activation types share the spelling). */
static int parse_f32_bf16(const char *s, const char *what, bool *bf16, char *err, size_t errlen)
{
    if (strcmp(s, "f32") != 0 && strcmp(s, "bf16") != 0)
        return err_set(err, errlen, "%s '%.32s' is not f32 or bf16", what, s);
    *bf16 = strcmp(s, "bf16") == 0;
    return 0;
}

int backend_kv_type_parse(const char *s, enum backend_kv_type *out, char *err, size_t errlen)
{
    bool bf16;
    if (parse_f32_bf16(s, "KV type", &bf16, err, errlen) != 0)
        return -1;
    *out = bf16 ? BACKEND_KV_BF16 : BACKEND_KV_F32;
    return 0;
}

const char *backend_kv_type_name(enum backend_kv_type t) { return t == BACKEND_KV_BF16 ? "bf16" : "f32"; }

int backend_act_type_parse(const char *s, enum backend_act_type *out, char *err, size_t errlen)
{
    bool bf16;
    if (parse_f32_bf16(s, "activation type", &bf16, err, errlen) != 0)
        return -1;
    *out = bf16 ? BACKEND_ACT_BF16 : BACKEND_ACT_F32;
    return 0;
}

const char *backend_act_type_name(enum backend_act_type t) { return t == BACKEND_ACT_BF16 ? "bf16" : "f32"; }

int backend_open(struct backend **out, const char *name, const struct model *m, const struct backend_config *cfg,
                 char *err, size_t errlen)
{
    *out = NULL;
    const struct backend_ops *ops = backend_find(name);
    if (!ops)
        return err_set(err, errlen, "backend '%s' is not built into this binary", name);
    struct backend_config bc = *cfg;
    if (bc.kv_type == BACKEND_KV_DEFAULT) {
        const char *env = getenv("MEMRA_KV_TYPE");
        char why[96];
        bc.kv_type = BACKEND_KV_BF16; /* the product default: docs/FLAGS.md says why */
        if (env && *env && backend_kv_type_parse(env, &bc.kv_type, why, sizeof why) != 0)
            return err_set(err, errlen, "MEMRA_KV_TYPE: %s", why);
    } else if (bc.kv_type != BACKEND_KV_F32 && bc.kv_type != BACKEND_KV_BF16) {
        return err_set(err, errlen, "backend config: KV type %d unknown", (int)bc.kv_type);
    }
    if (bc.act_type == BACKEND_ACT_DEFAULT) {
        const char *env = getenv("MEMRA_ACT_TYPE");
        char why[96];
        bc.act_type = BACKEND_ACT_F32; /* exact until the bf16 mode has earned the default (docs/FLAGS.md) */
        if (env && *env && backend_act_type_parse(env, &bc.act_type, why, sizeof why) != 0)
            return err_set(err, errlen, "MEMRA_ACT_TYPE: %s", why);
    } else if (bc.act_type != BACKEND_ACT_F32 && bc.act_type != BACKEND_ACT_BF16) {
        return err_set(err, errlen, "backend config: activation type %d unknown", (int)bc.act_type);
    }
    struct backend *b;
    if (ops->init(&b, m, &bc, err, errlen) != 0)
        return -1;
    if (ops->load_weights(b, err, errlen) != 0) {
        ops->free(b);
        return -1;
    }
    *out = b;
    return 0;
}

void backend_close(struct backend *b)
{
    if (b)
        b->ops->free(b);
}
