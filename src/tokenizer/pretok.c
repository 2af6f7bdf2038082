/* tokenizer/pretok.c — the pre-tokenizer: regex splits run in sequence, each
 * one splitting every piece the previous one produced (HF "Split" steps, and
 * llama.cpp's per-model regex lists, which behave the same way).
 *
 * Regexes are compiled with PCRE2 in UTF + UCP mode (so \s, \p{L}, \p{N} are
 * Unicode-aware) and JIT-compiled. Each piece is matched as its own subject,
 * so look-arounds and anchors never see past the piece, as in both references.
 * Patterns from tokenizer.json follow Oniguruma's Ruby syntax, where ^ and $
 * are line anchors (PCRE2_MULTILINE); llama.cpp's lists follow std::regex,
 * where $ is the end of the piece only (PCRE2_DOLLAR_ENDONLY).
 *
 * The per-name regex lists below are the published pre-tokenizer definitions
 * of each model family, keyed by GGUF's tokenizer.ggml.pre. Where llama.cpp
 * rewrote a case-insensitive contraction group into explicit classes we use
 * the same form, so GGUF files tokenize exactly as llama.cpp does.
 */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "tokenizer/tok_internal.h"

/* Contractions, spelled out so that Unicode case folding (ſ, K) does not apply. */
#define RX_CONTRACT "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_LLAMA3 RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2 RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN35 RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_GPT4O "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" RX_CONTRACT "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" RX_CONTRACT "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_TEKKEN "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_PORO " ?[^(\\s|.,!?…。，、।۔،)]+"
#define RX_DEEPSEEK_LETTERS /* cased-letter ranges, as code points: several are NFC-unstable */ \
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}" \
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}" \
    "-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}" \
    "-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}" \
    "-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}" \
    "-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}" \
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}" \
    "-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}" \
    "-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}" \
    "\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}" \
    "\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}" \
    "\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}" \
    "-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}" \
    "-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}" \
    "\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+"

struct pre_def {
    const char *names;   /* '|'-separated tokenizer.ggml.pre values */
    const char *rx[6];   /* NULL-terminated */
    bool ignore_merges;
    bool add_bos;
};

