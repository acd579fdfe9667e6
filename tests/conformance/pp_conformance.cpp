// A small pybind11 module bound with the same patterns as TensorRT's Python bindings (our own
// code, written for the conformance tests): a py::enum_ with values, a struct whose enum field is
// a def_readwrite property, a Dims class whose __eq__ is overloaded for list and tuple only, a
// plugin base with C++-backed identity properties and a trampoline using get_override, and a
// field collection with only __len__ and __getitem__. tests/conformance/test_pybind_conformance.py
// checks case by case that pyplugins' emulator behaves as this module does.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

enum class DataType : int32_t { kFLOAT = 0, kHALF = 1, kINT8 = 2 };

struct PluginTensorDesc {
    DataType type{DataType::kFLOAT};
    float scale{0.F};
};

struct Dims {
    int32_t nbDims{0};
    int64_t d[8]{};
};

template <typename T>
bool dimsEqual(Dims const& self, T const& other) {
    if (static_cast<int64_t>(other.size()) != self.nbDims) return false;
    for (int32_t i = 0; i < self.nbDims; ++i) {
        if (other[i].template cast<int64_t>() != self.d[i]) return false;
    }
    return true;
}

struct Field {
    std::string name;
};

struct FieldCollection {
    int32_t nbFields{0};
    Field const* fields{nullptr};
};

class Plugin {
public:
    virtual ~Plugin() = default;
    virtual bool supportsFormatCombination(int32_t pos, std::vector<PluginTensorDesc> const& inOut) = 0;
    virtual std::string serialize() = 0;
    int32_t mNbOutputs{-1};
    std::string mType;
};

// The trampoline: look the Python override up, call it, turn any Python error into what().
class PyPlugin : public Plugin {
public:
    bool supportsFormatCombination(int32_t pos, std::vector<PluginTensorDesc> const& inOut) override {
        py::gil_scoped_acquire gil{};
        py::function fn = py::get_override(static_cast<Plugin const*>(this), "supports_format_combination");
        if (!fn) throw std::runtime_error("no implementation provided for supports_format_combination()");
        return fn(pos, inOut).cast<bool>();
    }
    std::string serialize() override {
        py::gil_scoped_acquire gil{};
        py::function fn = py::get_override(static_cast<Plugin const*>(this), "serialize");
        if (!fn) throw std::runtime_error("no implementation provided for serialize()");
        return fn().cast<std::string>();
    }
};

// What the C++ side saw: the result, or the what() of the error the trampoline caught.
py::tuple callSupports(Plugin& self, int32_t pos, std::vector<PluginTensorDesc> const& inOut) {
    try {
        return py::make_tuple(self.supportsFormatCombination(pos, inOut), py::none());
    } catch (std::exception const& e) {
        return py::make_tuple(false, std::string(e.what()));
    }
}

py::tuple callSerialize(Plugin& self) {
    try {
        return py::make_tuple(py::bytes(self.serialize()), py::none());
    } catch (std::exception const& e) {
        return py::make_tuple(py::none(), std::string(e.what()));
    }
}

static std::vector<Field> gFields{{"pads"}, {"mode"}};

PYBIND11_MODULE(pp_conformance, m) {
    py::enum_<DataType>(m, "DataType", py::module_local())
        .value("FLOAT", DataType::kFLOAT)
        .value("HALF", DataType::kHALF)
        .value("INT8", DataType::kINT8);

    py::class_<PluginTensorDesc>(m, "PluginTensorDesc", py::module_local())
        .def(py::init<>())
        .def_readwrite("type", &PluginTensorDesc::type)
        .def_readwrite("scale", &PluginTensorDesc::scale);

    py::class_<Dims>(m, "Dims", py::module_local())
        .def(py::init([](std::vector<int64_t> const& in) {
            auto* self = new Dims{};
            self->nbDims = static_cast<int32_t>(in.size());
            for (size_t i = 0; i < in.size(); ++i) self->d[i] = in[i];
            return self;
        }))
        .def("__len__", [](Dims const& self) { return self.nbDims; })
        .def("__getitem__", [](Dims const& self, int32_t i) {
            int32_t const index = i < 0 ? self.nbDims + i : i;
            if (index < 0 || index >= self.nbDims) throw py::index_error("Out of bounds");
            return self.d[index];
        })
        .def("__eq__", dimsEqual<py::list>)
        .def("__eq__", dimsEqual<py::tuple>);

    py::class_<Field>(m, "PluginField", py::module_local())
        .def_readwrite("name", &Field::name);

    py::class_<FieldCollection>(m, "PluginFieldCollection_", py::module_local())
        .def("__len__", [](FieldCollection& self) { return self.nbFields; })
        .def("__getitem__", [](FieldCollection& self, int32_t const index) {
            if (!(index < self.nbFields)) throw py::index_error("Out of bounds");
            if (index < 0) throw std::runtime_error("would read out of bounds (TensorRT does)");
            return self.fields[index];
        });
    m.def("field_collection", []() {
        return FieldCollection{static_cast<int32_t>(gFields.size()), gFields.data()};
    });

    py::class_<Plugin, PyPlugin>(m, "IPluginV2DynamicExt", py::module_local())
        .def(py::init<>())
        .def_property("num_outputs", [](Plugin& self) { return self.mNbOutputs; },
                      [](Plugin& self, int32_t n) { self.mNbOutputs = n; })
        .def_property("plugin_type", [](Plugin& self) { return self.mType; },
                      [](Plugin& self, std::string const& t) { self.mType = t; });
    m.def("call_supports", &callSupports);
    m.def("call_serialize", &callSerialize);
    m.def("echo_type", [](DataType t) { return t; });
}
