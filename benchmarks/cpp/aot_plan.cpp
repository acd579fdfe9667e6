// aot_plan.cpp -- host-only check of aot_flat.h and aot_program.h: reads a flat AOT export,
// compiles its expressions once (launch fields, extra arguments and output shapes in one
// program), then evaluates them for each line of input shapes on stdin, as the C++ launcher does
// at every launch.
//
// Build and run (tests/test_aot_cpp.py does; no GPU, no CUDA header):
//     g++ -O2 -std=c++17 -I benchmarks/cpp benchmarks/cpp/aot_plan.cpp -o aot_plan
//     echo "1 2 7 100" | aot_plan artifact.flat
//     aot_plan --count artifact.flat     (prints "instructions N": what runs per launch)
// Each stdin line: the input count, then per input its rank and dimensions. Each output line:
//     grid X Y Z block X Y Z shared S extra V... outputs R D... R D...
// or "error MESSAGE" when an expression cannot be evaluated. Exit status 2 when the export does
// not parse (the message on stderr).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "aot_flat.h"
#include "aot_program.h"

int main(int argc, char** argv) {
    const bool count = argc == 3 && std::string(argv[1]) == "--count";
    if (argc != 2 && !count) {
        std::fprintf(stderr, "usage: %s [--count] ARTIFACT.flat < shapes\n", argv[0]);
        return 2;
    }
    const char* path = argv[argc - 1];
    std::ifstream file(path, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    ppaot::Artifact art;
    ppaot::Program prog;
    try {
        art = ppaot::parse(data);
        std::vector<const ppaot::Expr*> roots;
        for (const auto& e : art.launch) roots.push_back(&e);
        for (const auto& a : art.extra) roots.push_back(&a.expr);
        for (const auto& o : art.outputs) {
            for (const auto& e : o) roots.push_back(&e);
        }
        prog = ppaot::Program::compile(roots);
    } catch (const ppaot::Error& e) {
        std::fprintf(stderr, "%s: %s\n", path, e.what());
        return 2;
    }
    if (count) {
        std::printf("instructions %zu\n", prog.instructions());
        return 0;
    }
    std::string text;
    while (std::getline(std::cin, text)) {
        std::istringstream in(text);
        int n = 0;
        if (!(in >> n) || n < 0 || n > ppaot::kMaxInputs) continue;
        ppaot::Dims dims[ppaot::kMaxInputs];
        for (int i = 0; i < n; ++i) {
            in >> dims[i].nbDims;
            for (int d = 0; d < dims[i].nbDims && d < ppaot::kMaxDims; ++d) in >> dims[i].d[d];
        }
        std::vector<int64_t> r = prog.registers();
        const ppaot::Status status = prog.run(dims, n, r.data());
        if (status != ppaot::kOk) {
            std::cout << "error " << prog.why(status, dims, n) << "\n";
            continue;
        }
        std::ostringstream out;
        size_t at = 0;
        for (int f = 0; f < 7; ++f) {
            out << (f == 0 ? "grid" : f == 3 ? " block" : f == 6 ? " shared" : "") << " "
                << r[prog.root(at++)];
        }
        out << " extra";
        for (size_t i = 0; i < art.extra.size(); ++i) out << " " << r[prog.root(at++)];
        out << " outputs";
        for (const auto& o : art.outputs) {
            out << " " << o.size();
            for (size_t d = 0; d < o.size(); ++d) out << " " << r[prog.root(at++)];
        }
        std::cout << out.str() << "\n";
    }
    return 0;
}
