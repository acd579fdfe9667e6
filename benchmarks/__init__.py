"""pyplugins' benchmark harness: every figure a ratio measured side by side in one run.

Run ``python -m benchmarks`` on a GPU machine (``--help`` lists the options), and
``python -m benchmarks report`` to regenerate ``benchmarks/README.md`` from the latest results.
Importing this package loads neither CuPy nor torch.
"""
