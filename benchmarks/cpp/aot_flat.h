// aot_flat.h -- a stored pyplugins AOT artifact as a C++ launcher reads it: the flat export that
// benchmarks/aot_export.py writes from pyplugins.checker.aot_artifact.AOTArtifact, parsed once
// (as TensorRT deserializes an engine) into expression node arrays, which aot_program.h compiles
// into the program a launcher runs per launch. Host code only: no CUDA header, so a plain g++
// build checks it on a machine without a GPU (benchmarks/cpp/aot_plan.cpp;
// tests/test_aot_cpp.py).
//
// The flat export (text lines, tokens separated by single spaces, then the raw kernel image):
//     PPAOTFLAT 1
//     plugin <namespace::name>
//     kernel <lowered entry name>
//     inputs <n> <DataType name>...
//     outputs <n> <DataType name>...
//     grid_x <expr>        (the seven launch fields, in KernelLaunchParams order, each present;
//     ...                   an unset one is written as its default constant)
//     shared_mem <expr>
//     extra <k>
//     arg <dtype> <expr>   (k lines, in launch order)
//     output <ndims> <expr>...   (n lines)
//     image <ptx|cubin> <byte count>
//     <that many raw bytes>
// An <expr> is prefix notation: "c V" (a constant), "i I D" (dimension D of input I),
// "s K OPT UPPER" (output K's size tensor: OPT and UPPER are expressions; a launcher has no
// size-tensor value, so UPPER is used, as pyplugins.checker.aot_artifact.evaluate does without
// one), or "OP A B" with OP one of SUM PROD MAX MIN SUB EQUAL LESS FLOOR_DIV CEIL_DIV
// (TensorRT's DimensionOperation names; FLOOR_DIV and CEIL_DIV round as Python's // does).
#pragma once

#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppaot {

constexpr int kMaxDims = 8;
constexpr int kMaxInputs = 16;

// One input's shape, laid out as TensorRT's Dims64.
struct Dims {
    int32_t nbDims{0};
    int64_t d[kMaxDims]{};
};

enum Kind : int32_t {
    kConst, kInput, kSum, kProd, kMax, kMin, kSub, kEqual, kLess, kFloorDiv, kCeilDiv
};

// A node of an expression: a constant, an input's dimension, or an operation on two nodes.
struct Node {
    Kind kind;
    int64_t value;  // kConst: the value; kInput: the input index
    int32_t a, b;   // kInput: a is the dimension; operations: the operands' node indices
};

// One expression, compiled to a node array (the root is the last node).
struct Expr {
    std::vector<Node> nodes;
};

struct Arg {
    std::string dtype;
    Expr expr;
};

// The artifact: what an engine keeps of one AOT kernel.
struct Artifact {
    std::string plugin, kernel, image_kind;
    std::vector<std::string> input_types, output_types;
    Expr launch[7];  // grid_x grid_y grid_z block_x block_y block_z shared_mem
    std::vector<Arg> extra;
    std::vector<std::vector<Expr>> outputs;
    std::string image;
};

inline const char* const kLaunchFields[7] = {"grid_x",  "grid_y",  "grid_z",    "block_x",
                                             "block_y", "block_z", "shared_mem"};

class Error : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

