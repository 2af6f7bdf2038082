#!/bin/bash
# tests/kernels/run-gpu.sh — what the GPU machine runs for the kernel tests:
# the GPU's identity and clocks, then every tests/kernels/kernel_* executable
# of the build (checks against the CPU reference first, timing tables last),
# then run-gen's generation speed on the default model with the CUDA backend.
# Nothing is compiled there: build here (cmake --build build-cuda) and carry
# the build folder. Usage: tests/kernels/run-gpu.sh [build-dir] ; logs go to
# $OUT when set (the device tool's output folder), else /tmp. Run it from the
# repository root: kernel_forward reads tests/fixtures/engine/ and the default
# model gpu/SmolLM2-135M-Instruct.Q4_1.gguf (copy it there: ../shared and
# models/ do not travel), gpu/tiny/hf-bf16 and gpu/tiny128/ (made below when missing);
# MEMRA_FORWARD_PART=fixtures|default runs a part; QUICK=1 runs the checks
# only (--quick to the kernel tests that have timing tables).
set -uo pipefail
B=${1:-build-cuda}
LOG=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv | tee "$LOG/gpu.txt"
rc=0
# kernel_forward's deep-prefill check runs on a small head_dim-64 model
# (transformers random init; made here when it did not travel)
[ -f gpu/tiny/hf-bf16/model.safetensors ] ||
    python3 tools/make_test_models.py gpu/tiny --tiny --formats bf16 > "$LOG/make-tiny.log" 2>&1
# and its whole-model checks also on two small head_dim-128 GGUF models
# (MEMRA_EXTRA_MODELS): heads of 128 let the decode attention prepare the
# o-projection's input, and the Q4_K_M mix (Q6_K attn_v) fuses q|k beside v
[ -f gpu/tiny128/llama8b-q8_0.gguf ] ||
    python3 tools/make_test_models.py gpu/tiny128 --tiny --tiny-head-dim 128 --formats q4_k_m,q8_0 \
        > "$LOG/make-tiny128.log" 2>&1
export MEMRA_EXTRA_MODELS=${MEMRA_EXTRA_MODELS-gpu/tiny128/llama8b-q4_k_m.gguf,gpu/tiny128/llama8b-q8_0.gguf}
for k in "$B"/kernels/kernel_*; do
    [ -x "$k" ] || continue
    name=$(basename "$k")
    echo "== $name"
    q=""
    [ -n "${QUICK:-}" ] && grep -q -- "--quick" "$k" && q=--quick
    "$k" $q > "$LOG/$name.log" 2>&1
    r=$?
    [ $r -ne 0 ] && rc=$r
    grep -E "FAIL|CHECK failed|cases,|deep prefill" "$LOG/$name.log" | head -40
    # the tables: everything from the first "## " heading on
    sed -n '/^## /,$p' "$LOG/$name.log"
    echo "== $name exit $r"
done

# The whole model again with every prefill span of >= 4 tokens on the GEMM
# path (the fixtures' prompts are 7-33 tokens), in both GEMM modes: logits
# against the CPU, greedy, batch 16 vs alone, chunked vs one-shot prefill.
for m in exact fast; do
    [ -x "$B/kernels/kernel_forward" ] || break
    echo "== kernel_forward MEMRA_GEMM=$m MEMRA_GEMM_MIN_TOKENS=4"
    MEMRA_GEMM=$m MEMRA_GEMM_MIN_TOKENS=4 "$B/kernels/kernel_forward" > "$LOG/kernel_forward-gemm-$m.log" 2>&1
    r=$?
    # fast mode rounds activations to 16 bits: it is expected to exceed the 1e-3
    # logit bound and may change greedy tokens (bench/FORWARD.md), so its
    # failures are reported, not gated; exact mode must pass
    [ $r -ne 0 ] && [ $m = exact ] && rc=$r
    grep -E "FAIL|CHECK failed|cases," "$LOG/kernel_forward-gemm-$m.log" | head -40
    sed -n '/^## /,$p' "$LOG/kernel_forward-gemm-$m.log"
    echo "== kernel_forward MEMRA_GEMM=$m exit $r"
