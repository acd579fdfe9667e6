// aot_plan.cpp -- host-only check of aot_flat.h: reads a flat AOT export, then evaluates its launch
// for each line of input shapes on stdin, as the C++ launcher does at every launch.
//
// Build and run (tests/test_aot_cpp.py does; no GPU, no CUDA header):
//     g++ -O2 -std=c++17 -I benchmarks/cpp benchmarks/cpp/aot_plan.cpp -o aot_plan
//     echo "1 2 7 100" | aot_plan artifact.flat
// Each stdin line: the input count, then per input its rank and dimensions. Each output line:
//     grid X Y Z block X Y Z shared S extra V... outputs R D... R D...
// or "error MESSAGE" when an expression cannot be evaluated. Exit status 2 when the export does
// not parse (the message on stderr).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "aot_flat.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s ARTIFACT.flat < shapes\n", argv[0]);
        return 2;
    }
    std::ifstream file(argv[1], std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    ppaot::Artifact art;
    try {
        art = ppaot::parse(data);
    } catch (const ppaot::Error& e) {
        std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
        return 2;
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
        std::ostringstream out;
        try {
            for (int f = 0; f < 7; ++f) {
                out << (f == 0 ? "grid" : f == 3 ? " block" : f == 6 ? " shared" : "") << " "
                    << ppaot::eval(art.launch[f], dims, n);
            }
            out << " extra";
            for (const auto& a : art.extra) out << " " << ppaot::eval(a.expr, dims, n);
            out << " outputs";
            for (const auto& o : art.outputs) {
                out << " " << o.size();
                for (const auto& e : o) out << " " << ppaot::eval(e, dims, n);
            }
            std::cout << out.str() << "\n";
        } catch (const ppaot::Error& e) {
            std::cout << "error " << e.what() << "\n";
        }
    }
    return 0;
}
