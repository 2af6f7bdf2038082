/* template/context.c — the variables transformers' apply_chat_template passes
 * besides the caller's own, so that every caller (memra-tokenize --chat, the
 * engine, the server) renders a model's template the same way.
 *
 * transformers always passes `tools` and `documents` (None when there are
 * none — templates test `tools is not none`, so leaving the key out would
 * differ), `add_generation_prompt` (False by default), and the tokenizer's
 * special tokens that exist (bos/eos/unk/pad as text). Keys the caller already
 * set are kept: a request may override any of them. */
#include "template/template.h"

static int set_default(json_t *ctx, const char *key, json_t *value)
{
    if (!value)
        return -1;
    if (json_object_get(ctx, key)) {
        json_decref(value);
        return 0;
    }
    return json_object_set_new(ctx, key, value);
}

int chat_template_context_defaults(json_t *ctx, const struct chat_special_tokens *sp)
{
    if (!json_is_object(ctx))
        return -1;
    int rc = 0;
    rc |= set_default(ctx, "tools", json_null());
    rc |= set_default(ctx, "documents", json_null());
    rc |= set_default(ctx, "add_generation_prompt", json_false());
    const char *names[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    const char *values[] = {sp ? sp->bos : NULL, sp ? sp->eos : NULL, sp ? sp->unk : NULL, sp ? sp->pad : NULL};
    for (int i = 0; i < 4; i++)
        if (values[i])
            rc |= set_default(ctx, names[i], json_string(values[i]));
    return rc ? -1 : 0;
}
