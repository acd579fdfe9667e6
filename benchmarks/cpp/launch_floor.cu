// launch_floor.cu -- the C++ launch floor: the cost of launching pyplugins' own kernels with
// <<<>>> back to back from C++, which no Python enqueue can beat.
//
// Build (benchmarks/overhead.py does this at run time, into a temporary directory):
//     nvcc -O2 -std=c++17 -arch=sm_90 -I kernels_cu benchmarks/cpp/launch_floor.cu -o launch_floor
// Run:
//     launch_floor [calls] [batch] [graph_kernels] [graph_replays]
// Prints one JSON object on stdout: per kernel (leaky_relu<float> on 1024 elements, circ_pad<float>
// of a 1x1x32x32 input padded by 1 on each side of H and W), microseconds per launch, min and
// median over batches:
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

#include "leaky_relu.cu"
#include "circ_pad.cu"

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                         cudaGetErrorString(err_));                                     \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

namespace {

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

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < graph_kernels; ++i) launch();
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int w = 0; w < 3; ++w) CHECK(cudaGraphLaunch(exec, stream));
    std::vector<double> per_kernel;
    for (int r = 0; r < graph_replays; ++r) {
        CHECK(cudaEventRecord(start, stream));
        CHECK(cudaGraphLaunch(exec, stream));
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        per_kernel.push_back(1000.0 * ms / graph_kernels);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));

    char head[96];
    std::snprintf(head, sizeof head, "{\"calls\": %d, \"batch\": %d, \"graph_kernels\": %d, ",
                  batches * batch, batch, graph_kernels);
    return std::string(head) + json("host_us", summarize(host)) + ", " +
           json("sync_us", summarize(both)) + ", " + json("graph_us", summarize(per_kernel)) +
           "}";
}

// circ_pad's parameters for a rank-4 input padded by `pad` on each side of its last two dims,
// as the launch contract in kernels_cu/circ_pad.cu prescribes.
CircPadParams circ_pad_params(const long long in[4], long long pad, int* grid, int block) {
    CircPadParams p;
    for (int d = 0; d < pp::kMaxRank; ++d) {
        p.in_dims.d[d] = p.out_dims.d[d] = 1;
        p.shift.d[d] = 0;
    }
    for (int k = 0; k < 4; ++k) p.in_dims.d[4 + k] = p.out_dims.d[4 + k] = in[k];
    for (int d = 6; d < 8; ++d) {
        p.out_dims.d[d] += 2 * pad;
        p.shift.d[d] = ((-pad) % in[d - 4] + in[d - 4]) % in[d - 4];
    }
    long long stride = 1;
    for (int d = pp::kMaxRank - 1; d >= 0; --d) {
        p.in_strides.d[d] = stride;
        stride *= p.in_dims.d[d];
    }
    p.rows = 1;
    for (int d = 0; d < pp::kMaxRank - 1; ++d) p.rows *= p.out_dims.d[d];
    const long long wo = p.out_dims.d[7];
    long long group = 1;
    while (group < 32 && group < wo) group *= 2;
    const long long unroll = 32 / sizeof(float);
    p.group = group;
    p.strip_len = wo <= 8 * group * unroll ? wo : 8 * group * unroll;
    p.strips = (wo + p.strip_len - 1) / p.strip_len;
    *grid = static_cast<int>((p.rows * p.strips * group + block - 1) / block);
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    const int calls = argc > 1 ? std::atoi(argv[1]) : 10000;
    const int batch = argc > 2 ? std::atoi(argv[2]) : 200;
    const int graph_kernels = argc > 3 ? std::atoi(argv[3]) : 100;
    const int graph_replays = argc > 4 ? std::atoi(argv[4]) : 50;

    cudaStream_t stream;
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int runtime = 0, driver = 0;
    CHECK(cudaRuntimeGetVersion(&runtime));
    CHECK(cudaDriverGetVersion(&driver));

    // LeakyReLU: 1024 floats, 256 threads, one block (the contract's recommended grid).
    const long long n = 1024;
    std::vector<float> host_x(n);
    for (long long i = 0; i < n; ++i) host_x[i] = static_cast<float>((i * 37) % 101) - 50.f;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(x, host_x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    auto leaky = [&] { leaky_relu<float><<<1, 256, 0, stream>>>(x, y, n, 0.01f); };
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

    // CircPad: 1x1x32x32 floats padded to 1x1x34x34.
    const long long in_shape[4] = {1, 1, 32, 32};
    int grid = 1;
    const CircPadParams params = circ_pad_params(in_shape, 1, &grid, 256);
    float* py;
    CHECK(cudaMalloc(&py, 34 * 34 * sizeof(float)));
    auto pad = [&] { circ_pad<float><<<grid, 256, 0, stream>>>(x, py, params); };
    const std::string pad_json = measure(pad, stream, calls, batch, graph_kernels, graph_replays);
    std::vector<float> host_p(34 * 34);
    CHECK(cudaMemcpy(host_p.data(), py, host_p.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < 34; ++r) {
        for (int c = 0; c < 34; ++c) {
            const float want = host_x[((r + 31) % 32) * 32 + (c + 31) % 32];
            if (host_p[r * 34 + c] != want) {
                std::fprintf(stderr, "circ_pad<float> wrong at (%d, %d)\n", r, c);
                return 1;
            }
        }
    }

    std::printf("{\"device\": \"%s\", \"cuda_runtime\": %d, \"cuda_driver\": %d, "
                "\"leaky_relu\": %s, \"circ_pad\": %s}\n",
                prop.name, runtime, driver, leaky_json.c_str(), pad_json.c_str());
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(py));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
