// aot_launch.cu -- a stored pyplugins AOT artifact launched as TensorRT launches it, timed beside
// the C++ <<<>>> floor of the same kernel (docs/benchmarks.md item 7).
//
// At run time an engine with a QDP AOT kernel holds no Python: TensorRT loads the kernel image,
// and at every enqueue evaluates the symbolic grid, block, shared memory and extra int32
// arguments for the current input shapes (they may change between runs), packs the input
// pointers, the extra arguments and the output pointers, and calls cuLaunchKernel
// (docs/trt-protocol.md §8.4; how TensorRT stores and evaluates the expressions internally is not
// public [infer: here, a node array parsed once, evaluated recursively per launch]).
//
// Build (benchmarks/aot_rows.py does this at run time, with the op's generated floor source):
//     nvcc -O2 -std=c++17 -arch=sm_90 -I benchmarks/cpp -I kernels_cu
//          benchmarks/cpp/aot_launch.cu floor.cu -o aot_launch
// The driver API functions come from the runtime (cudaGetDriverEntryPoint*), so nothing links
// libcuda itself and the program builds on a machine without a driver.
// Run:
//     aot_launch ARTIFACT.flat DIR calls batch graph_kernels graph_replays rounds
// ARTIFACT.flat is benchmarks/aot_export.py's flat export (grammar in aot_flat.h). DIR holds
// shapes.txt (per input one line: rank, then the dimensions) and in<k>.bin (input k's bytes).
// Before timing, each path launches once into outputs poisoned with 0xFF bytes (plus 256 guard
// bytes) and writes them to DIR/out_<path>_<j>.bin, which the caller compares with the JIT
// plugin's output (a path whose output is wrong is refused there). Paths:
//     cpp_floor          the same entry kernel compiled by nvcc, <<<>>> with evaluated values
//     aot_preevaluated   cuLaunchKernel of the artifact's kernel, parameters packed once
//     aot_launch         per launch: evaluate every expression, pack, cuLaunchKernel
// Timing as launch_floor.cu: per round, each path (in rotating order) times `calls` launches in
// batches of `batch` on one non-blocking stream, host time of the batch (synchronized between
// batches) and batch + synchronize; then a CUDA graph of `graph_kernels` launches captured and
// replayed `graph_replays` times (device time per kernel, CUDA events). eval_us times the
// evaluation alone. Prints one JSON object; per metric min, median (of the rounds' medians) and
// rounds (each round's median), in microseconds per launch. Every CUDA call is checked.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "aot_flat.h"
#include "aot_floor.h"

#define CHECK(call)                                                                          \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess) {                                                           \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                         cudaGetErrorString(err_));                                          \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

