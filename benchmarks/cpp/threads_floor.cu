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
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "leaky_relu.cu"

#include "bench_util.h"

namespace {

constexpr long long kN = 1024;

// One thread's device, stream and buffers.
struct Lane {
    int device;
    cudaStream_t stream;
    float *x, *y;
};

// `threads` lanes launching until `seconds` pass; returns aggregate launches per second.
double rate(std::vector<Lane>& lanes, int threads, double seconds, int grid, int block) {
    return ppbench::threads_rate(
        threads, seconds, [&](int t) { CHECK(cudaSetDevice(lanes[t].device)); },
        [&](int t) {
            Lane& lane = lanes[t];
            leaky_relu<float><<<grid, block, 0, lane.stream>>>(lane.x, lane.y, kN, 0.01f);
        },
        [&](int t) {
            CHECK(cudaGetLastError());
            CHECK(cudaStreamSynchronize(lanes[t].stream));
        });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s COUNTS SECONDS ROUNDS DEVICES GRID BLOCK\n", argv[0]);
        return 2;
    }
    const std::vector<int> counts = ppbench::int_list(argv[1]);
    const std::vector<int> devices = ppbench::int_list(argv[4]);
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
