"""tests/py/test_template_features.py — language features of memra's template
interpreter, one small template each, against jinja2 configured as transformers
configures it (the reference environment of test_templates.py).

Each case is (template source, context). jinja2 renders it at test time; memra
(`memra-template`) must print the same bytes, or fail where jinja2 fails. The
cases cover whitespace control, loops and loop.*, scoping, namespaces, macros,
every filter and test the interpreter implements, string/dict/list methods,
slicing, Python printing of values, arithmetic, tojson options, Markup
escaping, generator results and the error cases.

Needs MEMRA_BUILD (the build folder holding bin/memra-template).
"""
import copy

import pytest

from test_templates import memra_render, reference_render

D = {"a": 1, "b": [1, 2.5, None, True, "x'y"], "c": {"k": "v"}}
MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}]

CASES = [
    # whitespace control: trim_blocks, lstrip_blocks, -, +
    ("a\n  {% if true %}\n  b\n  {% endif %}\nc", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("x\n\t {%+ if true %}y{% endif %}\n", {}),
    ("{# c #}\n  {#- d -#}  e\n{#+ f +#}\ng", {}),
    ("{{ 1 }}\n{{- 2 }}  {{ 3 -}}  \n 4", {}),
    ("line\r\nnext\rlast\n", {}),
    ("{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", {}),
    ("a {% if true %}x{% endif %} b\n   {% set y = 1 %}z", {}),
    # loops
    ("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {"xs": "abc"}),
    ("{% for x in xs %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for x in xs %}{{ loop.cycle('odd', 'even') }}{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for x in xs if x > 1 %}{{ x }}{{ loop.index }}{{ loop.last }}{% else %}none{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", {"xs": []}),
    ("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}"
     "{{ x }}{% endfor %}", {}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": D}),
    ("{% for k in d %}{{ k }}{% endfor %}{% for c in 'héllo' %}[{{ c }}]{% endfor %}", {"d": D}),
    ("{% for a, b in [(1, 2), [3, 4]] %}{{ a + b }}{% endfor %}", {}),
    ("{% for x in [1] %}{% for y in [2] %}{{ loop.index }}{{ x }}{{ y }}{% endfor %}{{ loop.index }}{% endfor %}",
     {}),
    ("{% for x in undefined_thing %}x{% else %}no{% endfor %}", {}),
    # scoping
    ("{% set c = 0 %}{% for i in range(3) %}{% set c = c + 1 %}{{ c }}{% endfor %}{{ c }}", {}),
    ("{% set ns = namespace(c=0, s='') %}{% for i in range(3) %}{% set ns.c = ns.c + i %}"
     "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.c }} {{ ns.s }}", {}),
    ("{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", {}),
    ("{% set x %}  block {{ 1 + 1 }}  {% endset %}[{{ x }}]{% set y | trim %}  z  {% endset %}[{{ y }}]", {}),
    ("{% set bos_token = 'X' %}{{ bos_token }}", {"bos_token": "<s>"}),
    ("{% set ns = namespace(d) %}{{ ns.a }}{{ ns.c.k }}", {"d": D}),
    # macros
    ("{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}", {}),
    ("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}", {}),
    ("{% set g = 'G' %}{% macro m() %}{{ g }}{{ h }}{% endmacro %}{% set h = 'H' %}{{ m() }}", {}),
    ("{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m(1) + m(2) }}{{ m }}", {}),
    ("{% macro m(x) %}{% set y = x * 2 %}{{ y }}{% endmacro %}{{ m(2) }}{{ y }}", {}),
    ("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", {}),
    ("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}", {}),
    ("{% filter upper %}abc {{ 'x' }}{% endfilter %}", {}),
    ("{%- generation -%} gen {{ 1 }} {%- endgeneration -%}", {}),
    # printing values as Python does
    ("{{ none }} {{ true }} {{ false }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ -0.0 }} {{ 3 }}", {}),
    ("{{ d }} {{ d.b }} {{ (1, 'a') }} {{ (1,) }} {{ () }} {{ [] }} {{ {} }}", {"d": D}),
    ("{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'back\\\\slash', 'nl\\n', 'tab\\t', 'ü日😀', '\\x01'] }}", {}),
    ("{{ x }}|{{ x.y is defined }}|{{ msgs[5] }}|{{ none.x }}", {"msgs": MSGS}),
    ("{{ 12345678901234567 * 1.0 }} {{ 2.5e15 }} {{ 1e16 }} {{ 0.0001 }} {{ 0.00001 }} {{ 123.456 }}", {}),
    ("{{ f }} {{ g }} {{ [f, g] }}", {"f": 1.25, "g": 100.0}),
    # arithmetic and comparison
    ("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }}", {}),
    ("{{ 1 + true }} {{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1] + [2] }} {{ -x }}", {"x": 4}),
    ("{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 'a' != 'a' }}", {}),
    ("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in d.c }} {{ 'z' not in d }} {{ 1 in [true] }}", {"d": D}),
    ("{{ 'x' if false }}|{{ 'x' if false else 'y' }}|{{ a or 'dflt' }}|{{ a and 'no' }}|{{ 0 or '' or none }}",
     {"a": ""}),
    ("{{ not 1 }} {{ not none }} {{ not [] }} {{ not 'a' is string }}", {}),
    ("{{ 1 + 'a' }}", {}),
    ("{{ undefined_name + 1 }}", {}),
    ("{{ 1 / 0 }}", {}),
    # filters
    ("{{ x | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }} {{ 0 | d('z', boolean=true) }}",
     {}),
    ("{{ 'abc' | length }} {{ [1, 2] | count }} {{ d | length }} {{ 'ü日' | length }} {{ u | length }}", {"d": D}),
    ("{{ '  a b \\n' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 1 | string }}|{{ none | string }}|{{ d | string }}",
     {"d": D}),
    ("{{ 'Hello World' | lower }} {{ 'Hello' | upper }} {{ 'hello wORLD 3rd' | title }} {{ 'hELLO' | capitalize }}",
     {}),
    ("{{ d | tojson }}\n{{ d | tojson(indent=2) }}\n{{ d | tojson(indent=0) }}\n{{ [] | tojson(indent=2) }}", {"d": D}),
    ("{{ s | tojson }} {{ s | tojson(ensure_ascii=true) }} {{ s | tojson(ensure_ascii=false) }}",
     {"s": "ü \"q\" \\ \n\t\u0001 😀 \u007f"}),
    ("{{ d | tojson(separators=(',', ':')) }} {{ d | tojson(indent='\\t') }} {{ 1.0 | tojson }} {{ none | tojson }}",
     {"d": D}),
    ("{{ x | tojson }}", {}),
    ("{{ d | tojson(sort_keys=true) }} {{ d | tojson(sort_keys=true, indent=1) }}",
     {"d": {"b": 1, "a": {"z": 1, "B": 2}, "é": 3}}),
    # raw blocks and their whitespace
    ("a\n  {% raw %}{{ not parsed }} {% if %}\n  {% endraw %}\nb", {}),
    ("a {%- raw -%}  x {{ y }}  {%- endraw -%}  b\n{% raw %}\n{% endraw %}c", {}),
    ("{% raw %}never closed", {}),
    ("{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}{{ d | dictsort }} {{ d | dictsort(reverse=true) }}",
     {"d": {"b": 1, "A": 2, "a": 3}}),
    ("{{ d | dictsort(by='value') }} {{ d | dictsort(case_sensitive=true) }}", {"d": {"b": 1, "A": 2, "a": 3}}),
    ("{{ [1, 'a', none] | join }} {{ ['a', 'b'] | join(', ') }} {{ ms | join('/', attribute='role') }}",
     {"ms": MSGS}),
    ("{{ 'abc' | list }} {{ d | list }} {{ [3, 1] | first }} {{ [3, 1] | last }} {{ 'ab' | reverse }} "
     "{{ [1, 2] | reverse | list }}", {"d": D}),
    ("{{ ms | map(attribute='role') | list }} {{ ['a', 'b'] | map('upper') | join }} "
     "{{ ms | map(attribute='nope', default='-') | list }}", {"ms": MSGS}),
    ("{{ ms | selectattr('role', 'equalto', 'user') | list }} {{ ms | rejectattr('role', 'eq', 'user') "
     "| map(attribute='role') | join(',') }} {{ ms | selectattr('tool_calls') | list | length }}", {"ms": MSGS}),
    ("{{ [0, 1, 2, none] | select | list }} {{ [1, 2, 3] | reject('odd') | list }} "
     "{{ [1, 2, 3] | select('gt', 1) | list }}", {}),
    ("{{ ms | selectattr('role', 'defined') | list | length }} {{ ms | map(attribute='role') | unique | list }}",
     {"ms": MSGS}),
    ("{{ ms | map(attribute='role') }}", {"ms": MSGS}),
    ("{{ ms | map(attribute='role') | tojson }}", {"ms": MSGS}),
    ("{{ ms | selectattr('role') | length }}", {"ms": MSGS}),
    ("{% set g = [1, 2] | select %}{{ g | list }}{{ g | list }}", {}),
    ("{{ 'a-b-a' | replace('a', 'X') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '.') }}", {}),
    ("{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | safe }} {{ '<' | safe + '<' }} {{ '<' + ('&' | safe) }}", {}),
    ("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '1.5' | float }}",
     {}),
    ("{{ -3 | abs }} {{ 2.567 | round(1) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(0, 'ceil') }}", {}),
    ("{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, first=true) }}|{{ 'a\\n\\nb' | indent(1, blank=true) }}",
     {}),
    ("{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ ['b', 'A', 'a'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }}",
     {}),
    ("{{ ms | sort(attribute='role') | map(attribute='role') | join }} {{ [1, 2, 3] | sum }} "
     "{{ ms | min(attribute='role') }}", {"ms": MSGS}),
    ("{{ 'one two  three' | wordcount }} {{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 0) | list }}",
     {}),
    ("{{ x | from_json }}", {"x": "{}"}),
    ("{% if false %}{{ x | from_json }}{% endif %}ok", {}),
    ("{{ 'x' if true else (y | from_json) }}", {}),
    # tests
    ("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ d is mapping }} {{ d is iterable }} "
     "{{ 'a' is sequence }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} "
     "{{ 1.0 is float }} {{ true is boolean }} {{ false is false }} {{ 1 is true }} {{ x is undefined }}",
     {"d": D}),
    ("{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 1 is eq 1 }} {{ 'a' is in 'abc' }} "
     "{{ 'abc' is lower }} {{ 'Abc' is upper }} {{ 1 is sameas 1 }} {{ m is callable }} {{ 2 is gt 1 }}", {"m": 1}),
    ("{{ 1 is not none }} {{ 'a' is not string }} {{ d.c is mapping and d.a is number }}", {"d": D}),
    # methods
    ("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} "
     "{{ 'a b c'.rsplit(None, 1) }} {{ ''.split() }} {{ 'x'.split('x') }}", {}),
    ("{{ '  x  '.strip() }}|{{ 'xyx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x  '.rstrip() }}|{{ '\\n x\\n'.strip() }}",
     {}),
    ("{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.upper() }} {{ 'ABC'.lower() }} "
     "{{ 'abc'.replace('b', 'B') }} {{ 'héllo'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'aXbXc'.count('X') }}", {}),
    ("{{ ', '.join(['a', 'b']) }} {{ '{} and {}'.format('x', 1) }} {{ '{0}{0}{name}'.format('a', name='n') }} "
     "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'title case'.title() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }}", {}),
    ("{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }} {{ d.values() | list }} "
     "{{ d['items'] is defined }} {{ d.items() | list }}", {"d": D}),
    ("{{ [1, 2, 1].count(1) }} {{ [1, 2].index(2) }}", {}),
    ("{% set l = [] %}{% set _ = l.append(1) %}{{ l }}", {}),
    ("{% set d = {} %}{% set _ = d.update({'a': 1}) %}{{ d }}", {}),
    ("{{ [].append is defined }}|{{ [].pop }}|", {}),
    # printf-style formatting
    ("{{ '%s-%d' % ('a', 3) }} {{ '%05.2f|%x|%r|%%|%-4s|' % (3.14159, 255, 'q', 'ab') }} "
     "{{ '%(a)s %(b)d' % {'a': 'x', 'b': 2} }} {{ 'abc' % {'k': 1} }} {{ '%s' % [1, 'a'] }} {{ '%02d' % 7 }}", {}),
    ("{{ 'abc' % 1 }}", {}),
    ("{{ '%s %s' % (1,) }}", {}),
    ("{{ 1 // 0.1 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ 0.1 is even }} {{ 3.0 is odd }} {{ (-3) | round }} "
     "{{ 1234 | round(-2) }} {{ 'é日ß'.upper() }} {{ 'ÀÉΣ Ж'.lower() }} {{ 'élan vital' | title }}", {}),
    ("{{ d.items() }} {{ d.keys() }} {{ d.values() | list }} {{ d.items() | length }} {{ [1, 2] | reverse | list }}",
     {"d": {"a": 1}}),
    ("{{ d.items() | tojson }}", {"d": {"a": 1}}),
    ("{{ [1] in {'a': 1} }}", {}),
    ("{{ undefined_thing | int }}", {}),
    # slicing and indexing
    ("{{ 'héllo'[1] }} {{ 'héllo'[-1] }} {{ 'héllo'[1:3] }} {{ 'héllo'[::-1] }} {{ 'héllo'[:-2] }} "
     "{{ [1, 2, 3, 4][1:] }} {{ [1, 2, 3, 4][::2] }} {{ [1, 2, 3][-2:] }} {{ [1, 2, 3][5:] }} {{ (1, 2, 3)[:2] }}", {}),
    ("{{ ms[0].role }} {{ ms[-1]['tool_calls'][0].function.arguments.x }} {{ ms[0]['nope'] }}|{{ 'abc'[10] }}|",
     {"ms": MSGS}),
    ("{{ ms[1:] | map(attribute='content') | join(',') }} {{ ms | length }}", {"ms": MSGS}),
    # literals
    ("{{ 'a' 'b' }} {{ \"q'q\" }} {{ 'x\\u00e9\\x41' }} {{ {'a': 1, 'b': [1, 2]} }} {{ [1, [2, (3,)]] }} {{ 1_000 }}",
     {}),
    ("{{ True }} {{ False }} {{ None }} {{ x.y.z if x is defined else 'nope' }}", {}),
    # globals
    ("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ dict(a=1, b=2) }}", {}),
    ("{{ raise_exception('boom: ' ~ 42) }}", {}),
    ("{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}{% endif %}", {"messages": MSGS}),
    # errors that jinja2 reports while parsing
    ("{% if true %}unterminated", {}),
    ("{% for x in y %}{% endif %}", {}),
    ("{{ 1 + }}", {}),
    ("{% unknowntag %}", {}),
    ("{{ x | nosuchfilter }}", {}),
    ("{{ x is nosuchtest }}", {}),
    ("{{ 'unterminated }}", {}),
    ("{% break %}", {}),
    ("{# unterminated comment", {}),
    ("{{ (1, 2 }}", {}),
    # undefined handling
    ("{{ undefined_var }}|{{ undefined_var | length }}|{{ undefined_var is none }}", {}),
    ("{{ undefined_var.attr }}", {}),
    ("{{ undefined_var['k'] }}", {}),
    ("{{ undefined_var() }}", {}),
    ("{{ 'abc'.nomethod }}|{{ 'abc'.nomethod is defined }}", {}),
    ("{{ 'abc'.nomethod() }}", {}),
    ("{% for x in none %}{% endfor %}", {}),
    ("{% for x in 5 %}{% endfor %}", {}),
    ("{{ 5 | length }}", {}),
    ("{{ 1 < 'a' }}", {}),
    ("{{ d | items | list }}", {"d": "notadict"}),
]


# jinja2 output that cannot be reproduced byte for byte: memra must refuse it with an error
UNREPRODUCIBLE = {
    "{{ ms | map(attribute='role') }}": "jinja2 prints '<generator object sync_do_map at 0x...>' (a memory address)",
}


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_feature_matches_jinja2(case, tmp_path):
    source, context = case
    want, want_err = reference_render(source, copy.deepcopy(context))
    tpl = tmp_path / "t.jinja"
    tpl.write_bytes(source.encode("utf-8"))
    got, got_err = memra_render(tpl, context, tmp_path)
    if source in UNREPRODUCIBLE:
        assert got_err is not None, f"expected an error ({UNREPRODUCIBLE[source]}), memra rendered {got!r}"
        return
    if want_err is not None:
        assert got_err is not None, f"jinja2 failed ({want_err}) but memra rendered {got!r}"
        assert "line" in got_err, f"the error does not name a line: {got_err}"
        return
    assert got_err is None, f"memra failed: {got_err}\njinja2 gave: {want!r}"
    assert got == want.encode("utf-8"), f"\n--- jinja2: {want!r}\n--- memra:  {got.decode('utf-8', 'replace')!r}"