#define CHECK_CU(call)                                                                       \
    do {                                                                                     \
        CUresult res_ = (call);                                                              \
        if (res_ != CUDA_SUCCESS) {                                                          \
            const char* text_ = nullptr;                                                     \
            cu.GetErrorString(res_, &text_);                                                 \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                         text_ ? text_ : "unknown CUresult");                                \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

namespace {

constexpr size_t kGuard = 256;

// The driver API functions used, as the runtime hands them out.
struct Driver {
    PFN_cuGetErrorString_v6000 GetErrorString;
    PFN_cuModuleLoadData_v2000 ModuleLoadData;
    PFN_cuModuleGetFunction_v2000 ModuleGetFunction;
    PFN_cuModuleUnload_v2000 ModuleUnload;
    PFN_cuFuncSetAttribute_v9000 FuncSetAttribute;
    PFN_cuLaunchKernel_v4000 LaunchKernel;
} cu;

template <typename F>
void entry(const char* name, F* fn) {
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

void load_driver() {
    entry("cuGetErrorString", &cu.GetErrorString);
    entry("cuModuleLoadData", &cu.ModuleLoadData);
    entry("cuModuleGetFunction", &cu.ModuleGetFunction);
    entry("cuModuleUnload", &cu.ModuleUnload);
    entry("cuFuncSetAttribute", &cu.FuncSetAttribute);
    entry("cuLaunchKernel", &cu.LaunchKernel);
}

double now_us() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double, std::micro>(clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Per round, the samples of one metric; min over all samples, median of the round medians.
struct Metric {
    std::vector<std::vector<double>> rounds;
    std::string json(const char* name) const {
        double lo = 1e300;
        std::vector<double> meds;
        for (const auto& r : rounds) {
            for (double v : r) lo = std::min(lo, v);
            meds.push_back(median(r));
        }
        std::string s = std::string("\"") + name + "\": {\"min\": " + std::to_string(lo) +
                        ", \"median\": " + std::to_string(median(meds)) + ", \"rounds\": [";
        for (size_t i = 0; i < meds.size(); ++i) s += (i ? ", " : "") + std::to_string(meds[i]);
        return s + "]}";
    }
};

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        std::exit(2);
    }
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// What TensorRT holds per enqueue of the AOT kernel: the input shapes and the buffers.
struct Launcher {
    const ppaot::Artifact& art;
    CUfunction fn;
    CUstream stream;
    ppaot::Dims dims[ppaot::kMaxInputs];
    int32_t nb_inputs;
    std::vector<CUdeviceptr> ptrs;  // inputs, then outputs
    // Scratch the per-launch path fills (kept here: TensorRT would not allocate per enqueue).
    std::vector<int32_t> extra;
    std::vector<void*> params;
    std::vector<CUdeviceptr> arg_ptrs;

    void pack(const int64_t* values) {
        const size_t n_in = static_cast<size_t>(nb_inputs), k = art.extra.size();
        for (size_t i = 0; i < k; ++i) extra[i] = static_cast<int32_t>(values[7 + i]);
        for (size_t i = 0; i < n_in; ++i) params[i] = &arg_ptrs[i];
        for (size_t i = 0; i < k; ++i) params[n_in + i] = &extra[i];
        for (size_t j = n_in; j < ptrs.size(); ++j) params[k + j] = &arg_ptrs[j];
    }

    // Every launch field and extra argument for the current shapes, into values[0..7+k).
    void evaluate(int64_t* values) const {
        for (int f = 0; f < 7; ++f) values[f] = ppaot::eval(art.launch[f], dims, nb_inputs);
        for (size_t i = 0; i < art.extra.size(); ++i) {
            values[7 + i] = ppaot::eval(art.extra[i].expr, dims, nb_inputs);
        }
    }

    CUresult launch(const int64_t* v) {
        return cu.LaunchKernel(fn, static_cast<unsigned>(v[0]), static_cast<unsigned>(v[1]),
                              static_cast<unsigned>(v[2]), static_cast<unsigned>(v[3]),
                              static_cast<unsigned>(v[4]), static_cast<unsigned>(v[5]),
                              static_cast<unsigned>(v[6]), stream, params.data(), nullptr);
    }
};

void measure(const std::function<void()>& launch, cudaStream_t stream, int calls, int batch,
             Metric& host, Metric& sync) {
    std::vector<double> h, s;
    const int batches = std::max(1, (calls + batch - 1) / batch);
    for (int b = 0; b < batches; ++b) {
        double t0 = now_us();
        for (int i = 0; i < batch; ++i) launch();
        const double t1 = now_us();
        CHECK(cudaStreamSynchronize(stream));
        h.push_back((t1 - t0) / batch);
        t0 = now_us();
        for (int i = 0; i < batch; ++i) launch();
        CHECK(cudaStreamSynchronize(stream));
        s.push_back((now_us() - t0) / batch);
    }
    CHECK(cudaGetLastError());
    host.rounds.push_back(h);
    sync.rounds.push_back(s);
}

void graph_replay(const std::function<void()>& launch, cudaStream_t stream, int kernels,
                  int replays, Metric& out) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kernels; ++i) launch();
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int w = 0; w < 3; ++w) CHECK(cudaGraphLaunch(exec, stream));
    std::vector<double> per_kernel;
    for (int r = 0; r < replays; ++r) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        per_kernel.push_back(1000.0 * ms / kernels);
    }
    out.rounds.push_back(per_kernel);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::fprintf(stderr, "usage: %s ARTIFACT.flat DIR calls batch graph_kernels "
                     "graph_replays rounds\n", argv[0]);
        return 2;
    }
    const std::string dir(argv[2]);
    const int calls = std::atoi(argv[3]), batch = std::max(1, std::atoi(argv[4]));
    const int graph_kernels = std::max(1, std::atoi(argv[5]));
    const int graph_replays = std::max(1, std::atoi(argv[6]));
    const int rounds = std::max(1, std::atoi(argv[7]));
    ppaot::Artifact art;
    try {
        art = ppaot::parse(read_file(argv[1]));
    } catch (const ppaot::Error& e) {
        std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 2;
    }
    const int32_t n_in = static_cast<int32_t>(art.input_types.size());
    const size_t n_out = art.output_types.size(), k = art.extra.size();

    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(nullptr));  // the primary context, current: the driver calls below use it
    load_driver();
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int driver = 0;
    CHECK(cudaDriverGetVersion(&driver));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    Launcher L{art, nullptr, reinterpret_cast<CUstream>(stream), {}, n_in, {}, {}, {}, {}};
    std::istringstream shapes(read_file(dir + "/shapes.txt"));
    for (int32_t i = 0; i < n_in; ++i) {
        shapes >> L.dims[i].nbDims;
        for (int d = 0; d < L.dims[i].nbDims; ++d) shapes >> L.dims[i].d[d];
    }
    std::vector<int64_t> values(7 + k);
    std::vector<size_t> out_bytes;
    try {
        L.evaluate(values.data());
        for (size_t j = 0; j < n_out; ++j) {
            size_t count = 1;
            for (const auto& e : art.outputs[j]) count *= ppaot::eval(e, L.dims, n_in);
            out_bytes.push_back(count * ppaot::itemsize(art.output_types[j]));
        }
    } catch (const ppaot::Error& e) {
        std::fprintf(stderr, "cannot evaluate the launch: %s\n", e.what());
        return 2;
    }
    for (int32_t i = 0; i < n_in; ++i) {
        const std::string bytes = read_file(dir + "/in" + std::to_string(i) + ".bin");
        void* p = nullptr;
        CHECK(cudaMalloc(&p, bytes.size() + kGuard));
        CHECK(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
        L.ptrs.push_back(reinterpret_cast<CUdeviceptr>(p));
    }
    for (size_t j = 0; j < n_out; ++j) {
        void* p = nullptr;
        CHECK(cudaMalloc(&p, out_bytes[j] + kGuard));
        L.ptrs.push_back(reinterpret_cast<CUdeviceptr>(p));
    }
    L.extra.assign(k, 0);
    L.params.assign(L.ptrs.size() + k, nullptr);
    L.arg_ptrs = L.ptrs;

    std::string image = art.image;
    if (art.image_kind == "ptx") image.push_back('\0');
    CUmodule module;
    CHECK_CU(cu.ModuleLoadData(&module, image.data()));
    CHECK_CU(cu.ModuleGetFunction(&L.fn, module, art.kernel.c_str()));
    if (values[6] > 48 * 1024) {
        CHECK_CU(cu.FuncSetAttribute(L.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(values[6])));
    }
    CHECK(pp_floor_prepare(static_cast<unsigned>(values[6])));

    // The three paths. aot_launch evaluates into its own scratch on every call.
    const std::vector<int64_t> fixed = values;
    std::vector<int32_t> floor_extra(fixed.begin() + 7, fixed.end());
    std::vector<void*> floor_ptrs;
    for (CUdeviceptr p : L.ptrs) floor_ptrs.push_back(reinterpret_cast<void*>(p));
    const dim3 grid(fixed[0], fixed[1], fixed[2]), block(fixed[3], fixed[4], fixed[5]);
    std::vector<int64_t> scratch(7 + k);
    const char* names[3] = {"cpp_floor", "aot_preevaluated", "aot_launch"};
    std::function<void()> paths[3] = {
        [&] {
            pp_floor_launch(grid, block, static_cast<unsigned>(fixed[6]), stream,
                            floor_ptrs.data(), floor_extra.data());
        },
        [&] { CHECK_CU(L.launch(fixed.data())); },
        [&] {
            L.evaluate(scratch.data());
            L.pack(scratch.data());
            CHECK_CU(L.launch(scratch.data()));
        },
    };
    L.pack(fixed.data());  // aot_preevaluated's parameters; aot_launch repacks the same arrays

    for (int p = 0; p < 3; ++p) {  // the output check, each path on poisoned outputs
        for (size_t j = 0; j < n_out; ++j) {
            CHECK(cudaMemsetAsync(floor_ptrs[n_in + j], 0xFF, out_bytes[j] + kGuard, stream));
        }
        paths[p]();
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(stream));
        for (size_t j = 0; j < n_out; ++j) {
            std::string host(out_bytes[j] + kGuard, '\0');
            CHECK(cudaMemcpy(&host[0], floor_ptrs[n_in + j], host.size(),
                             cudaMemcpyDeviceToHost));
            std::ofstream(dir + "/out_" + names[p] + "_" + std::to_string(j) + ".bin",
                          std::ios::binary)
                .write(host.data(), static_cast<std::streamsize>(host.size()));
        }
    }

    Metric host[3], sync[3], graph[3], eval_only;
    for (int p = 0; p < 3; ++p) measure(paths[p], stream, std::min(calls, 5 * batch), batch,
                                        host[p], sync[p]);  // warm-up
    for (int p = 0; p < 3; ++p) host[p].rounds.clear(), sync[p].rounds.clear();
    for (int r = 0; r < rounds; ++r) {
        for (int q = 0; q < 3; ++q) {
            const int p = (q + r) % 3;
            measure(paths[p], stream, calls, batch, host[p], sync[p]);
        }
        std::vector<double> ev;
        for (int b = 0; b < std::max(1, calls / batch); ++b) {
            const double t0 = now_us();
            for (int i = 0; i < batch; ++i) L.evaluate(scratch.data());
            ev.push_back((now_us() - t0) / batch);
        }
        eval_only.rounds.push_back(ev);
        for (int q = 0; q < 3; ++q) {
            const int p = (q + r) % 3;
            graph_replay(paths[p], stream, graph_kernels, graph_replays, graph[p]);
        }
    }

    std::string plan = "\"plan\": {\"grid\": [" + std::to_string(fixed[0]) + ", " +
                       std::to_string(fixed[1]) + ", " + std::to_string(fixed[2]) +
                       "], \"block\": [" + std::to_string(fixed[3]) + ", " +
                       std::to_string(fixed[4]) + ", " + std::to_string(fixed[5]) +
                       "], \"shared_mem\": " + std::to_string(fixed[6]) + ", \"extra\": [";
    for (size_t i = 0; i < k; ++i) plan += (i ? ", " : "") + std::to_string(fixed[7 + i]);
    plan += "], \"out_bytes\": [";
    for (size_t j = 0; j < n_out; ++j) plan += (j ? ", " : "") + std::to_string(out_bytes[j]);
    plan += "]}";
    std::printf("{\"device\": \"%s\", \"cuda_driver\": %d, \"kernel\": \"%s\", \"calls\": %d, "
                "\"batch\": %d, \"graph_kernels\": %d, \"graph_replays\": %d, \"rounds\": %d, "
                "\"guard_bytes\": %zu, %s, %s, \"paths\": {",
                prop.name, driver, art.kernel.c_str(), calls, batch, graph_kernels,
                graph_replays, rounds, kGuard, plan.c_str(), eval_only.json("eval_us").c_str());
    for (int p = 0; p < 3; ++p) {
        std::printf("%s\"%s\": {%s, %s, %s}", p ? ", " : "", names[p],
                    host[p].json("host_us").c_str(), sync[p].json("sync_us").c_str(),
                    graph[p].json("graph_us").c_str());
    }
    std::printf("}}\n");
    for (CUdeviceptr p : L.ptrs) CHECK(cudaFree(reinterpret_cast<void*>(p)));
    CHECK_CU(cu.ModuleUnload(module));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
