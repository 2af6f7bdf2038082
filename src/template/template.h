/* template/template.h — chat templates: a Jinja subset interpreter that renders a
 * model's own chat_template the way transformers does (jinja2's
 * ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls,
 * the {% generation %} tag, a json.dumps-style `tojson`, and the globals
 * raise_exception / strftime_now).
 *
 * Parse once, render many times: a parsed template is immutable, and
 * chat_template_render() keeps all its state in the call (one arena per render),
 * so several threads may render the same template at once.
 *
 * Errors never abort: every function returns -1 and writes the reason, naming the
 * template line ("template line 12: ..."), into the caller's err[errlen].
 * Rendering is bounded by limits (output bytes, evaluation steps, call depth,
 * memory), so a template that loops or grows without bound stops with an error.
 */
#ifndef MEMRA_TEMPLATE_TEMPLATE_H
#define MEMRA_TEMPLATE_TEMPLATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct chat_template;

struct chat_template_limits {
    size_t max_output_bytes; /* rendered text */
    uint64_t max_steps;      /* statements + expressions evaluated, loop iterations */
    int max_depth;           /* nested macro calls / loops / expression recursion */
    size_t max_memory_bytes; /* values built while rendering */
};

/* The defaults: 16 MiB output, 50M steps, depth 200, 512 MiB of values. */
void chat_template_limits_default(struct chat_template_limits *lim);

/* Parse template source src[len] (need not be NUL-terminated). Unknown tags,
 * unterminated tags/blocks, bad expressions and unknown filters/tests are errors
 * here, as in jinja2 (a filter used only inside an {% if %} is checked when it
 * runs, as jinja2 does). */
int chat_template_parse(struct chat_template **out, const char *src, size_t len, char *err, size_t errlen);

/* Render with a jansson object as the context; every key is a template
 * variable. To match transformers' apply_chat_template, pass: "messages" (role,
 * content as a string or a list of parts, tool_calls with function.arguments as
 * an object, tool_call_id, reasoning_content), "tools" (the list, or null when
 * there are none: transformers passes None, and templates test `tools is not
 * none`), "documents" (null), "add_generation_prompt", the special tokens
 * ("bos_token", "eos_token", "unk_token", "pad_token" as strings) and any extra
 * template kwargs ("enable_thinking", ...). The context is only read, and must
 * outlive the call. *out is malloc'd, NUL-terminated, *out_len bytes; the caller
 * frees it. A template's raise_exception("msg") becomes an error whose text
 * contains msg. Uses the default limits. */
int chat_template_render(const struct chat_template *t, const json_t *context, char **out, size_t *out_len,
                         char *err, size_t errlen);
int chat_template_render_limited(const struct chat_template *t, const json_t *context,
                                 const struct chat_template_limits *lim, char **out, size_t *out_len, char *err,
                                 size_t errlen);

void chat_template_free(struct chat_template *t);

/* The special tokens' text (NULL where the tokenizer has none). */
struct chat_special_tokens {
    const char *bos, *eos, *unk, *pad;
};

/* Complete a context as transformers' apply_chat_template does: "tools" and
 * "documents" default to null, "add_generation_prompt" to false, and the
 * special tokens that exist to their text; keys already present are kept.
 * 0, or -1 when ctx is not an object or memory runs out. */
int chat_template_context_defaults(json_t *ctx, const struct chat_special_tokens *sp);

#endif
