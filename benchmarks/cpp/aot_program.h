// aot_program.h -- an AOT artifact's expressions compiled once, at load, into a flat program that
// a launcher runs at every launch (as TensorRT must evaluate them per enqueue: shapes may change
// between runs). Host code only, like aot_flat.h (tests/test_aot_cpp.py builds it with g++).
//
// Compiling (Program::compile, once per artifact):
//   - every node becomes at most one instruction "r[dst] = r[a] OP r[b]" over an int64 register
//     file, in dependency order (no recursion, no stack);
//   - an input dimension is one load "r[dst] = shapes[input].d[dim]"; a constant is a register
//     filled at compile time and never written again;
//   - operations on constants are folded (a division by a constant zero is not: it stays an
//     instruction, so it fails at run time as pyplugins.checker.aot_artifact.evaluate does);
//     SUM/SUB with 0, PROD with 1, MAX/MIN of one register with itself and FLOOR_DIV/CEIL_DIV
//     by 1 become their operand;
//   - identical subexpressions, within one expression and across all of them, are computed once
//     (commutative operands ordered first);
//   - per input, the rank the loads need is kept, so one check per input replaces a bounds check
//     per load.
// Running (Program::run): the rank checks, then the instructions in order into a register file
// the caller allocated once (Program::registers); no allocation, no map lookup, no exception on
// the way. A root's value is registers[root(i)]. Whether a root is constant (is_constant) lets a
// launcher pack such a slot once and rewrite only the others.
// [infer: how TensorRT stores and evaluates its expressions is not public (docs/trt-protocol.md
// §8.4); this is one cheap way to do what it must do.]
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aot_flat.h"

namespace ppaot {

// What Program::run found: kOk, a missing input dimension, or a division by zero.
enum Status : int32_t { kOk = 0, kMissingDim = 1, kDivByZero = 2 };

// FLOOR_DIV as Python's //; b must not be 0.
inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

// Divisions by a constant power of two 2^b, as arithmetic shifts (floor and ceiling rounding
// as Python's: a >> b rounds towards minus infinity for negative a too).
constexpr int32_t kFloorShift = kCeilDiv + 1, kCeilShift = kCeilDiv + 2;

class Program {
   public:
    // One instruction: r[dst] = r[a] OP r[b]; for kInput, r[dst] = shapes[a].d[b]; for the
    // shifts, r[dst] = r[a] shifted by b.
    struct Instr {
        int32_t op;
        int32_t dst, a, b;
    };

    // Compiles `roots` (each an expression parsed by aot_flat.h) into one program.
    static Program compile(const std::vector<const Expr*>& roots) {
        Program p;
        for (const Expr* e : roots) {
            std::vector<int32_t> reg(e->nodes.size(), -1);
            for (size_t at = 0; at < e->nodes.size(); ++at) reg[at] = p.node(e->nodes[at], reg);
            p.roots_.push_back(reg.empty() ? p.constant(0) : reg.back());
        }
        p.consts_.clear();
        p.seen_.clear();
        return p;
    }

    // A register file for run(): the constants in place, the rest zero. Allocate once.
    std::vector<int64_t> registers() const { return init_; }

    // Evaluates every root for the input shapes `in` (nb_inputs of them) into `r`.
    Status run(const Dims* in, int32_t nb_inputs, int64_t* r) const {
        for (const auto& need : rank_) {
            if (need.first >= nb_inputs || in[need.first].nbDims < need.second) {
                return kMissingDim;
            }
        }
        for (const Instr& x : code_) {
            switch (x.op) {
                case kInput: r[x.dst] = in[x.a].d[x.b]; break;
                case kSum: r[x.dst] = r[x.a] + r[x.b]; break;
                case kProd: r[x.dst] = r[x.a] * r[x.b]; break;
                case kMax: r[x.dst] = r[x.a] > r[x.b] ? r[x.a] : r[x.b]; break;
                case kMin: r[x.dst] = r[x.a] < r[x.b] ? r[x.a] : r[x.b]; break;
                case kSub: r[x.dst] = r[x.a] - r[x.b]; break;
                case kEqual: r[x.dst] = r[x.a] == r[x.b]; break;
                case kLess: r[x.dst] = r[x.a] < r[x.b]; break;
                case kFloorShift: r[x.dst] = r[x.a] >> x.b; break;
                case kCeilShift: r[x.dst] = -((-r[x.a]) >> x.b); break;
                case kFloorDiv:
                    if (r[x.b] == 0) return kDivByZero;
                    r[x.dst] = floor_div(r[x.a], r[x.b]);
                    break;
                case kCeilDiv:
                    if (r[x.b] == 0) return kDivByZero;
                    r[x.dst] = -floor_div(-r[x.a], r[x.b]);
                    break;
                default: return kDivByZero;  // not reached: compile() emits no other kind
            }
        }
        return kOk;
    }

