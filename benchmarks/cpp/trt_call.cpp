// trt_call.cpp -- TensorRT's V2 enqueue trampoline, mirrored: C++ calling a Python `enqueue`
// exactly as TensorRT's pybind11 binding does, so the host-overhead benchmark times a plugin
// "as TensorRT calls it" with the binding's real costs and no Python-side stand-in.
//
// What TensorRT's binding does per enqueue (python/src/infer/pyPlugin.cpp, the V2 trampoline's
// `enqueue`; docs/trt-protocol.md = /work/shared/trt-python-plugin-protocol.md §3, §9, §12):
//   1. py::gil_scoped_acquire (the caller, execute_async_v3, released the GIL);
//   2. utils::getOverride(this, "enqueue") = py::get_override by name (a std::string made from
//      the name, then pybind11's lookup: the Python object of `this`, the inactive-override
//      cache, getattr (a new bound method), the recursion guard that reads the calling frame);
//   3. std::vector<PluginTensorDesc> of the inputs and of the outputs, filled by push_back from
//      TensorRT's C arrays; std::vector<intptr_t> of the input and of the output pointers;
//   4. the call, which pybind11 casts argument by argument: each vector becomes a new Python list,
//      each PluginTensorDesc a new Python wrapper owning a C++ copy (its fields become Python
//      objects only when read), each pointer a Python int;
//   5. a Python exception is caught and printed, and enqueue returns -1; release of the GIL.
// `run` below does 1-5 `calls` times with the GIL released in between, the loop itself in C++.
//
// The plugin: a Python subclass of this module's IPluginV2DynamicExt goes through pybind11's own
// py::get_override (the binding's exact code path). The benchmark's plugins are the emulator's
// plugin objects, which cannot also be pybind11 instances (their base has its own instance
// layout), so for any other object `lookup_override` performs pybind11's steps itself, in
// pybind11's order (pybind11/pybind11.h, detail::get_type_override); the benchmark times both on
// one empty enqueue so the two lookups can be compared.
//
// Descriptors: Dims64 / PluginTensorDesc are C structs laid out as TensorRT 10's; DataType and
// TensorFormat are py::enum_ with TensorRT's names and values, as TensorRT binds them, so reading
// `.type` makes a new enum object as under TensorRT (§12). They are this module's types, not the
// emulator's: an enqueue that compares `.type` with the emulator's `trt.DataType` would see False
// (the benchmark's enqueues read no descriptor field; the benchmark checks every path's output).
//
// Build (benchmarks/overhead.py does this at run time, into a temporary directory):
//     g++ -O2 -shared -fPIC -std=c++17 -fvisibility=hidden -I<Python include> -I<pybind11 include>
//         benchmarks/cpp/trt_call.cpp -o pp_trt_call$(python3-config --extension-suffix)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeindex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

constexpr int32_t kMaxDims = 8;

struct Dims64 {
    int32_t nbDims{0};
    int64_t d[kMaxDims]{};
};

enum class DataType : int32_t {
    kFLOAT = 0, kHALF = 1, kINT8 = 2, kINT32 = 3, kBOOL = 4, kUINT8 = 5, kFP8 = 6, kBF16 = 7,
    kINT64 = 8, kINT4 = 9, kFP4 = 10, kE8M0 = 11
};

enum class TensorFormat : int32_t {
    kLINEAR = 0, kCHW2 = 1, kHWC8 = 2, kCHW4 = 3, kCHW16 = 4, kCHW32 = 5, kDHWC8 = 6,
    kCDHW32 = 7, kHWC = 8, kDLA_LINEAR = 9, kDLA_HWC4 = 10, kHWC16 = 11, kDHWC = 12
};

struct PluginTensorDesc {
    Dims64 dims;
    DataType type{DataType::kFLOAT};
    TensorFormat format{TensorFormat::kLINEAR};
    float scale{0.0f};
};

// One enqueue's arguments as TensorRT holds them: C arrays, and the counts its trampoline caches
// (mNbInputs from configure_plugin, mNbOutputs = num_outputs).
struct Frame {
    const PluginTensorDesc* in_desc;
    const PluginTensorDesc* out_desc;
    const void* const* inputs;
    void* const* outputs;
    void* workspace;
    void* stream;
    int32_t nb_inputs;
    int32_t nb_outputs;
};

