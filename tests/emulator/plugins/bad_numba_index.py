"""Two deliberately wrong numba LeakyReLU kernels (test fixture): off by one, each way.

``LReLU_TRT:1:numba_skip`` writes ``y[i + 1]`` from ``x[i + 1]`` for ``i + 1 < n``, so element 0
is never written. ``LReLU_TRT:1:numba_past`` loops ``i <= n``: one element past both tensors.
"""

from pyplugins.runtime.creator import register
from pyplugins.runtime.numba_launch import NumbaKernel
from pyplugins.ops.leaky_relu import LeakyReLUNumba


def skips_first(x, y, n, neg_slope):
    i = cuda.grid(1) + 1  # noqa: F821 - bound by NumbaKernel
    if i < n:
        v = x[i]
        y[i] = v if v >= 0 else v * neg_slope


def one_past(x, y, n, neg_slope):
    i = cuda.grid(1)  # noqa: F821 - bound by NumbaKernel
    if i <= n:
        v = x[i]
        y[i] = v if v >= 0 else v * neg_slope


@register(replace=True)  # imported under more than one module name by the tests
class SkipsFirst(LeakyReLUNumba):
    namespace = "numba_skip"
    numba_kernel = NumbaKernel(skips_first)


@register(replace=True)  # imported under more than one module name by the tests
class OnePast(LeakyReLUNumba):
    namespace = "numba_past"
    numba_kernel = NumbaKernel(one_past)