namespace detail {

inline Kind op_kind(const std::string& t) {
    static const char* const names[] = {"SUM",   "PROD", "MAX",       "MIN",     "SUB",
                                        "EQUAL", "LESS", "FLOOR_DIV", "CEIL_DIV"};
    for (int i = 0; i < 9; ++i) {
        if (t == names[i]) return static_cast<Kind>(kSum + i);
    }
    throw Error("unknown expression token '" + t + "'");
}

inline int64_t integer(std::istringstream& in, const char* what) {
    std::string t;
    if (!(in >> t)) throw Error(std::string("expression ends where ") + what + " was expected");
    size_t used = 0;
    int64_t v = 0;
    try {
        v = std::stoll(t, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != t.size()) throw Error(std::string("'") + t + "' is not an integer (" + what + ")");
    return v;
}

// Reads one prefix expression from `in` into `e`; returns its node index.
inline int32_t parse_node(std::istringstream& in, Expr& e) {
    std::string t;
    if (!(in >> t)) throw Error("an expression ends early");
    Node n{kConst, 0, -1, -1};
    if (t == "c") {
        n.value = integer(in, "a constant");
    } else if (t == "i") {
        n.kind = kInput;
        n.value = integer(in, "an input index");
        n.a = static_cast<int32_t>(integer(in, "a dimension index"));
    } else if (t == "s") {
        integer(in, "a size-tensor output index");
        Expr opt;
        parse_node(in, opt);  // the build's estimate: not used at run time
        return parse_node(in, e);
    } else {
        n.kind = op_kind(t);
        n.a = parse_node(in, e);
        n.b = parse_node(in, e);
    }
    e.nodes.push_back(n);
    return static_cast<int32_t>(e.nodes.size()) - 1;
}

inline Expr parse_expr(std::istringstream& in) {
    Expr e;
    parse_node(in, e);
    return e;
}

inline std::vector<std::string> names(std::istringstream& in, size_t n) {
    std::vector<std::string> out(n);
    for (auto& s : out) {
        if (!(in >> s)) throw Error("a type name is missing");
    }
    return out;
}

}  // namespace detail

// Parses the flat export; throws Error naming what is wrong.
inline Artifact parse(const std::string& data) {
    Artifact art;
    size_t pos = 0;
    auto line = [&]() -> std::string {
        const size_t end = data.find('\n', pos);
        if (end == std::string::npos) throw Error("the artifact ends before its kernel image");
        std::string l = data.substr(pos, end - pos);
        pos = end + 1;
        return l;
    };
    auto expect = [](std::istringstream& in, const char* key) {
        std::string k;
        if (!(in >> k) || k != key) {
            throw Error(std::string("expected '") + key + "', found '" + k + "'");
        }
    };
    {
        std::istringstream in(line());
        expect(in, "PPAOTFLAT");
        if (detail::integer(in, "the format version") != 1) {
            throw Error("the flat export has another format version (this reader knows 1)");
        }
    }
    {
        std::istringstream in(line());
        expect(in, "plugin");
        in >> art.plugin;
    }
    {
        std::istringstream in(line());
        expect(in, "kernel");
        in >> art.kernel;
    }
    for (const char* key : {"inputs", "outputs"}) {
        std::istringstream in(line());
        expect(in, key);
        const int64_t n = detail::integer(in, "a tensor count");
        if (n < 0 || n > kMaxInputs) throw Error(std::string("bad ") + key + " count");
        (key[0] == 'i' ? art.input_types : art.output_types) = detail::names(in, n);
    }
    for (int f = 0; f < 7; ++f) {
        std::istringstream in(line());
        expect(in, kLaunchFields[f]);
        art.launch[f] = detail::parse_expr(in);
    }
    std::istringstream extra(line());
    expect(extra, "extra");
    const int64_t k = detail::integer(extra, "the extra argument count");
    for (int64_t i = 0; i < k; ++i) {
        std::istringstream in(line());
        expect(in, "arg");
        Arg a;
        in >> a.dtype;
        a.expr = detail::parse_expr(in);
        art.extra.push_back(a);
    }
    for (size_t j = 0; j < art.output_types.size(); ++j) {
        std::istringstream in(line());
        expect(in, "output");
        const int64_t nd = detail::integer(in, "an output rank");
        std::vector<Expr> dims;
        for (int64_t d = 0; d < nd; ++d) dims.push_back(detail::parse_expr(in));
        art.outputs.push_back(dims);
    }
    std::istringstream in(line());
    expect(in, "image");
    in >> art.image_kind;
    const int64_t size = detail::integer(in, "the image size");
    if (art.image_kind != "ptx" && art.image_kind != "cubin") {
        throw Error("the image kind must be ptx or cubin (got " + art.image_kind + ")");
    }
    if (size < 0 || static_cast<size_t>(size) != data.size() - pos) {
        throw Error("the kernel image is truncated or followed by extra bytes");
    }
    art.image = data.substr(pos);
    return art;
}

// Bytes per element of a DataType name (0 for sub-byte or unknown types).
inline size_t itemsize(const std::string& type) {
    if (type == "FLOAT" || type == "INT32") return 4;
    if (type == "HALF" || type == "BF16") return 2;
    if (type == "INT8" || type == "UINT8" || type == "BOOL" || type == "FP8") return 1;
    if (type == "INT64") return 8;
    return 0;
}

}  // namespace ppaot