// The C++ side of a plugin, as TensorRT's IPluginV2DynamicExt (enqueue only).
struct IPluginV2DynamicExt {
    virtual ~IPluginV2DynamicExt() = default;
    virtual int32_t enqueue(const Frame& f) noexcept = 0;
    std::string error;  // the first exception an enqueue printed (TensorRT: std::cerr)
};

// Steps 3-5 of the header, shared by both lookups: `fn` is what getOverride returned.
int32_t call_enqueue(const py::function& fn, const Frame& f, std::string& error) {
    if (!fn) {
        throw std::runtime_error("no implementation provided for enqueue()");
    }
    std::vector<PluginTensorDesc> inVector;
    for (int32_t i = 0; i < f.nb_inputs; ++i) inVector.push_back(f.in_desc[i]);
    std::vector<PluginTensorDesc> outVector;
    for (int32_t i = 0; i < f.nb_outputs; ++i) outVector.push_back(f.out_desc[i]);
    std::vector<intptr_t> inPtrs;
    for (int32_t i = 0; i < f.nb_inputs; ++i) inPtrs.push_back(reinterpret_cast<intptr_t>(f.inputs[i]));
    std::vector<intptr_t> outPtrs;
    for (int32_t i = 0; i < f.nb_outputs; ++i) outPtrs.push_back(reinterpret_cast<intptr_t>(f.outputs[i]));
    const intptr_t workspacePtr = reinterpret_cast<intptr_t>(f.workspace);
    const intptr_t cudaStreamPtr = reinterpret_cast<intptr_t>(f.stream);
    try {
        fn(inVector, outVector, inPtrs, outPtrs, workspacePtr, cudaStreamPtr);
    } catch (py::error_already_set& e) {
        if (error.empty()) error = std::string("Exception thrown from enqueue() ") + e.what();
        return -1;
    }
    return 0;
}

// The binding's trampoline for a Python subclass of IPluginV2DynamicExt: pybind11's own lookup.
struct PyIPluginV2DynamicExt : IPluginV2DynamicExt {
    int32_t enqueue(const Frame& f) noexcept override {
        try {
            py::gil_scoped_acquire gil{};
            const std::string name{"enqueue"};  // utils::getOverride takes a std::string
            py::function fn = py::get_override(static_cast<const IPluginV2DynamicExt*>(this),
                                               name.c_str());
            return call_enqueue(fn, f, error);
        } catch (std::exception& e) {
            if (error.empty()) error = e.what();
        }
        return -1;
    }
};

// pybind11's bookkeeping that get_type_override consults, for objects pybind11 did not create.
struct PairHash {
    size_t operator()(const std::pair<const PyObject*, const char*>& k) const {
        return std::hash<const void*>()(k.first) ^ (std::hash<const void*>()(k.second) << 1);
    }
};
std::unordered_map<std::type_index, int> g_types;                 // detail::get_type_info
std::unordered_multimap<const void*, PyObject*> g_instances;      // registered_instances
std::unordered_set<std::pair<const PyObject*, const char*>, PairHash> g_inactive;  // cache

// pybind11's detail::get_type_override, step by step, for a plain Python object registered
// under `this_ptr` (see the header).
py::function lookup_override(const void* this_ptr, const char* name) {
    if (g_types.find(std::type_index(typeid(IPluginV2DynamicExt))) == g_types.end()) {
        return py::function();
    }
    auto range = g_instances.equal_range(this_ptr);
    if (range.first == range.second) return py::function();
    py::handle self = range.first->second;
    py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(self.ptr()));
    auto key = std::make_pair(static_cast<const PyObject*>(type.ptr()), name);
    if (g_inactive.find(key) != g_inactive.end()) return py::function();
    py::function override = py::getattr(self, name, py::function());
    if (override.is_cpp_function()) {
        g_inactive.insert(key);
        return py::function();
    }
    PyFrameObject* frame = PyThreadState_GetFrame(PyThreadState_Get());
    if (frame != nullptr) {
        PyCodeObject* f_code = PyFrame_GetCode(frame);
        bool recursive = false;
        if (std::string(py::str(f_code->co_name)) == name && f_code->co_argcount > 0) {
            py::object locals = py::reinterpret_steal<py::object>(PyFrame_GetLocals(frame));
            py::object names = py::reinterpret_steal<py::object>(PyCode_GetVarnames(f_code));
            if (locals && names) {
                PyObject* caller = PyDict_GetItem(locals.ptr(), PyTuple_GET_ITEM(names.ptr(), 0));
                recursive = caller == self.ptr();
            }
        }
        Py_DECREF(f_code);
        Py_DECREF(frame);
        if (recursive) return py::function();
    }
    return override;
}

