#!/usr/bin/env python3
"""lab/sass.py FILE.cu [KERNEL-SUBSTRING] — a kernel's SASS, counted here without a GPU.

Why: the GPU machine's minutes are few and ncu's source counters cost a call; how many instructions a loop issues
(and which) can be read on this machine. nvcc here lacks cuobjdump and nvdisasm; PyPI has both
(nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm: fetched once into /tmp/sass-tools, unpinned, lab use only).

Compiles FILE.cu as the build does (sm_90a, -O3, -Isrc), and for each kernel whose demangled name holds the
substring: its instruction count, then each loop (a backward branch's range) with its length and opcode histogram.
Example: python3 lab/sass.py src/backend/cuda/gemv_mma.cu 'mk_q4k, 1, 4, 4'
"""
import collections
import glob
import os
import re
import subprocess
import sys

TOOLS = "/tmp/sass-tools"


def tools_path():
    b = glob.glob(TOOLS + "/nvidia/*/bin")
    if not b or not os.path.exists(b[0] + "/nvdisasm"):
        os.makedirs(TOOLS + "/whl", exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", TOOLS + "/whl",
                        "nvidia-cuda-cuobjdump", "nvidia-cuda-nvdisasm"], check=True)
        for w in glob.glob(TOOLS + "/whl/*.whl"):
            subprocess.run(["unzip", "-o", "-q", w, "-d", TOOLS], check=True)
        b = glob.glob(TOOLS + "/nvidia/*/bin")
        for f in glob.glob(b[0] + "/*"):
            os.chmod(f, 0o755)
    return b[0]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src, want = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    env = dict(os.environ, PATH=tools_path() + ":" + os.environ["PATH"])
    obj = "/tmp/sass-" + os.path.basename(src) + ".o"
    subprocess.run(["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-Isrc", "-c", src, "-o",
                    obj], check=True)
    sass = subprocess.run(["cuobjdump", "-sass", obj], env=env, capture_output=True, text=True, check=True).stdout
    for part in re.split(r"\n\s*Function : ", sass)[1:]:
        name = subprocess.run(["c++filt", part.split("\n", 1)[0].strip()], capture_output=True,
                              text=True).stdout.strip()
        if want not in name:
            continue
        ins = [(int(a, 16), i) for a, i in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", part)]
        print(f"{name}\n  {len(ins)} instructions")
        for a, i in ins:
            m = re.search(r"BRA\s+(?:\S+,\s*)?0x([0-9a-f]+)", i)
            if not m or int(m.group(1), 16) > a:
                continue
            lo = int(m.group(1), 16)
            body = [x for b, x in ins if lo <= b <= a]
            ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x).split()[0].split(".")[0] for x in body)
            print(f"  loop {lo:#x}-{a:#x}: {len(body)} instructions: " +
                  " ".join(f"{k} {v}" for k, v in ops.most_common(16)))


if __name__ == "__main__":
    main()
