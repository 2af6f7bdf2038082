#!/usr/bin/env python3
"""tools/make_tokenizer_corpus.py — a deterministic multilingual text corpus for
tokenizer tests and benchmarks.

    python3 tools/make_tokenizer_corpus.py OUT.txt [--bytes N] [--seed S]

Writes at least N bytes (default 1.2 MB) of UTF-8 text mixing the cases that
break tokenizers: prose in many scripts, source code with tabs and deep
indentation, CJK runs without spaces, Arabic/Hebrew/Devanagari/Thai with
combining marks, emoji with zero-width joiners, skin tones, flags and variation
selectors, long digit and whitespace runs (including NBSP, U+3000, U+2028,
CRLF), text that changes under NFC (decomposed accents, Hangul jamo, singleton
decompositions), contractions in every case, and special-token look-alikes
(<|im_start|> exactly and almost). The same seed gives the same bytes.
"""
import argparse
import random

PROSE = [
    "The quick brown fox jumps over the lazy dog. It's not what you'd expect, isn't it? We'll see; they've gone.",
    "Le cœur a ses raisons que la raison ne connaît point. L'été dernier, nous sommes allés à Genève.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein. Größere Häuser kosten mehr Geld.",
    "¿Dónde está la biblioteca? El niño comió una manzana y bebió zumo de naranja.",
    "Tiếng Việt có dấu: Cửa Việt, Hà Nội, thành phố Hồ Chí Minh, người Việt Nam.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю. Москва — столица России.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "Pchnąć w tę łódź jeża lub ośm skrzyń fig. Żółć gęślą jaźń.",
    "Árvíztűrő tükörfúrógép. Şişli'de güzel bir gün; İstanbul'da yağmur yağıyor.",
    "色は匂へど散りぬるを我が世誰ぞ常ならむ。東京都は日本の首都です。カタカナとひらがな。",
    "我能吞下玻璃而不伤身体。今天天气很好，我们去公园散步吧！",
    "다람쥐 헌 쳇바퀴에 타고파. 안녕하세요, 만나서 반갑습니다.",
    "أبجد هوز حطي كلمن سعفص قرشت ثخذ ضظغ. مرحبا بالعالم، كيف حالك؟",
    "עטלף אבק נס דרך מזגן שהתפוצץ כי חם. שלום עולם!",
    "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम।",
    "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน",
    "ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ᛫ᚠᛁᚱᚪ᛫ᚷᛖᚻᚹᛦᛚᚳᚢᛗ. Ἐν ἀρχῇ ἦν ὁ λόγος.",
    "I'M SURE HE'S THERE, 'RE YOU? 'D YOU LIKE SOME TEA? WE'VE A'LL... y'all don't can't won't.",
]

CODE = [
    "int main(int argc, char **argv)\n{\n\tfor (int i = 0; i < argc; i++) {\n\t\tprintf(\"%s\\n\", argv[i]);\n\t}\n\treturn 0;\n}\n",
    "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\nprint([fib(i) for i in range(20)])\n",
    "    if (x->next != NULL && x->next->value >= 0x7fffffff) {\n        x = x->next;  // advance\n    }\n",
    "SELECT id, name FROM users WHERE created_at >= '2024-01-01' AND email LIKE '%@example.com';\n",
    "<div class=\"container\"><p>Hello &amp; welcome!</p><br/></div>\n",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\\u00e9\"}}\n",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}\n",
    "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do wc -l \"$f\" | awk '{print $1}'; done\n",
    "\t\t\t\t// deeply\n\t\t\t\t\t\tindented\n                                        spaces\n",
    "x = a+b*c-d/e%f**g//h; y += 1; z <<= 2; w >>= 3; q != r; s == t; u <= v >= w;\n",
]

EMOJI = ["🚀", "😀", "😶‍🌫️", "👩‍👩‍👧‍👦", "👍🏽", "🇯🇵", "🇺🇸", "❤️", "✅", "🦙", "🏳️‍🌈", "🧑🏿‍💻", "👨‍❤️‍💋‍👨", "©️", "1️⃣", "🫠"]

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
            "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|vision_start|>", "<|box_end|>"]