// The same trampoline for a plain Python plugin object: the lookup above instead of pybind11's.
struct ObjectTrampoline : IPluginV2DynamicExt {
    int32_t enqueue(const Frame& f) noexcept override {
        try {
            py::gil_scoped_acquire gil{};
            const std::string name{"enqueue"};
            py::function fn = lookup_override(static_cast<const IPluginV2DynamicExt*>(this),
                                              name.c_str());
            return call_enqueue(fn, f, error);
        } catch (std::exception& e) {
            if (error.empty()) error = e.what();
        }
        return -1;
    }
};

PluginTensorDesc make_desc(const std::vector<int64_t>& dims, DataType type, TensorFormat format,
                           float scale) {
    if (dims.size() > static_cast<size_t>(kMaxDims)) {
        throw py::value_error("Dims hold at most 8 entries");
    }
    PluginTensorDesc d;
    d.dims.nbDims = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) d.dims.d[i] = dims[i];
    d.type = type;
    d.format = format;
    d.scale = scale;
    return d;
}

// `calls` enqueues of `plugin`, each as TensorRT makes it, from C++ with the GIL released.
void run(py::object plugin, const std::vector<PluginTensorDesc>& in_desc,
         const std::vector<PluginTensorDesc>& out_desc, const std::vector<intptr_t>& in_ptrs,
         const std::vector<intptr_t>& out_ptrs, intptr_t workspace, intptr_t stream, int64_t calls) {
    if (in_desc.size() != in_ptrs.size() || out_desc.size() != out_ptrs.size()) {
        throw py::value_error("run: one descriptor per pointer, inputs and outputs alike");
    }
    std::vector<const void*> inputs;
    for (intptr_t p : in_ptrs) inputs.push_back(reinterpret_cast<const void*>(p));
    std::vector<void*> outputs;
    for (intptr_t p : out_ptrs) outputs.push_back(reinterpret_cast<void*>(p));
    const Frame f{in_desc.data(), out_desc.data(), inputs.data(), outputs.data(),
                  reinterpret_cast<void*>(workspace), reinterpret_cast<void*>(stream),
                  static_cast<int32_t>(in_desc.size()), static_cast<int32_t>(out_desc.size())};
    IPluginV2DynamicExt* target = nullptr;
    ObjectTrampoline object_trampoline;
    if (py::isinstance<IPluginV2DynamicExt>(plugin)) {
        target = plugin.cast<IPluginV2DynamicExt*>();
        target->error.clear();
    } else {
        target = &object_trampoline;
        g_instances.emplace(static_cast<const IPluginV2DynamicExt*>(target), plugin.ptr());
    }
    int32_t status = 0;
    {
        py::gil_scoped_release release;
        for (int64_t i = 0; i < calls; ++i) {
            status |= target->enqueue(f);
        }
    }
    if (target == &object_trampoline) {
        g_instances.erase(static_cast<const IPluginV2DynamicExt*>(target));
    }
    if (status != 0) {
        throw std::runtime_error("enqueue returned -1 (TensorRT would stop the engine): " +
                                 target->error);
    }
}

