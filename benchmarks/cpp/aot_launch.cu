// aot_launch.cu -- a stored pyplugins AOT artifact launched as TensorRT launches it, timed beside
// the C++ <<<>>> floor of the same kernel (docs/benchmarks.md item 7).
//
// At run time an engine with a QDP AOT kernel holds no Python: TensorRT loads the kernel image,
// and at every enqueue evaluates the symbolic grid, block, shared memory and extra int32
// arguments for the current input shapes (they may change between runs), packs the input
// pointers, the extra arguments and the output pointers, and calls cuLaunchKernel
// (docs/trt-protocol.md §8.4; how TensorRT stores and evaluates the expressions internally is not
// public [infer: here, compiled at load into a flat constant-folded program (aot_program.h), run
// per launch; the parameter buffer packed once, its shape-dependent slots rewritten per launch
// (aot_driver.h)]).
//
// Build (benchmarks/aot_rows.py does this at run time, with the op's generated floor source):
//     nvcc -O2 -std=c++17 -arch=sm_90 -I benchmarks/cpp -I kernels_cu
//          benchmarks/cpp/aot_launch.cu floor.cu -o aot_launch
// Run:
//     aot_launch ARTIFACT.flat DIR calls batch graph_kernels graph_replays rounds
// ARTIFACT.flat is benchmarks/aot_export.py's flat export (grammar in aot_flat.h). DIR holds
// shapes.txt (per input one line: rank, then the dimensions) and in<k>.bin (input k's bytes).
// Before timing, each path launches once into outputs poisoned with 0xFF bytes (plus 256 guard
// bytes) and writes them to DIR/out_<path>_<j>.bin, which the caller compares with the JIT
// plugin's output (a path whose output is wrong is refused there). Paths:
//     cpp_floor          the same entry kernel compiled by nvcc, <<<>>> with evaluated values
//     aot_preevaluated   cuLaunchKernel of the artifact's kernel, parameters packed once
//     aot_launch         per launch: evaluate every expression, rewrite the shape-dependent
//                        slots, cuLaunchKernel
// Timing. A round is calls/batch "slots"; in each slot every path runs one batch of `batch`
// launches on one non-blocking stream, the paths in an order that rotates from slot to slot (and
// round to round), each batch timed twice: host time of the batch alone (then synchronize), and
// batch + synchronize. A path's round figure is the median of its batches in that round; the
// same rule for every path. Then a CUDA graph of `graph_kernels` launches per path, captured and
// replayed `graph_replays` times (device time per kernel, CUDA events), the paths in rotating
// order. eval_us times aot_launch's evaluation alone (batches of 10 x batch). Prints one JSON
// object; per metric min (over every batch), median (of the round figures), rounds (each round's
// figure) and q25/q75 (quartiles over every batch of every round), microseconds per launch.
// Every CUDA call is checked.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "aot_driver.h"
#include "aot_floor.h"