LOOKALIKES = ["<|im_start|", "<|im_sta", "< |im_start|>", "<||im_end|>", "<|IM_START|>", "<|endoftext|>>",
              "<<|endoftext|>", "<thinking>", "< think>", "</think", "<|im_start|>\n", "[PAD151646]", "<s>", "</s>",
              "<unk>", "<|begin_of_text|>", "<|eot_id|>", "<start_of_turn>"]

NFC_CASES = ["e\u0301", "A\u030a", "\u212b", "\u2126", "\u1100\u1161\u11a8", "o\u0308\u0304", "\u0041\u0301\u0323",
             "ﬁ", "ｆｕｌｌ", "①", "x²", "\u1e9b\u0323", "ς", "İ", "ǅ", "ſ", "\u212a", "Å", "n\u0303", "\u0958"]

WHITESPACE = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u3000", "\u2028", "\u2009", "\u200b", "\u0085",
              "\u000b", "\u000c", "\r", " \t ", "\u202f", "\u1680"]


def rand_cjk(r):
    blocks = [(0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7A3), (0x3400, 0x4DBF)]
    lo, hi = r.choice(blocks)
    return "".join(chr(r.randint(lo, hi)) for _ in range(r.randint(1, 60)))


def rand_script(r):
    ranges = [(0x0621, 0x064A), (0x05D0, 0x05EA), (0x0905, 0x0939), (0x0E01, 0x0E2E), (0x0531, 0x0556),
              (0x10D0, 0x10FA), (0x0B85, 0x0BB9)]
    marks = [(0x064B, 0x0652), (0x05B0, 0x05BC), (0x093E, 0x094D), (0x0E31, 0x0E3A), None, None, (0x0BBE, 0x0BCD)]
    k = r.randrange(len(ranges))
    words = []
    for _ in range(r.randint(1, 12)):
        w = ""
        for _ in range(r.randint(1, 9)):
            w += chr(r.randint(*ranges[k]))
            if marks[k] and r.random() < 0.3:
                w += chr(r.randint(*marks[k]))
        words.append(w)
    return " ".join(words)


def rand_digits(r):
    n = r.choice([1, 2, 3, 4, 5, 7, 10, 16, 33, 100])
    s = "".join(r.choice("0123456789") for _ in range(n))
    return r.choice(["", " ", "$", "-", "v", "x"]) + s + r.choice(["", ".", ",", "%", " ", ".5", "e10", "٣٤", "１２"])


def rand_ws(r):
    if r.random() < 0.2:
        return r.choice(WHITESPACE) * r.choice([5, 17, 64, 300])
    return "".join(r.choice(WHITESPACE) for _ in range(r.randint(1, 6)))


def piece(r):
    k = r.random()
    if k < 0.30:
        s = r.choice(PROSE)
        if r.random() < 0.3:
            s = s.upper() if r.random() < 0.5 else s.lower()
        return s
    if k < 0.45:
        return r.choice(CODE)
    if k < 0.53:
        return rand_cjk(r)
    if k < 0.60:
        return rand_script(r)
    if k < 0.66:
        return "".join(r.choice(EMOJI) for _ in range(r.randint(1, 8)))
    if k < 0.73:
        return rand_digits(r)
    if k < 0.80:
        return rand_ws(r)
    if k < 0.86:
        return r.choice(SPECIALS + LOOKALIKES)
    if k < 0.92:
        return "".join(r.choice(NFC_CASES) for _ in range(r.randint(1, 5)))
    # punctuation and symbols in runs
    return "".join(r.choice("!?.,;:'\"`~@#$%^&*()[]{}<>|\\/-_=+…—–«»„“”‘’·•°§¶") for _ in range(r.randint(1, 12)))


def make(nbytes, seed=1234):
    r = random.Random(seed)
    out, size = [], 0
    while size < nbytes:
        p = piece(r)
        sep = r.choice(["", " ", " ", "\n", "", ". "])
        out.append(p + sep)
        size += len((p + sep).encode("utf-8"))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--bytes", type=int, default=1_200_000)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    text = make(a.bytes, a.seed)
    with open(a.out, "w", encoding="utf-8", newline="") as f:
        f.write(text)


if __name__ == "__main__":
    main()