// `run_threads` (docs/benchmarks.md item 8, many execution contexts at once): T std::threads, thread
// i making enqueues of plugins[i] through the same trampoline as `run` (GIL taken per call), with
// its own descriptors' pointers and stream. `setup(i)`, when given, runs first on thread i with
// the GIL (benchmarks/threads.py passes cudaSetDevice of thread i's device, as the application
// does before TensorRT's enqueue on that thread); then all threads start together and call until
// `seconds` have passed. Returns {"calls": per-thread counts, "seconds": wall time from the
// common start to the last thread's end}; raises RuntimeError if any enqueue raised.
py::dict run_threads(std::vector<py::object> plugins, const std::vector<PluginTensorDesc>& in_desc,
                     const std::vector<PluginTensorDesc>& out_desc,
                     const std::vector<std::vector<intptr_t>>& in_ptrs,
                     const std::vector<std::vector<intptr_t>>& out_ptrs,
                     const std::vector<intptr_t>& streams, py::object setup, double seconds) {
    const size_t n = plugins.size();
    if (in_ptrs.size() != n || out_ptrs.size() != n || streams.size() != n || n == 0) {
        throw py::value_error("run_threads: one plugin, pointer list pair and stream per thread");
    }
    for (size_t t = 0; t < n; ++t) {
        if (in_ptrs[t].size() != in_desc.size() || out_ptrs[t].size() != out_desc.size()) {
            throw py::value_error("run_threads: one descriptor per pointer, inputs and outputs");
        }
    }
    std::vector<std::vector<const void*>> inputs(n);
    std::vector<std::vector<void*>> outputs(n);
    std::vector<Frame> frames;
    std::vector<std::unique_ptr<ObjectTrampoline>> owned;
    std::vector<IPluginV2DynamicExt*> targets;
    for (size_t t = 0; t < n; ++t) {
        for (intptr_t p : in_ptrs[t]) inputs[t].push_back(reinterpret_cast<const void*>(p));
        for (intptr_t p : out_ptrs[t]) outputs[t].push_back(reinterpret_cast<void*>(p));
        frames.push_back(Frame{in_desc.data(), out_desc.data(), inputs[t].data(),
                               outputs[t].data(), nullptr, reinterpret_cast<void*>(streams[t]),
                               static_cast<int32_t>(in_desc.size()),
                               static_cast<int32_t>(out_desc.size())});
        if (py::isinstance<IPluginV2DynamicExt>(plugins[t])) {
            targets.push_back(plugins[t].cast<IPluginV2DynamicExt*>());
            targets.back()->error.clear();
        } else {
            owned.push_back(std::make_unique<ObjectTrampoline>());
            targets.push_back(owned.back().get());
            g_instances.emplace(static_cast<const IPluginV2DynamicExt*>(targets.back()),
                                plugins[t].ptr());
        }
    }
    std::vector<int64_t> counts(n, 0);
    std::vector<int32_t> status(n, 0);
    std::vector<std::string> setup_error(n);
    std::atomic<size_t> ready{0};
    std::atomic<bool> go{false}, stop{false};
    double elapsed = 0.0;
    {
        py::gil_scoped_release release;
        std::vector<std::thread> threads;
        for (size_t t = 0; t < n; ++t) {
            threads.emplace_back([&, t] {
                // A Python thread state for this thread, kept for the whole run: the thread is
                // then like a Python thread that calls execute_async_v3 (the binding releases
                // the GIL, TensorRT calls enqueue on the same thread, whose state the
                // trampoline's gil_scoped_acquire finds), and like `run`'s calling thread.
                const PyGILState_STATE gstate = PyGILState_Ensure();
                if (!setup.is_none()) {
                    try {
                        setup(t);
                    } catch (py::error_already_set& e) {
                        setup_error[t] = e.what();
                    }
                }
                PyThreadState* saved = PyEval_SaveThread();
                ready.fetch_add(1);
                while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
                int64_t calls = 0;
                int32_t st = 0;
                while (!stop.load(std::memory_order_relaxed)) {
                    st |= targets[t]->enqueue(frames[t]);
                    ++calls;
                }
                counts[t] = calls;
                status[t] = st;
                PyEval_RestoreThread(saved);
                PyGILState_Release(gstate);
            });
        }
        while (ready.load() < n) std::this_thread::yield();
        const auto start = std::chrono::steady_clock::now();
        go.store(true, std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        stop.store(true);
        for (auto& th : threads) th.join();
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (auto& o : owned) g_instances.erase(static_cast<const IPluginV2DynamicExt*>(o.get()));
    for (size_t t = 0; t < n; ++t) {
        if (!setup_error[t].empty()) {
            throw std::runtime_error("setup of thread " + std::to_string(t) + " raised: " +
                                     setup_error[t]);
        }
        if (status[t] != 0) {
            throw std::runtime_error("enqueue on thread " + std::to_string(t) +
                                     " returned -1 (TensorRT would stop the engine): " +
                                     targets[t]->error);
        }
    }
    py::dict out;
    out["calls"] = counts;
    out["seconds"] = elapsed;
    return out;
}

}  // namespace

PYBIND11_MODULE(pp_trt_call, m) {
    m.doc() = "TensorRT's V2 enqueue trampoline, mirrored for benchmarks (benchmarks/cpp/trt_call.cpp)";
    g_types.emplace(std::type_index(typeid(IPluginV2DynamicExt)), 0);

    py::enum_<DataType>(m, "DataType")
        .value("FLOAT", DataType::kFLOAT).value("HALF", DataType::kHALF)
        .value("INT8", DataType::kINT8).value("INT32", DataType::kINT32)
        .value("BOOL", DataType::kBOOL).value("UINT8", DataType::kUINT8)
        .value("FP8", DataType::kFP8).value("BF16", DataType::kBF16)
        .value("INT64", DataType::kINT64).value("INT4", DataType::kINT4)
        .value("FP4", DataType::kFP4).value("E8M0", DataType::kE8M0);
    py::enum_<TensorFormat>(m, "TensorFormat")
        .value("LINEAR", TensorFormat::kLINEAR).value("CHW2", TensorFormat::kCHW2)
        .value("HWC8", TensorFormat::kHWC8).value("CHW4", TensorFormat::kCHW4)
        .value("CHW16", TensorFormat::kCHW16).value("CHW32", TensorFormat::kCHW32)
        .value("DHWC8", TensorFormat::kDHWC8).value("CDHW32", TensorFormat::kCDHW32)
        .value("HWC", TensorFormat::kHWC).value("DLA_LINEAR", TensorFormat::kDLA_LINEAR)
        .value("DLA_HWC4", TensorFormat::kDLA_HWC4).value("HWC16", TensorFormat::kHWC16)
        .value("DHWC", TensorFormat::kDHWC);

    py::class_<Dims64>(m, "Dims")
        .def("__len__", [](const Dims64& d) { return d.nbDims; })
        .def("__getitem__", [](const Dims64& d, int64_t i) {
            if (i < 0) i += d.nbDims;
            if (i < 0 || i >= d.nbDims) throw py::index_error();
            return d.d[i];
        })
        .def("__repr__", [](const Dims64& d) {
            std::string s = "(";
            for (int32_t i = 0; i < d.nbDims; ++i) s += (i ? ", " : "") + std::to_string(d.d[i]);
            return s + (d.nbDims == 1 ? ",)" : ")");
        });

    py::class_<PluginTensorDesc>(m, "PluginTensorDesc")
        .def(py::init<>())
        .def_readwrite("dims", &PluginTensorDesc::dims)
        .def_readwrite("type", &PluginTensorDesc::type)
        .def_readwrite("format", &PluginTensorDesc::format)
        .def_readwrite("scale", &PluginTensorDesc::scale);

    py::class_<IPluginV2DynamicExt, PyIPluginV2DynamicExt>(m, "IPluginV2DynamicExt")
        .def(py::init<>());

    m.def("desc", &make_desc, py::arg("dims"), py::arg("type"), py::arg("format"),
          py::arg("scale"), "A PluginTensorDesc from a shape, DataType, TensorFormat and scale.");
    m.def("run", &run, py::arg("plugin"), py::arg("in_desc"), py::arg("out_desc"),
          py::arg("in_ptrs"), py::arg("out_ptrs"), py::arg("workspace"), py::arg("stream"),
          py::arg("calls"),
          "Make `calls` enqueues of `plugin` as TensorRT's trampoline does, from C++ with the GIL "
          "released between them; raise RuntimeError if any enqueue raised.");
    m.def("run_threads", &run_threads, py::arg("plugins"), py::arg("in_desc"),
          py::arg("out_desc"), py::arg("in_ptrs"), py::arg("out_ptrs"), py::arg("streams"),
          py::arg("setup"), py::arg("seconds"),
          "From one std::thread per plugin, make enqueues as TensorRT's trampoline does for "
          "`seconds` (after setup(i) on thread i); {'calls': per-thread counts, 'seconds': wall "
          "time}; raise RuntimeError if any enqueue or setup raised.");
}
