// launch_floor.cu -- the C++ launch floor: the cost of launching pyplugins' own kernels with
// <<<>>> back to back from C++, which no Python enqueue can beat.
//
// Build (benchmarks/overhead.py does this at run time, into a temporary directory):
//     nvcc -O2 -std=c++17 -arch=sm_90 -I kernels_cu benchmarks/cpp/launch_floor.cu -o launch_floor
// Run (benchmarks/overhead.py passes the grids, blocks, CircPad kernel and parameter bytes that the
// configured plugins packed, so both sides launch exactly the same work):
//     launch_floor calls batch graph_kernels graph_replays leaky_grid leaky_block
//                  pad_grid pad_block pad_kernel pad_params_hex
// Prints one JSON object on stdout: per kernel (leaky_relu<float> on 1024 elements, circ_pad<float>
// of a 1x1x32x32 input padded by 1 on each side of H and W, each output checked against the
// formula; and "empty", an empty kernel of one warp: the launch floor that small problems are
// compared with), microseconds per launch, min and median over batches:
//     host_us   the host side of a loop of `batch` launches (synchronized between batches, so
//               the launch queue never fills)
//     sync_us   the same loop plus cudaStreamSynchronize
//     graph_us  device time per kernel of a replayed CUDA graph of `graph_kernels` launches
// Every launch goes to one non-blocking stream. Every CUDA call is checked.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

// circ_pad.cu takes the constants it shares with the host as -D options, from
// pyplugins.ops.circ_pad.DEFINES (tests/ops/test_circ_pad.py checks that these match).
#define CIRC_PAD_NARROW_DATA 20480
#define CIRC_PAD_WN_CHUNKS 4
#define CIRC_PAD_WN_TABLE 2048
#define CIRC_PAD_WN_BLOCK 256
#define CIRC_PAD_WARP_ROW 2048
#define CIRC_PAD_WARP_BLOCK 256

#include "leaky_relu.cu"
#include "circ_pad.cu"

#include "bench_util.h"

namespace {

__global__ void empty_kernel() {}

struct Stats {
    double min, median;
};

Stats summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return {v.front(), med};
}

std::string json(const char* name, const Stats& s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "\"%s\": {\"min\": %.4f, \"median\": %.4f}", name, s.min,
                  s.median);
    return buf;
}

double now_us() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double, std::micro>(clock::now().time_since_epoch()).count();
}

// Times `launch` as described in the header; returns the kernel's JSON object.
std::string measure(const std::function<void()>& launch, cudaStream_t stream, int calls,
                    int batch, int graph_kernels, int graph_replays) {
    const int batches = std::max(1, (calls + batch - 1) / batch);
    for (int w = 0; w < 5; ++w) {
        for (int i = 0; i < batch; ++i) launch();
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(stream));
    }
    std::vector<double> host, both;
    for (int b = 0; b < batches; ++b) {
        double t0 = now_us();
        for (int i = 0; i < batch; ++i) launch();
        double t1 = now_us();
        CHECK(cudaStreamSynchronize(stream));
        host.push_back((t1 - t0) / batch);
        t0 = now_us();
        for (int i = 0; i < batch; ++i) launch();
        CHECK(cudaStreamSynchronize(stream));
        both.push_back((now_us() - t0) / batch);
    }
    CHECK(cudaGetLastError());

    const std::vector<double> per_kernel =
        ppbench::graph_replay_us(launch, stream, graph_kernels, graph_replays);

    char head[96];
    std::snprintf(head, sizeof head, "{\"calls\": %d, \"batch\": %d, \"graph_kernels\": %d, ",
                  batches * batch, batch, graph_kernels);
    return std::string(head) + json("host_us", summarize(host)) + ", " +
           json("sync_us", summarize(both)) + ", " + json("graph_us", summarize(per_kernel)) +
           "}";
}

