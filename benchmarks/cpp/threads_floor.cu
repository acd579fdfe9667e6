// threads_floor.cu -- the C++ twin of the many-threads enqueue benchmark (docs/benchmarks.md item 8):
// T std::threads, each on its own device (thread i on devices[i % count]) and its own
// non-blocking stream, launching leaky_relu<float> on 1024 elements with <<<>>> back to back for
// a fixed wall time: the aggregate launch rate that C++ reaches with no GIL.
//
// Build (benchmarks/threads.py does this at run time):
//     nvcc -O2 -std=c++17 -arch=sm_90 -I kernels_cu benchmarks/cpp/threads_floor.cu -o threads_floor
// Run:
//     threads_floor COUNTS SECONDS ROUNDS DEVICES GRID BLOCK
// COUNTS and DEVICES are comma lists ("1,2,4,8", "0,1"); GRID and BLOCK the plugin's own launch.
// Per round and thread count, the threads start together, launch until SECONDS have passed and
// synchronize their streams; every thread's output is then checked against the formula. Prints one
// JSON object: {"device": ..., "rounds": [{"T": launches per second, ...}, ...]}. Every CUDA call
// is checked.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "leaky_relu.cu"

#include "check.h"

namespace {

constexpr long long kN = 1024;

std::vector<int> int_list(const char* text) {
    std::vector<int> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
    return out;
}

// One thread's device, stream and buffers.
struct Lane {
    int device;
    cudaStream_t stream;
    float *x, *y;
};

// `threads` lanes launching until `seconds` pass; returns aggregate launches per second.
double rate(std::vector<Lane>& lanes, int threads, double seconds, int grid, int block) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false}, stop{false};
    std::vector<long long> counts(threads, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            Lane& lane = lanes[t];
            CHECK(cudaSetDevice(lane.device));
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            long long calls = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                leaky_relu<float><<<grid, block, 0, lane.stream>>>(lane.x, lane.y, kN, 0.01f);
                ++calls;
            }
            CHECK(cudaGetLastError());
            CHECK(cudaStreamSynchronize(lane.stream));
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

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s COUNTS SECONDS ROUNDS DEVICES GRID BLOCK\n", argv[0]);
        return 2;
    }
    const std::vector<int> counts = int_list(argv[1]), devices = int_list(argv[4]);
    const double seconds = std::atof(argv[2]);
    const int rounds = std::atoi(argv[3]), grid = std::atoi(argv[5]), block = std::atoi(argv[6]);
    int most = 0;
    for (int c : counts) most = c > most ? c : most;
    if (devices.empty() || most < 1 || rounds < 1) {
        std::fprintf(stderr, "COUNTS, DEVICES and ROUNDS must be non-empty and positive\n");
        return 2;
    }
    std::vector<float> host_x(kN);
    for (long long i = 0; i < kN; ++i) host_x[i] = static_cast<float>((i * 37) % 101) - 50.f;
    std::vector<Lane> lanes;
    for (int t = 0; t < most; ++t) {
        Lane lane{devices[t % devices.size()], nullptr, nullptr, nullptr};
        CHECK(cudaSetDevice(lane.device));
        CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
        CHECK(cudaMalloc(&lane.x, kN * sizeof(float)));
        CHECK(cudaMalloc(&lane.y, kN * sizeof(float)));
        CHECK(cudaMemcpy(lane.x, host_x.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
        lanes.push_back(lane);
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, devices[0]));
    rate(lanes, most, seconds / 4, grid, block);  // warm-up
    std::string out = std::string("{\"device\": \"") + prop.name + "\", \"rounds\": [";
    for (int r = 0; r < rounds; ++r) {
        out += r ? ", {" : "{";
        for (size_t i = 0; i < counts.size(); ++i) {
            const double per_s = rate(lanes, counts[i], seconds, grid, block);
            out += (i ? ", \"" : "\"") + std::to_string(counts[i]) + "\": " +
                   std::to_string(per_s);
        }
        out += "}";
    }
    for (Lane& lane : lanes) {
        std::vector<float> y(kN);
        CHECK(cudaSetDevice(lane.device));
        CHECK(cudaMemcpy(y.data(), lane.y, kN * sizeof(float), cudaMemcpyDeviceToHost));
        for (long long i = 0; i < kN; ++i) {
            const float want = host_x[i] >= 0.f ? host_x[i] : 0.01f * host_x[i];
            if (y[i] != want) {
                std::fprintf(stderr, "leaky_relu<float> wrong at %lld on device %d\n", i,
                             lane.device);
                return 1;
            }
        }
        CHECK(cudaFree(lane.x));
        CHECK(cudaFree(lane.y));
        CHECK(cudaStreamDestroy(lane.stream));
    }
    std::printf("%s]}\n", out.c_str());
    return 0;
}
