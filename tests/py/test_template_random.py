"""tests/py/test_template_random.py — random expressions, memra against jinja2.

A seeded generator builds nested expressions from literals, context values,
operators, filters, tests, methods and slices (the building blocks chat templates
combine) and renders each as `{{ expr }}` with both renderers (the reference
environment of test_templates.py and memra-template). Outputs must be
byte-identical, or both must fail. Where jinja2 prints something that has no
stable text (an iterator's memory address), memra must fail instead.

Needs MEMRA_BUILD (the build folder holding bin/memra-template).
"""
import copy
import random

import pytest

from test_templates import memra_render, reference_render

SEQS = ["s", "l", "u", "d.b", "ms", "'abc'", "[1, 2, 3]", "(1, 'x')", "'é日x'"]
LITS = ["1", "0", "-3", "2.5", "0.1", "1e3", "'a'", "''", "'Ab c'", "' x '", "'é日'", "none", "true", "false",
        "[1, 2]", "[]", "['b', 'a']", "{'k': 1}", "{}", "(1, 'x')", "d", "d.a", "d.b", "l", "s", "n", "u", "ms[0]",
        "ms[0].role", "d['c']", "ms", "missing_name"]
BIN = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "string", "trim", "lower", "upper", "title", "capitalize", "tojson", "list", "first", "last",
           "reverse | list", "join", "join(',')", "default('D')", "default('D', true)", "int", "float", "abs",
           "round", "round(1)", "sort", "unique | list", "items | list", "dictsort", "map('upper') | list",
           "select | list", "reject | list", "sum", "min", "max", "count", "wordcount", "e", "safe",
           "replace('a', 'X')", "indent(2)", "batch(2) | list", "tojson(indent=1)", "selectattr('role') | list",
           "map(attribute='role') | list", "tojson(ensure_ascii=true)", "string | length"]
TESTS = ["defined", "undefined", "none", "string", "mapping", "iterable", "sequence", "number", "integer",
         "boolean", "true", "false", "odd", "even", "lower", "upper"]
METHODS = [".upper()", ".lower()", ".strip()", ".split()", ".split(',')", ".startswith('a')", ".endswith('c')",
           ".replace('a', 'b')", ".lstrip('x')", ".rstrip()", ".find('b')", ".count('a')", ".title()",
           ".capitalize()", ".rsplit(' ', 1)", ".format(1)", ".splitlines()"]
SLICES = ["[1:]", "[-1]", "[0]", "[::-1]", "[:2]", "[1:-1]", "[::2]"]
CONTEXT = {"d": {"a": 1, "b": [1, "x"], "c": {"k": "v"}}, "l": [3, 1, 2], "s": "abc", "n": None,
           "u": "héllo wörld", "ms": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}