// Parses the hex text of a parameter struct's bytes (as the plugin packed them) into it.
template <typename P>
bool params_from_hex(const char* hex, P* p) {
    const std::string text(hex);
    if (text.size() != 2 * sizeof(P)) return false;
    unsigned char* out = reinterpret_cast<unsigned char*>(p);
    for (size_t i = 0; i < sizeof(P); ++i) {
        out[i] = static_cast<unsigned char>(std::stoul(text.substr(2 * i, 2), nullptr, 16));
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 11) {
        std::fprintf(stderr, "usage: %s calls batch graph_kernels graph_replays leaky_grid "
                     "leaky_block pad_grid pad_block pad_kernel pad_params_hex\n", argv[0]);
        return 2;
    }
    const int calls = std::atoi(argv[1]);
    const int batch = std::atoi(argv[2]);
    const int graph_kernels = std::atoi(argv[3]);
    const int graph_replays = std::atoi(argv[4]);
    const int leaky_grid = std::atoi(argv[5]), leaky_block = std::atoi(argv[6]);
    const int pad_grid = std::atoi(argv[7]), pad_block = std::atoi(argv[8]);
    // The plugin picks its CircPad kernel per shape: circ_pad or circ_pad_narrow (CircPadParams),
    // or circ_pad_flat, circ_pad_warp or circ_pad_warp_narrow (CircPadFlatParams); the floor
    // launches the same one with the same bytes.
    const std::string pad_kernel(argv[9]);
    const bool warp = pad_kernel == "circ_pad_warp", warp_narrow = pad_kernel == "circ_pad_warp_narrow";
    const bool flat = pad_kernel == "circ_pad_flat" || warp || warp_narrow;
    CircPadParams params;
    CircPadFlatParams flat_params;
    const bool narrow = pad_kernel == "circ_pad_narrow";
    if (!flat && !narrow && pad_kernel != "circ_pad") {
        std::fprintf(stderr, "pad_kernel must be circ_pad, circ_pad_narrow, circ_pad_flat, "
                     "circ_pad_warp or circ_pad_warp_narrow (got %s)\n", argv[9]);
        return 2;
    }
    if (flat ? !params_from_hex(argv[10], &flat_params) : !params_from_hex(argv[10], &params)) {
        std::fprintf(stderr, "pad_params_hex must hold %zu bytes of %s\n",
                     flat ? sizeof(CircPadFlatParams) : sizeof(CircPadParams),
                     flat ? "CircPadFlatParams" : "CircPadParams");
        return 2;
    }

    cudaStream_t stream;
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int runtime = 0, driver = 0;
    CHECK(cudaRuntimeGetVersion(&runtime));
    CHECK(cudaDriverGetVersion(&driver));

    // LeakyReLU: 1024 floats, the plugin's grid and block.
    const long long n = 1024;
    std::vector<float> host_x(n);
    for (long long i = 0; i < n; ++i) host_x[i] = static_cast<float>((i * 37) % 101) - 50.f;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(x, host_x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    auto leaky = [&] {
        leaky_relu<float><<<leaky_grid, leaky_block, 0, stream>>>(x, y, n, 0.01f);
    };
    const std::string leaky_json = measure(leaky, stream, calls, batch, graph_kernels,
                                           graph_replays);
    std::vector<float> host_y(n);
    CHECK(cudaMemcpy(host_y.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (long long i = 0; i < n; ++i) {
        const float want = host_x[i] >= 0.f ? host_x[i] : 0.01f * host_x[i];
        if (host_y[i] != want) {
            std::fprintf(stderr, "leaky_relu<float> wrong at %lld: %g != %g\n", i, host_y[i], want);
            return 1;
        }
    }

    // CircPad: 1x1x32x32 floats padded to 1x1x34x34, with the plugin's plan.
    float* py;
    CHECK(cudaMalloc(&py, 34 * 34 * sizeof(float)));
    auto pad = [&] {
        if (warp) {
            circ_pad_warp<float><<<pad_grid, pad_block, 0, stream>>>(x, py, flat_params);
        } else if (warp_narrow) {
            circ_pad_warp_narrow<float><<<pad_grid, pad_block, 0, stream>>>(x, py, flat_params);
        } else if (flat) {
            circ_pad_flat<float><<<pad_grid, pad_block, 0, stream>>>(x, py, flat_params);
        } else if (narrow) {
            circ_pad_narrow<float><<<pad_grid, pad_block, 0, stream>>>(x, py, params);
        } else {
            circ_pad<float><<<pad_grid, pad_block, 0, stream>>>(x, py, params);
        }
    };
    const std::string pad_json = measure(pad, stream, calls, batch, graph_kernels, graph_replays);
    std::vector<float> host_p(34 * 34);
    CHECK(cudaMemcpy(host_p.data(), py, host_p.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < 34; ++r) {
        for (int c = 0; c < 34; ++c) {
            const float want = host_x[((r + 31) % 32) * 32 + (c + 31) % 32];
            if (host_p[r * 34 + c] != want) {
                std::fprintf(stderr, "%s<float> wrong at (%d, %d)\n", pad_kernel.c_str(), r, c);
                return 1;
            }
        }
    }

    auto empty = [&] { empty_kernel<<<1, 32, 0, stream>>>(); };
    const std::string empty_json = measure(empty, stream, calls, batch, graph_kernels,
                                           graph_replays);

    std::printf("{\"device\": \"%s\", \"cuda_runtime\": %d, \"cuda_driver\": %d, "
                "\"leaky_relu\": %s, \"circ_pad\": %s, \"empty\": %s}\n",
                prop.name, runtime, driver, leaky_json.c_str(), pad_json.c_str(),
                empty_json.c_str());
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(py));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