static const struct pre_def pre_defs[] = {
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano", {RX_LLAMA3}, true, true},
    {"dbrx|smaug-bpe|chatglm-bpe|glm4", {RX_LLAMA3}, false, false},
    {"deepseek-llm",
     {"[\r\n]", RX_DEEPSEEK_LETTERS, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"},
     false, false},
    {"deepseek-coder", {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"}, false, false},
    {"deepseek-v3|hunyuan-dense|joyai-llm|hy_v4",
     {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
     false, false},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]"}, false, false},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b|mellum2", {"\\p{N}", RX_GPT2}, false, false},
    {"gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|modern-bert|mpt|olmo|jais|"
     "trillion|granite-docling|exaone4|roberta-bpe|jina-v1-en|jina-v2-code",
     {RX_GPT2}, false, false},
    {"qwen2|deepseek-r1-qwen|kormo|f2llmv2|stablelm2|hunyuan|solar-open|megrez|grok-2", {RX_QWEN2}, false, false},
    {"qwen35", {RX_QWEN35}, false, false},
    {"seed-coder",
     {RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false, false},
    {"bailingmoe|bailingmoe2|llada-moe",
     {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"},
     false, false},
    {"poro-chat|bloom|gpt3-finnish", {RX_PORO}, false, false},
    {"viking", {RX_PORO, "\\p{N}"}, false, false},
    {"tekken", {RX_TEKKEN}, true, true},
    {"gpt-4o|llama4|kanana2|talkie|minimax-m2", {RX_GPT4O}, false, false},
    {"gemma4|granite-embed-multi-311m", {"[^\\n]+|[\\n]+"}, false, true},
};

static bool name_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

int pretok_add_regex(struct tok_model *m, const char *pattern, size_t len, enum tok_split_behavior b,
                     bool invert, bool hf_syntax, char *err, size_t errlen)
{
    if (m->n_split >= TOK_MAX_SPLIT_STEPS)
        return err_set(err, errlen, "%s: more than %d pre-tokenizer steps", m->path, TOK_MAX_SPLIT_STEPS);
    int ec;
    PCRE2_SIZE eo;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | (hf_syntax ? PCRE2_MULTILINE : PCRE2_DOLLAR_ENDONLY);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &ec, &eo, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof(msg));
        return err_set(err, errlen, "%s: pre-tokenizer regex does not compile at offset %zu: %s", m->path,
                       (size_t)eo, (const char *)msg);
    }
    /* JIT is an optimisation: without it pcre2_match interprets the pattern */
    m->split[m->n_split].jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    m->split[m->n_split].re = re;
    m->split[m->n_split].behavior = b;
    m->split[m->n_split].invert = invert;
    m->n_split++;
    return 0;
}

int pretok_setup_gguf(struct tok_model *m, const char *pre, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(pre_defs) / sizeof(pre_defs[0]); i++) {
        const struct pre_def *d = &pre_defs[i];
        if (!name_in_list(d->names, pre))
            continue;
        for (int k = 0; k < 6 && d->rx[k]; k++)
            if (pretok_add_regex(m, d->rx[k], strlen(d->rx[k]), SPLIT_ISOLATED, false, false, err, errlen) != 0)
                return -1;
        m->ignore_merges = d->ignore_merges;
        if (d->add_bos)
            m->add_bos = true;
        return 0;
    }
    return err_set(err, errlen, "%s: unknown pre-tokenizer type tokenizer.ggml.pre = '%s'", m->path, pre);
}

void pretok_free(struct tok_model *m)
{
    for (uint32_t i = 0; i < m->n_split; i++)
        pcre2_code_free(m->split[i].re);
    m->n_split = 0;
}

int pretok_scratch_init(struct pretok_scratch *s)
{
    memset(s, 0, sizeof(*s));
    s->md = pcre2_match_data_create(32, NULL);
    s->mc = pcre2_match_context_create(NULL);
    if (!s->md || !s->mc)
        return -1;
    /* no JIT stack yet: PCRE2 starts on 32 KiB of the machine stack, and a
     * bigger stack is made only for the rare match that needs one */
    /* patterns come from files: bound the backtracking of a hostile one */
    pcre2_set_match_limit(s->mc, 10u * 1000 * 1000);
    pcre2_set_depth_limit(s->mc, 100u * 1000);
    return 0;
}

void pretok_scratch_free(struct pretok_scratch *s)
{
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mc);
    pcre2_jit_stack_free(s->js);
    free(s->a.off);
    free(s->a.len);
    free(s->b.off);
    free(s->b.len);
    memset(s, 0, sizeof(*s));
}

/* Emit piece [a, b) of the text (offsets relative to the text start). */
#define EMIT(a_, b_) \
    do { if ((b_) > (a_) && tok_spans_push(out, (uint32_t)(a_), (uint32_t)((b_) - (a_))) != 0) return -2; } while (0)