def make_expr(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.25:
        return rng.choice(LITS)
    if r < 0.45:
        return "(%s %s %s)" % (make_expr(rng, depth + 1), rng.choice(BIN), make_expr(rng, depth + 1))
    if r < 0.65:
        return "(%s | %s)" % (make_expr(rng, depth + 1), rng.choice(FILTERS))
    if r < 0.75:
        return "(%s is %s%s)" % (make_expr(rng, depth + 1), rng.choice(["", "not "]), rng.choice(TESTS))
    if r < 0.85:
        return "(%s)%s" % (make_expr(rng, depth + 1), rng.choice(METHODS))
    if r < 0.92:
        return "%s%s" % (rng.choice(SEQS), rng.choice(SLICES))
    return "(%s if %s else %s)" % (make_expr(rng, depth + 1), make_expr(rng, depth + 1), make_expr(rng, depth + 1))


def cases():
    rng = random.Random(20261130)
    return ["{{ %s }}" % make_expr(rng) for _ in range(400)]


@pytest.mark.parametrize("source", cases())
def test_random_expression(source, tmp_path):
    want, want_err = reference_render(source, copy.deepcopy(CONTEXT))
    tpl = tmp_path / "t.jinja"
    tpl.write_bytes(source.encode("utf-8"))
    got, got_err = memra_render(tpl, CONTEXT, tmp_path)
    if want_err is not None or " object at 0x" in want:
        assert got_err is not None, f"jinja2 gave {want_err or want!r} but memra rendered {got!r}"
        return
    assert got_err is None, f"memra failed: {got_err}\njinja2 gave: {want!r}"
    assert got == want.encode("utf-8"), f"\n--- jinja2: {want!r}\n--- memra:  {got.decode('utf-8', 'replace')!r}"


# ---- statements and whitespace: random template text around random tags
TEXTS = ["", " ", "  ", "\n", "\n\n", "  \n", "\t", "a", "b \n", "\n  c", " d ", "x\n  ", "\r\n", "e\t\n\t"]


def make_template(rng, depth=0):
    parts = []
    for _ in range(rng.randint(1, 5)):
        parts.append(rng.choice(TEXTS))
        r = rng.random()
        lm, rm = rng.choice(["", "-", "+"]), rng.choice(["", "-", "+"])
        vlm, vrm = rng.choice(["", "-"]), rng.choice(["", "-"])
        if r < 0.25:
            parts.append("{{%s %s %s}}" % (vlm, make_expr(rng, 2), vrm))
        elif r < 0.35:
            parts.append("{#%s note %s#}" % (lm, rm))
        elif r < 0.5 and depth < 2:
            parts.append("{%%%s if %s %s%%}" % (lm, make_expr(rng, 2), rm))
            parts.append(make_template(rng, depth + 1))
            if rng.random() < 0.5:
                parts.append("{%%%s else %s%%}" % (rng.choice(["", "-", "+"]), rng.choice(["", "-", "+"])))
                parts.append(make_template(rng, depth + 1))
            parts.append("{%%%s endif %s%%}" % (rng.choice(["", "-", "+"]), rng.choice(["", "-", "+"])))
        elif r < 0.65 and depth < 2:
            parts.append("{%%%s for it in %s %s%%}" % (lm, rng.choice(SEQS), rm))
            parts.append("{{ loop.index }}" if rng.random() < 0.5 else "{{ it }}")
            parts.append(make_template(rng, depth + 1))
            if rng.random() < 0.3:
                parts.append("{% if loop.first %}{% continue %}{% endif %}")
            parts.append("{%%%s endfor %s%%}" % (rng.choice(["", "-", "+"]), rng.choice(["", "-", "+"])))
        elif r < 0.75:
            parts.append("{%%%s set v = %s %s%%}" % (lm, make_expr(rng, 2), rm))
            parts.append("{{ v }}")
        elif r < 0.85 and depth < 2:
            parts.append("{%%%s macro mm(a, b='B') %s%%}" % (lm, rm))
            parts.append(make_template(rng, depth + 1))
            parts.append("{{ a }}{{ b }}{%% endmacro %s%%}" % rng.choice(["", "-"]))
            parts.append("{{ mm(%s) }}" % make_expr(rng, 2))
        else:
            parts.append("{%%%s set ns = namespace(x=%s) %s%%}{%% set ns.x = ns.x ~ 'z' %%}{{ ns.x }}"
                         % (lm, make_expr(rng, 2), rm))
    return "".join(parts)


def template_cases():
    rng = random.Random(11302026)
    return [make_template(rng) for _ in range(300)]


@pytest.mark.parametrize("source", template_cases())
def test_random_template(source, tmp_path):
    want, want_err = reference_render(source, copy.deepcopy(CONTEXT))
    tpl = tmp_path / "t.jinja"
    tpl.write_bytes(source.encode("utf-8"))
    got, got_err = memra_render(tpl, CONTEXT, tmp_path)
    if want_err is not None or " object at 0x" in want:
        assert got_err is not None, f"jinja2 gave {want_err or want!r} but memra rendered {got!r}"
        return
    assert got_err is None, f"memra failed: {got_err}\njinja2 gave: {want!r}"
    assert got == want.encode("utf-8"), f"\n--- jinja2: {want!r}\n--- memra:  {got.decode('utf-8', 'replace')!r}"