namespace {

using ppaot::cu;

constexpr size_t kGuard = 256;

double now_us() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double, std::micro>(clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// Per round, the samples of one metric; min over all samples, median of the round medians,
// quartiles over all samples.
struct Metric {
    std::vector<std::vector<double>> rounds;
    std::string json(const char* name) const {
        double lo = 1e300;
        std::vector<double> meds, all;
        for (const auto& r : rounds) {
            for (double v : r) lo = std::min(lo, v), all.push_back(v);
            meds.push_back(median(r));
        }
        std::string s = std::string("\"") + name + "\": {\"min\": " + std::to_string(lo) +
                        ", \"median\": " + std::to_string(median(meds)) +
                        ", \"q25\": " + std::to_string(quantile(all, 0.25)) +
                        ", \"q75\": " + std::to_string(quantile(all, 0.75)) + ", \"rounds\": [";
        for (size_t i = 0; i < meds.size(); ++i) s += (i ? ", " : "") + std::to_string(meds[i]);
        return s + "]}";
    }
};

// One round of the host metrics: calls/batch slots, each path one batch per slot, the paths'
// order rotating with the slot (see the header).
void measure_round(std::function<void()>* paths, int n_paths, cudaStream_t stream, int calls,
                   int batch, int round, Metric* host, Metric* sync) {
    std::vector<std::vector<double>> h(n_paths), s(n_paths);
    const int slots = std::max(1, calls / batch);
    for (int b = 0; b < slots; ++b) {
        for (int q = 0; q < n_paths; ++q) {
            const int p = (q + b + round) % n_paths;
            double t0 = now_us();
            for (int i = 0; i < batch; ++i) paths[p]();
            const double t1 = now_us();
            CHECK(cudaStreamSynchronize(stream));
            h[p].push_back((t1 - t0) / batch);
            t0 = now_us();
            for (int i = 0; i < batch; ++i) paths[p]();
            CHECK(cudaStreamSynchronize(stream));
            s[p].push_back((now_us() - t0) / batch);
        }
    }
    CHECK(cudaGetLastError());
    for (int p = 0; p < n_paths; ++p) {
        host[p].rounds.push_back(h[p]);
        sync[p].rounds.push_back(s[p]);
    }
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
    ppaot::Program prog, out_prog;
    try {
        art = ppaot::parse(ppbench::read_file(argv[1]));
        prog = ppaot::launch_program(art);
        std::vector<const ppaot::Expr*> dims;
        for (const auto& o : art.outputs) {
            for (const auto& e : o) dims.push_back(&e);
        }
        out_prog = ppaot::Program::compile(dims);
    } catch (const ppaot::Error& e) {
        std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 2;
    }
    const int32_t n_in = static_cast<int32_t>(art.input_types.size());
    const size_t n_out = art.output_types.size(), k = art.extra.size();

    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(nullptr));  // the primary context, current: the driver calls below use it
    ppaot::load_driver();
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int driver = 0;
    CHECK(cudaDriverGetVersion(&driver));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    ppaot::Dims dims[ppaot::kMaxInputs];
    std::istringstream shapes(ppbench::read_file(dir + "/shapes.txt"));
    for (int32_t i = 0; i < n_in; ++i) {
        shapes >> dims[i].nbDims;
        for (int d = 0; d < dims[i].nbDims; ++d) shapes >> dims[i].d[d];
    }
    std::vector<int64_t> fixed(7 + k);
    std::vector<size_t> out_bytes;
    {
        std::vector<int64_t> r = prog.registers(), o = out_prog.registers();
        ppaot::Status st = prog.run(dims, n_in, r.data());
        if (st == ppaot::kOk) st = out_prog.run(dims, n_in, o.data());
        if (st != ppaot::kOk) {
            std::fprintf(stderr, "cannot evaluate the launch: %s\n",
                         prog.why(st, dims, n_in).c_str());
            return 2;
        }
        for (size_t i = 0; i < 7 + k; ++i) fixed[i] = r[prog.root(i)];
        size_t at = 0;
        for (size_t j = 0; j < n_out; ++j) {
            size_t count = 1;
            for (size_t d = 0; d < art.outputs[j].size(); ++d) {
                count *= static_cast<size_t>(o[out_prog.root(at++)]);
            }
            out_bytes.push_back(count * ppaot::itemsize(art.output_types[j]));
        }
    }
    std::vector<CUdeviceptr> ptrs;
    for (int32_t i = 0; i < n_in; ++i) {
        const std::string bytes = ppbench::read_file(dir + "/in" + std::to_string(i) + ".bin");
        void* p = nullptr;
        CHECK(cudaMalloc(&p, bytes.size() + kGuard));
        CHECK(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
        ptrs.push_back(reinterpret_cast<CUdeviceptr>(p));
    }
    for (size_t j = 0; j < n_out; ++j) {
        void* p = nullptr;
        CHECK(cudaMalloc(&p, out_bytes[j] + kGuard));
        ptrs.push_back(reinterpret_cast<CUdeviceptr>(p));
    }
    CUmodule module;
    CUfunction fn = ppaot::load_kernel(art, fixed[6], &module);
    ppaot::Launcher L(prog, fn, reinterpret_cast<CUstream>(stream), dims, n_in);
    if (L.evaluate() != ppaot::kOk) return 2;
    L.set_buffers(ptrs);  // packed once: aot_preevaluated uses it as is, aot_launch rewrites
    CHECK(pp_floor_prepare(static_cast<unsigned>(fixed[6])));

    // The three paths.
    std::vector<int32_t> floor_extra(fixed.begin() + 7, fixed.end());
    std::vector<void*> floor_ptrs;
    for (CUdeviceptr p : ptrs) floor_ptrs.push_back(reinterpret_cast<void*>(p));
    const dim3 grid(fixed[0], fixed[1], fixed[2]), block(fixed[3], fixed[4], fixed[5]);
    const char* names[3] = {"cpp_floor", "aot_preevaluated", "aot_launch"};
    std::function<void()> paths[3] = {
        [&] {
            pp_floor_launch(grid, block, static_cast<unsigned>(fixed[6]), stream,
                            floor_ptrs.data(), floor_extra.data());
        },
        [&] { CHECK_CU(L.launch_packed()); },
        [&] { CHECK_CU(L.launch()); },
    };

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
    measure_round(paths, 3, stream, std::min(calls, 5 * batch), batch, 0, host, sync);  // warm-up
    for (int p = 0; p < 3; ++p) host[p].rounds.clear(), sync[p].rounds.clear();
    int64_t sink = 0;
    for (int r = 0; r < rounds; ++r) {
        measure_round(paths, 3, stream, calls, batch, r, host, sync);
        std::vector<double> ev;
        for (int b = 0; b < std::max(1, calls / batch); ++b) {
            const int n = 10 * batch;
            const double t0 = now_us();
            for (int i = 0; i < n; ++i) sink += L.evaluate() + L.value(7 % prog.size());
            ev.push_back((now_us() - t0) / n);
        }
        eval_only.rounds.push_back(ev);
        for (int q = 0; q < 3; ++q) {
            const int p = (q + r) % 3;
            graph[p].rounds.push_back(
                ppbench::graph_replay_us(paths[p], stream, graph_kernels, graph_replays));
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
                "\"guard_bytes\": %zu, \"eval_instructions\": %zu, \"eval_check\": %lld, %s, "
                "%s, \"paths\": {",
                prop.name, driver, art.kernel.c_str(), calls, batch, graph_kernels,
                graph_replays, rounds, kGuard, prog.instructions(),
                static_cast<long long>(sink % 1000), plan.c_str(),
                eval_only.json("eval_us").c_str());
    for (int p = 0; p < 3; ++p) {
        std::printf("%s\"%s\": {%s, %s, %s}", p ? ", " : "", names[p],
                    host[p].json("host_us").c_str(), sync[p].json("sync_us").c_str(),
                    graph[p].json("graph_us").c_str());
    }
    std::printf("}}\n");
    for (CUdeviceptr p : ptrs) CHECK(cudaFree(reinterpret_cast<void*>(p)));
    CHECK_CU(cu.ModuleUnload(module));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
