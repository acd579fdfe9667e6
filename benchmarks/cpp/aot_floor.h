// aot_floor.h -- what aot_launch.cu needs from the generated source of its C++ floor: the same
// AOT entry kernel, compiled by nvcc from its kernels_cu/ file and launched with <<<>>>.
//
// benchmarks/aot_rows.py writes that source per op (floor_source): it includes the op's .cu and
// defines the two functions below with the kernel's expression (e.g. leaky_relu_aot<float>),
// its arguments in TensorRT's order: a pointer per input, the int32 extra arguments, a pointer per
// output (PPAnyPtr converts each pointer to the parameter's own type, as a typed call would).
#pragma once

#include <cuda_runtime.h>

// Opts the kernel in to `shared_mem` bytes of dynamic shared memory when above the default.
cudaError_t pp_floor_prepare(unsigned shared_mem);

// One <<<>>> launch: `ptrs` holds the input then the output pointers, `extra` the int32
// arguments, all already evaluated.
void pp_floor_launch(dim3 grid, dim3 block, unsigned shared_mem, cudaStream_t stream,
                     void* const* ptrs, const int* extra);

// A pointer argument that converts to whatever pointer type the kernel's parameter has.
struct PPAnyPtr {
    void* p;
    template <typename T>
    operator T*() const {
        return static_cast<T*>(p);
    }
};
