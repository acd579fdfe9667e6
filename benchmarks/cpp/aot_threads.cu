// aot_threads.cu -- the AOT row of the many-threads benchmark (docs/benchmarks.md item 8): T
// std::threads, each on its own device (thread i on devices[i % count]) and its own non-blocking
// stream, launching a stored pyplugins AOT artifact as TensorRT launches it (per launch: the
// compiled expressions run for the input shape, the shape-dependent slots are rewritten,
// cuLaunchKernel; aot_driver.h) back to back for a fixed wall time. No Python anywhere: the
// aggregate rate that an engine whose plugin is an AOT kernel reaches from many threads.
//
// Build (benchmarks/threads.py does this at run time):
//     nvcc -O2 -std=c++17 -arch=sm_90 -I benchmarks/cpp benchmarks/cpp/aot_threads.cu -o aot_threads
// Run:
//     aot_threads ARTIFACT.flat DIR COUNTS SECONDS ROUNDS DEVICES SHAPE
// ARTIFACT.flat: benchmarks/aot_export.py's flat export of a one-input, one-output artifact. DIR
// holds in0.bin (the input's bytes) and want0.bin (the output the JIT plugin wrote for it).
// COUNTS, DEVICES and SHAPE (the input's dimensions) are comma lists ("1,2,4,8", "0,1",
// "1024"). (The shape came in a shapes.txt until 2026-11-26; in full benchmark runs that file
// read as "11024" where "1 1024" had been written, cause not found.) Each lane first makes one launch, synchronized and compared with
// want0.bin. Per round and thread count the threads start together, launch until SECONDS have
// passed and synchronize their streams; every thread's output is then compared with want0.bin
// again (exit status 1 when one differs, with the launch its expressions gave). Prints one
// JSON object: {"device": ..., "instructions": per-launch program length, "rounds": [{"T": launches per
// second, ...}, ...]}. Every CUDA call is checked.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "aot_driver.h"

namespace {

// One thread's device, stream, buffers and launcher (its own registers and parameter buffer).
struct Lane {
    int device;
    cudaStream_t stream;
    void *x, *y;
    std::unique_ptr<ppaot::Launcher> launcher;
};

// `threads` lanes launching until `seconds` pass; aggregate launches per second.
double rate(std::vector<Lane>& lanes, int threads, double seconds) {
    return ppbench::threads_rate(
        threads, seconds,
        [&](int t) {
            CHECK(cudaSetDevice(lanes[t].device));
            CHECK(cudaFree(nullptr));  // the device's primary context, current for the driver
        },
        [&](int t) { CHECK_CU(lanes[t].launcher->launch()); },
        [&](int t) { CHECK(cudaStreamSynchronize(lanes[t].stream)); });
}

// 0 when `lane`'s output is `want`, else 1 after saying how it differs, `when` it was read, and
// the launch the lane's expressions gave (grid, block, shared memory, extra arguments).
int compare(const Lane& lane, const std::string& want, const char* when, size_t n_fields,
            const ppaot::Dims& dims) {
    std::string got(want.size(), '\0');
    CHECK(cudaSetDevice(lane.device));
    CHECK(cudaMemcpy(&got[0], lane.y, got.size(), cudaMemcpyDeviceToHost));
    if (got == want) return 0;
    size_t first = 0, differ = 0;
    for (size_t b = 0; b < got.size(); ++b) {
        if (got[b] != want[b] && differ++ == 0) first = b;
    }
    std::string launch;
    for (size_t i = 0; i < n_fields; ++i) {
        launch += (i ? " " : "") + std::to_string(lane.launcher->value(i));
    }
    std::string shape = std::to_string(dims.nbDims) + ":";
    for (int d = 0; d < dims.nbDims && d < ppaot::kMaxDims; ++d) {
        shape += " " + std::to_string(dims.d[d]);
    }
    std::fprintf(stderr, "the AOT kernel's output on device %d differs from the JIT plugin's %s: "
                 "%zu of %zu bytes, the first at byte %zu (got 0x%02x, want 0x%02x); the launch "
                 "(grid x y z, block x y z, shared memory, extra arguments): %s, for the input "
                 "shape read (rank: dims) %s\n",
                 lane.device, when, differ, got.size(), first,
                 static_cast<unsigned char>(got[first]), static_cast<unsigned char>(want[first]),
                 launch.c_str(), shape.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::fprintf(stderr, "usage: %s ARTIFACT.flat DIR COUNTS SECONDS ROUNDS DEVICES SHAPE\n",
                     argv[0]);
        return 2;
    }
    const std::string dir(argv[2]);
    const std::vector<int> counts = ppbench::int_list(argv[3]);
    const std::vector<int> devices = ppbench::int_list(argv[6]);
    const double seconds = std::atof(argv[4]);
    const int rounds = std::atoi(argv[5]);
    int most = 0;
    for (int c : counts) most = c > most ? c : most;
    if (devices.empty() || most < 1 || rounds < 1) {
        std::fprintf(stderr, "COUNTS, DEVICES and ROUNDS must be non-empty and positive\n");
        return 2;
    }
    ppaot::Artifact art;
    ppaot::Program prog;
    try {
        art = ppaot::parse(ppbench::read_file(argv[1]));
        prog = ppaot::launch_program(art);
    } catch (const ppaot::Error& e) {
        std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 2;
    }
    if (art.input_types.size() != 1 || art.output_types.size() != 1) {
        std::fprintf(stderr, "%s: aot_threads takes a one-input, one-output artifact\n",
                     argv[1]);
        return 2;
    }
    ppaot::Dims dims[1];
    const std::vector<int> shape = ppbench::int_list(argv[7]);
    if (shape.size() > static_cast<size_t>(ppaot::kMaxDims)) {
        std::fprintf(stderr, "SHAPE has %zu dimensions, more than %d\n", shape.size(),
                     ppaot::kMaxDims);
        return 2;
    }
    dims[0].nbDims = static_cast<int32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) dims[0].d[d] = shape[d];
    const std::string in = ppbench::read_file(dir + "/in0.bin");
    const std::string want = ppbench::read_file(dir + "/want0.bin");