    // The message for a status other than kOk, naming what the shapes lack.
    std::string why(Status s, const Dims* in, int32_t nb_inputs) const {
        if (s == kDivByZero) return "an expression divides by zero";
        for (const auto& need : rank_) {
            if (need.first >= nb_inputs || in[need.first].nbDims < need.second) {
                return "an expression reads dimension " + std::to_string(need.second - 1) +
                       " of input " + std::to_string(need.first) + ", which the shapes lack";
            }
        }
        return "no error";
    }

    int32_t root(size_t i) const { return roots_[i]; }
    size_t size() const { return roots_.size(); }
    // Whether root i is the same for every shape (a launcher packs such a slot once).
    bool is_constant(size_t i) const { return is_const_[roots_[i]]; }
    // How many instructions run per evaluation (after folding and sharing).
    size_t instructions() const { return code_.size(); }

   private:
    std::vector<int64_t> init_;        // the register file's initial contents
    std::vector<bool> is_const_;       // per register: filled at compile time
    std::vector<Instr> code_;
    std::vector<int32_t> roots_;
    std::vector<std::pair<int32_t, int32_t>> rank_;  // (input, rank its loads need)
    std::map<int64_t, int32_t> consts_;              // compile time only
    std::map<std::tuple<int32_t, int32_t, int32_t>, int32_t> seen_;

    int32_t fresh(int64_t value, bool constant) {
        init_.push_back(value);
        is_const_.push_back(constant);
        return static_cast<int32_t>(init_.size()) - 1;
    }

    int32_t constant(int64_t v) {
        auto it = consts_.find(v);
        if (it != consts_.end()) return it->second;
        const int32_t r = fresh(v, true);
        consts_.emplace(v, r);
        return r;
    }

    bool known(int32_t r, int64_t v) const { return is_const_[r] && init_[r] == v; }

    int32_t emit(int32_t op, int32_t a, int32_t b) {
        const auto key = std::make_tuple(op, a, b);
        auto it = seen_.find(key);
        if (it != seen_.end()) return it->second;
        const int32_t dst = fresh(0, false);
        code_.push_back(Instr{op, dst, a, b});
        seen_.emplace(key, dst);
        return dst;
    }

    static int64_t fold(Kind op, int64_t a, int64_t b) {
        switch (op) {
            case kSum: return a + b;
            case kProd: return a * b;
            case kMax: return a > b ? a : b;
            case kMin: return a < b ? a : b;
            case kSub: return a - b;
            case kEqual: return a == b;
            case kLess: return a < b;
            case kFloorDiv: return floor_div(a, b);
            default: return -floor_div(-a, b);  // kCeilDiv
        }
    }

    int32_t node(const Node& n, const std::vector<int32_t>& reg) {
        if (n.kind == kConst) return constant(n.value);
        if (n.kind == kInput) {
            const int32_t input = static_cast<int32_t>(n.value), rank = n.a + 1;
            if (input < 0 || n.a < 0 || input >= kMaxInputs || n.a >= kMaxDims) {
                throw Error("an expression reads dimension " + std::to_string(n.a) +
                            " of input " + std::to_string(n.value) + ", which no shape has");
            }
            bool found = false;
            for (auto& need : rank_) {
                if (need.first == input) {
                    need.second = need.second > rank ? need.second : rank;
                    found = true;
                }
            }
            if (!found) rank_.emplace_back(input, rank);
            return emit(kInput, input, n.a);
        }
        if (n.a < 0 || n.b < 0 || reg[n.a] < 0 || reg[n.b] < 0) {
            throw Error("corrupt expression node");
        }
        int32_t a = reg[n.a], b = reg[n.b];
        const bool ca = is_const_[a], cb = is_const_[b];
        const bool div = n.kind == kFloorDiv || n.kind == kCeilDiv;
        if (ca && cb && !(div && init_[b] == 0)) return constant(fold(n.kind, init_[a], init_[b]));
        switch (n.kind) {
            case kSum:
            case kProd:
            case kMax:
            case kMin:
            case kEqual:
                if (a > b) std::swap(a, b);  // commutative: one order for sharing
                break;
            default: break;
        }
        if ((n.kind == kSum && known(a, 0)) || (n.kind == kProd && known(a, 1))) return b;
        if ((n.kind == kSum || n.kind == kSub) && known(b, 0)) return a;
        if (n.kind == kProd && known(b, 1)) return a;
        if (div && known(b, 1)) return a;
        if (div && cb && init_[b] > 0 && (init_[b] & (init_[b] - 1)) == 0) {
            int32_t shift = 0;
            while ((int64_t{1} << shift) < init_[b]) ++shift;
            return emit(n.kind == kFloorDiv ? kFloorShift : kCeilShift, a, shift);
        }
        if ((n.kind == kMax || n.kind == kMin) && a == b) return a;
        return emit(n.kind, a, b);
    }
};

}  // namespace ppaot
