"""The benchmarks: one module each, run from the project root as `python -m bench.NAME`.

`python -m bench` lists them; `python -m bench --quick` runs the quick ones on small inputs and
prints one line each. What each measures, its inputs and where its results are logged:
bench/README.md. Shared code: bench/common.py.
"""
