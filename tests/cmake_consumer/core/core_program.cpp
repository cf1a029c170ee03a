// A C++ program with no Python using npybridge's core: quantize, pack low-bit codes, build a tensor. Exits 0
// when every result is the expected one, and fails to compile if a core header reached for Python or NumPy.
#include <npybridge/core.hpp>

#if defined(Py_PYTHON_H) || defined(NPY_NDARRAYOBJECT_H) || defined(NUMPY_CORE_INCLUDE_NUMPY_NDARRAYOBJECT_H_)
#error "npybridge/core.hpp pulled in Python or NumPy"
#endif

#include <cstdint>
#include <cstdio>

namespace npb = npybridge;

int main() {
    const npb::dtype q = npb::dtype::quantized(npb::dtype_enum::Quantized8Asymm, 0.5, 128);
    const bool quantized = npb::quantize(q, 1.0f) == 130;
    const std::size_t shape[] = {2, 3};
    const npb::tensor t = npb::tensor::empty(npb::dtype(npb::dtype_enum::Float32), shape, 2);
    const bool shaped = t.count() == 6 && t.layout().shape[1] == 3;
    std::printf("npybridge %s core: quantize %s, tensor %s\n", NPYBRIDGE_VERSION, quantized ? "ok" : "WRONG",
                shaped ? "ok" : "WRONG");
    return quantized && shaped ? 0 : 1;
}
