// bench_util.h -- what the benchmark programs share (launch_floor.cu, threads_floor.cu,
// aot_threads.cu, aot_launch.cu, through aot_driver.h):
//   CHECK(call)          a CUDA runtime call that must succeed; on failure the file, line, call
//                        and CUDA's message go to stderr and the program exits 1;
//   read_file(path)      a whole file's bytes (exit 2 when it cannot be read);
//   int_list("1,2,4")    a comma list of ints;
//   graph_replay_us(...) a launch captured into a graph and replayed: device us per kernel;
//   threads_rate(...)    T threads launching until a time passes: aggregate launches per second.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

namespace ppbench {

inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        std::exit(2);
    }
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::vector<int> int_list(const char* text) {
    std::vector<int> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
    return out;
}

// `kernels` calls of launch() captured on `stream` (thread-local mode) into one graph, replayed
// three times untimed and then `replays` times between CUDA events: the device microseconds per
// kernel of each timed replay.
inline std::vector<double> graph_replay_us(const std::function<void()>& launch,
                                           cudaStream_t stream, int kernels, int replays) {
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
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return per_kernel;
}

// `threads` threads, thread t calling enter(t) (its device, its context), then, once all are
// ready, launch(t) until `seconds` pass, then finish(t) (check, synchronize); returns the
// launches of all threads per second of the timed span.
template <typename Enter, typename Launch, typename Finish>
double threads_rate(int threads, double seconds, Enter enter, Launch launch, Finish finish) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false}, stop{false};
    std::vector<long long> counts(threads, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            enter(t);
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            long long calls = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                launch(t);
                ++calls;
            }
            finish(t);
            counts[t] = calls;
        });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto& th : pool) th.join();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    long long total = 0;
    for (long long c : counts) total += c;
    return total / elapsed;
}

}  // namespace ppbench
