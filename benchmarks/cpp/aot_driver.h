// aot_driver.h -- a parsed AOT artifact loaded as a CUDA module and launched as TensorRT launches
// it (docs/trt-protocol.md §8.4): per launch, the compiled expressions (aot_program.h) run for the
// current input shapes, the slots of the parameter buffer that depend on them are rewritten, and
// cuLaunchKernel is called. Shared by aot_launch.cu (one thread, timed against <<<>>>) and
// aot_threads.cu (many threads).
//
// The driver API functions come from the runtime (cudaGetDriverEntryPoint*), so nothing links
// libcuda itself and a program using this builds on a machine without a driver.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "aot_flat.h"
#include "aot_program.h"

#include "bench_util.h"

#define CHECK_CU(call)                                                                       \
    do {                                                                                     \
        CUresult res_ = (call);                                                              \
        if (res_ != CUDA_SUCCESS) {                                                          \
            const char* text_ = nullptr;                                                     \
            ppaot::cu.GetErrorString(res_, &text_);                                          \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                         text_ ? text_ : "unknown CUresult");                                \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

namespace ppaot {

// The driver API functions used, as the runtime hands them out.
struct Driver {
    PFN_cuGetErrorString_v6000 GetErrorString;
    PFN_cuModuleLoadData_v2000 ModuleLoadData;
    PFN_cuModuleGetFunction_v2000 ModuleGetFunction;
    PFN_cuModuleUnload_v2000 ModuleUnload;
    PFN_cuFuncSetAttribute_v9000 FuncSetAttribute;
    PFN_cuLaunchKernel_v4000 LaunchKernel;
};
inline Driver cu;

template <typename F>
void driver_entry(const char* name, F* fn) {
    cudaDriverEntryPointQueryResult found;
    void* p = nullptr;
#if CUDART_VERSION >= 12050
    CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found));
#else
    CHECK(cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &found));
#endif
    if (found != cudaDriverEntryPointSuccess || p == nullptr) {
        std::fprintf(stderr, "the driver has no %s\n", name);
        std::exit(1);
    }
    *fn = reinterpret_cast<F>(p);
}

// Fills `cu`; call once, with a context current (cudaFree(nullptr) after cudaSetDevice).
inline void load_driver() {
    driver_entry("cuGetErrorString", &cu.GetErrorString);
    driver_entry("cuModuleLoadData", &cu.ModuleLoadData);
    driver_entry("cuModuleGetFunction", &cu.ModuleGetFunction);
    driver_entry("cuModuleUnload", &cu.ModuleUnload);
    driver_entry("cuFuncSetAttribute", &cu.FuncSetAttribute);
    driver_entry("cuLaunchKernel", &cu.LaunchKernel);
}

// The artifact's kernel in the current context (image loaded, shared memory opted in).
inline CUfunction load_kernel(const Artifact& art, int64_t shared_mem, CUmodule* module) {
    std::string image = art.image;
    if (art.image_kind == "ptx") image.push_back('\0');
    CUfunction fn;
    CHECK_CU(cu.ModuleLoadData(module, image.data()));
    CHECK_CU(cu.ModuleGetFunction(&fn, *module, art.kernel.c_str()));
    if (shared_mem > 48 * 1024) {
        CHECK_CU(cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(shared_mem)));
    }
    return fn;
}

// The launch fields and extra arguments of `art` as one compiled program (roots 0..6 the launch
// fields, 7.. the extra arguments).
inline Program launch_program(const Artifact& art) {
    std::vector<const Expr*> roots;
    for (const auto& e : art.launch) roots.push_back(&e);
    for (const auto& a : art.extra) roots.push_back(&a.expr);
    return Program::compile(roots);
}

// What TensorRT holds per enqueue of the AOT kernel: the compiled expressions, the input shapes,
// the buffers and the parameter buffer, packed once (set_buffers) with every slot; launch()
// rewrites only the extra arguments that depend on the shapes.
class Launcher {
   public:
    Launcher(const Program& prog, CUfunction fn, CUstream stream, const Dims* dims,
             int32_t nb_inputs)
        : prog_(prog), fn_(fn), stream_(stream), nb_inputs_(nb_inputs),
          regs_(prog.registers()) {
        for (int32_t i = 0; i < nb_inputs; ++i) dims_[i] = dims[i];
        for (size_t i = 7; i < prog.size(); ++i) {
            if (!prog.is_constant(i)) dynamic_.emplace_back(i - 7, prog.root(i));
        }
        for (int f = 0; f < 7; ++f) field_[f] = prog.root(f);
    }

    // Points the parameters at `ptrs` (inputs, then outputs) and packs every slot once.
    void set_buffers(const std::vector<CUdeviceptr>& ptrs) {
        const size_t k = prog_.size() - 7, n_in = static_cast<size_t>(nb_inputs_);
        ptrs_ = ptrs;
        extra_.assign(k, 0);
        params_.assign(ptrs.size() + k, nullptr);
        for (size_t i = 0; i < k; ++i) extra_[i] = static_cast<int32_t>(regs_[prog_.root(7 + i)]);
        for (size_t i = 0; i < n_in; ++i) params_[i] = &ptrs_[i];
        for (size_t i = 0; i < k; ++i) params_[n_in + i] = &extra_[i];
        for (size_t j = n_in; j < ptrs_.size(); ++j) params_[k + j] = &ptrs_[j];
    }

    // Evaluates every expression for the current shapes (the registers hold the results).
    Status evaluate() { return prog_.run(dims_, nb_inputs_, regs_.data()); }

    // The value of root i after evaluate().
    int64_t value(size_t i) const { return regs_[prog_.root(i)]; }

    // One launch as TensorRT makes it: evaluate, rewrite the shape-dependent slots, launch.
    CUresult launch() {
        if (evaluate() != kOk) return CUDA_ERROR_INVALID_VALUE;
        for (const auto& d : dynamic_) extra_[d.first] = static_cast<int32_t>(regs_[d.second]);
        return launch_packed();
    }

    // cuLaunchKernel with the parameters as they are (packed once: the pre-evaluated path).
    CUresult launch_packed() {
        const int64_t* r = regs_.data();
        return cu.LaunchKernel(
            fn_, static_cast<unsigned>(r[field_[0]]), static_cast<unsigned>(r[field_[1]]),
            static_cast<unsigned>(r[field_[2]]), static_cast<unsigned>(r[field_[3]]),
            static_cast<unsigned>(r[field_[4]]), static_cast<unsigned>(r[field_[5]]),
            static_cast<unsigned>(r[field_[6]]), stream_, params_.data(), nullptr);
    }

    void set_stream(CUstream s) { stream_ = s; }

   private:
    const Program& prog_;
    CUfunction fn_;
    CUstream stream_;
    Dims dims_[kMaxInputs];
    int32_t nb_inputs_;
    std::vector<int64_t> regs_;
    int32_t field_[7];
    std::vector<std::pair<size_t, int32_t>> dynamic_;  // (extra slot, register)
    std::vector<CUdeviceptr> ptrs_;
    std::vector<int32_t> extra_;
    std::vector<void*> params_;
};

}  // namespace ppaot
