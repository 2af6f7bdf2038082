#!/bin/bash
# lab/ncu-sol-gpu.sh NAME — one GPU call (~2 min): what bounds the prefill GEMMs of a 4096-token pass at --ubatch
# 4096 (bf16 activations): ncu's SpeedOfLight, MemoryWorkloadAnalysis and ComputeWorkloadAnalysis sections (and the
# L2 / shared-memory / tensor-pipe counters below) for one launch of the promoted GGUF GEMM (gemm_q.cu's
# kernel_gemm_q, the random 8B Q8_0, 40 launches skipped) and one of cuBLASLt's GEMM on the random 8B BF16 (the
# first kernel whose name is not memra's after 40 GEMM launches). Writes $OUT/sol-q.txt and $OUT/sol-bf16.txt.
# NAME: a pack of `make build`; carry ["gpu/NAME.tar.xz", ".whl"].
cd "$(dirname "$0")/.."
O=$OUT
. lab/gpu-prelude.sh "${1:?usage: lab/ncu-sol-gpu.sh NAME}"
python3 tools/make_test_models.py /tmp/m8q --formats q8_0 > /tmp/makeq.log 2>&1
ts "q8_0 ready"
N=/usr/local/cuda/bin/ncu
MET=lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum
MET=$MET,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
MET=$MET,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__cycles_elapsed.avg.per_second
MET=$MET,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed
sol() { # label model kernel-regex
  MEMRA_CUDA_GRAPH=0 MEMRA_ACT_TYPE=bf16 timeout 200 $N --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --metrics $MET -k "regex:$3" \
    --launch-skip 40 -c 1 $B/bin/memra-bench $2 --backend cuda --tests pp4096 --reps 1 --ubatch 4096 \
    > $O/sol-$1.txt 2>&1
  ts "$1 rc $?"
  grep -E "^  [a-z_]|Duration|Throughput|Pipe|lts__|sm__pipe|l1tex__data|gpu__time|smsp__inst|Busy" $O/sol-$1.txt |
    cut -c1-130 | head -40
}
sol q /tmp/m8q/llama8b-q8_0.gguf '^kernel_gemm_q$'
wait $MK; ts "m8b $(tail -1 $O/make.log)"
sol bf16 /tmp/m8b/hf-bf16 '^(?!kernel_).*(gemm|nvjet|xmma|sm90).*'
ts done