/* Split one piece [base, base+n) by one step, appending to out. */
static int split_piece(const struct tok_split_step *st, struct pretok_scratch *s, const char *text, size_t base,
                       size_t n, struct tok_spans *out)
{
    const PCRE2_SPTR subj = (PCRE2_SPTR)(text + base);
    size_t pos = 0;            /* search position */
    size_t cur = 0;            /* start of the piece being built (merged behaviours) */
    size_t gap = 0;            /* end of the last match */
    bool have_run = false;     /* SPLIT_CONTIGUOUS: a run of adjacent matches is open at cur */
    while (pos <= n) {
        int rc = st->jit ? pcre2_jit_match(st->re, subj, n, pos, 0, s->md, s->mc)
                         : pcre2_match(st->re, subj, n, pos, PCRE2_NO_UTF_CHECK, s->md, s->mc);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !s->js) {
            s->js = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, NULL);
            if (!s->js)
                return -2;
            pcre2_jit_stack_assign(s->mc, NULL, s->js);
            continue; /* the same match again, with room */
        }
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return -1;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) { /* empty match: it splits nothing; step one character */
            pos = ms + (ms < n ? utf8_seq_len((unsigned char)text[base + ms]) : 1);
            continue;
        }
        pos = me;
        /* with invert, the regex marks the pieces to keep: the gaps are the separators */
        size_t gs = gap, ge = ms; /* gap [gs, ge), match [ms, me) */
        if (!st->invert) {
            switch (st->behavior) {
            case SPLIT_ISOLATED: EMIT(base + gs, base + ge); EMIT(base + ms, base + me); break;
            case SPLIT_REMOVED: EMIT(base + gs, base + ge); break;
            case SPLIT_MERGED_PREV: EMIT(base + cur, base + me); cur = me; break;
            case SPLIT_MERGED_NEXT: EMIT(base + cur, base + ms); cur = ms; break;
            case SPLIT_CONTIGUOUS:
                if (ge > gs) {
                    if (have_run) EMIT(base + cur, base + gs);
                    EMIT(base + gs, base + ge);
                    cur = ms;
                } else if (!have_run) {
                    cur = ms;
                }
                have_run = true;
                break;
            }
        } else {
            /* roles swapped: the gap is a separator, the match is content */
            switch (st->behavior) {
            case SPLIT_ISOLATED: EMIT(base + gs, base + ge); EMIT(base + ms, base + me); break;
            case SPLIT_REMOVED: EMIT(base + ms, base + me); break;
            case SPLIT_MERGED_PREV: EMIT(base + cur, base + ge); cur = ge; break;
            case SPLIT_MERGED_NEXT: EMIT(base + cur, base + gs); cur = gs; break;
            case SPLIT_CONTIGUOUS: EMIT(base + gs, base + ge); EMIT(base + ms, base + me); break;
            }
        }
        gap = me;
        if (st->behavior == SPLIT_ISOLATED || st->behavior == SPLIT_REMOVED)
            cur = me;
    }
    /* the tail after the last match */
    if (!st->invert) {
        switch (st->behavior) {
        case SPLIT_ISOLATED: case SPLIT_REMOVED: EMIT(base + gap, base + n); break;
        case SPLIT_MERGED_PREV: case SPLIT_MERGED_NEXT: EMIT(base + cur, base + n); break;
        case SPLIT_CONTIGUOUS: if (have_run) EMIT(base + cur, base + gap); EMIT(base + gap, base + n); break;
        }
    } else {
        switch (st->behavior) {
        case SPLIT_ISOLATED: case SPLIT_CONTIGUOUS: EMIT(base + gap, base + n); break;
        case SPLIT_REMOVED: break;
        case SPLIT_MERGED_PREV: case SPLIT_MERGED_NEXT: EMIT(base + cur, base + n); break;
        }
    }
    return 0;
}

int pretok_split(const struct tok_model *m, struct pretok_scratch *s, const char *text, size_t len,
                 char *err, size_t errlen)
{
    s->a.n = 0;
    if (len == 0)
        return 0;
    if (tok_spans_push(&s->a, 0, (uint32_t)len) != 0)
        return err_set(err, errlen, "tokenizer: out of memory");
    for (uint32_t k = 0; k < m->n_split; k++) {
        s->b.n = 0;
        for (size_t i = 0; i < s->a.n; i++) {
            int rc = split_piece(&m->split[k], s, text, s->a.off[i], s->a.len[i], &s->b);
            if (rc == -2)
                return err_set(err, errlen, "tokenizer: out of memory");
            if (rc != 0)
                return err_set(err, errlen, "tokenizer: pre-tokenizer regex %u failed on a piece of %u bytes",
                               k, s->a.len[i]);
        }
        struct tok_spans t = s->a;
        s->a = s->b;
        s->b = t;
    }
    return 0;
}