done

# Decode batches on the tensor-core GEMV for every batch size, a lone token
# included: batch vs alone must then be bit-identical (the default, auto, lets
# a lone BF16 token take the CUDA-core GEMV and allows 1e-5 of the range).
# Then prefill attention row by row on the f32 decode kernel (MEMRA_ATTN=rows,
# the path of head dims the tensor-core kernel lacks). Then the decode step
# without programmatic dependent launch and with one GEMV a matrix for a lone
# token (MEMRA_PDL=off, MEMRA_DECODE_FUSE=off), and with the decode attention
# one CTA a row at every batch size (MEMRA_ATTN_ROWS=1: batch vs alone then
# compares it with the split kernel), and with a bf16 KV cache on both backends
# (MEMRA_KV_TYPE=bf16: the product's default cache; kernel_forward's own default is
# f32, the tighter check), and with it under bf16 activations (the server's
# throughput setting: near ties may part there, within the bf16 bound),
# checked against the CPU as the defaults are. ("+" joins two settings.)
for envv in MEMRA_DECODE_MMV=all MEMRA_ATTN=rows MEMRA_PDL=off MEMRA_DECODE_FUSE=off MEMRA_ATTN_ROWS=1 \
    MEMRA_KV_TYPE=bf16 MEMRA_KV_TYPE=bf16+MEMRA_ACT_TYPE=bf16; do
    [ -x "$B/kernels/kernel_forward" ] || break
    tag=$(echo "${envv#MEMRA_}" | sed 's/+MEMRA_/-/g' | tr "=A-Z" "-a-z")
    echo "== kernel_forward $envv"
    env ${envv//+/ } "$B/kernels/kernel_forward" > "$LOG/kernel_forward-$tag.log" 2>&1
    r=$?
    [ $r -ne 0 ] && rc=$r
    grep -E "FAIL|CHECK failed|cases,|deep prefill" "$LOG/kernel_forward-$tag.log" | head -40
    sed -n '/^## /,$p' "$LOG/kernel_forward-$tag.log"
    echo "== kernel_forward $envv exit $r"
done

# run-gen on the default model with the CUDA backend: end-to-end generation
# speed (the prompt and generation tok/s lines run-gen prints on stderr).
# MEMRA_GPU_MODEL overrides the model path.
M=${MEMRA_GPU_MODEL:-gpu/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ -x "$B/bin/run-gen" ] && [ -f "$M" ]; then
    echo "== run-gen $M (cuda)"
    for i in 1 2; do # the first run includes the upload and first-use costs
        MEMRA_BACKEND=cuda "$B/bin/run-gen" "$M" --prompt "The history of the city of Paris begins" \
            --max-tokens 256 > "$LOG/run-gen-cuda.txt" 2> "$LOG/run-gen-cuda.log"
        r=$?
        [ $r -ne 0 ] && rc=$r
        grep -E "tok/s|error|cuda" "$LOG/run-gen-cuda.log"
    done
    echo "== run-gen exit $r"
fi
# The device's sampling against the host's through the server on the default
# model (a GGUF: decode groups of 8, so the 24 requests' steps run three groups
# and the nucleus rows' z of the first groups must survive the last's logits):
# tests/kernels/sample-same.sh (needs the openai package: .whl carried).
if [ -x "$B/bin/memra-server" ] && [ -f "$M" ]; then
    echo "== sample-same $M"
    OUT=$LOG/sample-same tests/kernels/sample-same.sh "$M" "$B" 2>&1 | grep -E "^sample-same|on |off "
    r=${PIPESTATUS[0]}
    [ $r -ne 0 ] && rc=$r
    echo "== sample-same exit $r"
fi
exit $rc
