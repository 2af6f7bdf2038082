#!/bin/bash
# lab/stream57/build.sh — builds lab/stream57/stream (an experiment outside the build; see stream.cu).
cd "$(dirname "$0")" && nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -Wall -o stream stream.cu
