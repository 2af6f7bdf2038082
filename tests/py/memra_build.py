"""tests/py/memra_build.py — where the Python tests find memra's programs.

Every test that runs one of the build's command-line programs asks `tool(NAME)` for its path:
$MEMRA_BUILD/bin/NAME (scripts/run-tests.sh sets MEMRA_BUILD; the checkout's build/ when unset). A program that is
missing fails the test with the target to build — never a skip, since a test that could not run has not passed.
`inspect_json` is memra-inspect's --json report of a model file, which the GGUF and safetensors reference tests
compare against the gguf and safetensors packages.
"""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MEMRA_BUILD", ROOT / "build"))


def tool(name):
    exe = BUILD / "bin" / name
    if not exe.exists():
        pytest.fail(f"{exe} is missing: build the {name} target (`make build`), or set MEMRA_BUILD to the build folder")
    return str(exe)


def inspect_json(path):
    p = subprocess.run([tool("memra-inspect"), "--json", str(path)], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return json.loads(p.stdout)
