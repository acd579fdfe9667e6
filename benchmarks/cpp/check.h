// check.h -- CHECK(call): a CUDA runtime call that must succeed; on failure the file, line, call
// and CUDA's message go to stderr and the program exits 1. Shared by the benchmark programs
// (launch_floor.cu, threads_floor.cu, aot_driver.h).
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                         cudaGetErrorString(err_));                                     \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)