    // Per device: its context current, the driver's functions, the kernel loaded once.
    std::vector<CUmodule> modules(devices.size());
    std::vector<CUfunction> functions(devices.size());
    int64_t shared_mem = 0;
    {
        std::vector<int64_t> r = prog.registers();
        const ppaot::Status st = prog.run(dims, 1, r.data());
        if (st != ppaot::kOk) {
            std::fprintf(stderr, "cannot evaluate the launch: %s\n",
                         prog.why(st, dims, 1).c_str());
            return 2;
        }
        shared_mem = r[prog.root(6)];
    }
    for (size_t i = 0; i < devices.size(); ++i) {
        CHECK(cudaSetDevice(devices[i]));
        CHECK(cudaFree(nullptr));
        if (i == 0) ppaot::load_driver();
        functions[i] = ppaot::load_kernel(art, shared_mem, &modules[i]);
    }
    std::vector<Lane> lanes;
    for (int t = 0; t < most; ++t) {
        const size_t at = static_cast<size_t>(t) % devices.size();
        Lane lane{devices[at], nullptr, nullptr, nullptr, nullptr};
        CHECK(cudaSetDevice(lane.device));
        CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
        CHECK(cudaMalloc(&lane.x, in.size()));
        CHECK(cudaMalloc(&lane.y, want.size()));
        CHECK(cudaMemcpy(lane.x, in.data(), in.size(), cudaMemcpyHostToDevice));
        CHECK(cudaMemset(lane.y, 0xFF, want.size()));
        // cudaMemset runs on the legacy stream, which the lane's non-blocking stream does not
        // wait for: finish it here, or it can land after the kernels and leave 0xFF behind.
        CHECK(cudaDeviceSynchronize());
        lane.launcher = std::make_unique<ppaot::Launcher>(
            prog, functions[at], reinterpret_cast<CUstream>(lane.stream), dims, 1);
        if (lane.launcher->evaluate() != ppaot::kOk) return 2;
        lane.launcher->set_buffers({reinterpret_cast<CUdeviceptr>(lane.x),
                                    reinterpret_cast<CUdeviceptr>(lane.y)});
        lanes.push_back(std::move(lane));
    }
    // One launch per lane, checked before anything is timed.
    int bad = 0;
    for (Lane& lane : lanes) {
        CHECK(cudaSetDevice(lane.device));
        CHECK_CU(lane.launcher->launch());
        CHECK(cudaStreamSynchronize(lane.stream));
        bad |= compare(lane, want, "after its first launch", prog.size(), dims[0]);
    }
    if (bad) return 1;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, devices[0]));
    rate(lanes, most, seconds / 4);  // warm-up
    std::string out = std::string("{\"device\": \"") + prop.name +
                      "\", \"instructions\": " + std::to_string(prog.instructions()) +
                      ", \"rounds\": [";
    for (int r = 0; r < rounds; ++r) {
        out += r ? ", {" : "{";
        for (size_t i = 0; i < counts.size(); ++i) {
            const double per_s = rate(lanes, counts[i], seconds);
            out += (i ? ", \"" : "\"") + std::to_string(counts[i]) + "\": " +
                   std::to_string(per_s);
        }
        out += "}";
    }
    for (Lane& lane : lanes) {
        bad |= compare(lane, want, "after the timed rounds", prog.size(), dims[0]);
        CHECK(cudaFree(lane.x));
        CHECK(cudaFree(lane.y));
        CHECK(cudaStreamDestroy(lane.stream));
    }
    for (size_t i = 0; i < devices.size(); ++i) {
        CHECK(cudaSetDevice(devices[i]));
        CHECK_CU(ppaot::cu.ModuleUnload(modules[i]));
    }
    if (bad) return 1;
    std::printf("%s]}\n", out.c_str());
    return 0;
}
