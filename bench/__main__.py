"""The benchmarks at a glance, and the quick ones in one go (`make bench`).

    python -m bench                  # each benchmark and what it measures
    python -m bench --quick [NAME ...]   # the quick set (or NAMEs of it), one line each

`--quick` runs each quick-capable benchmark as `python -m bench.NAME --quick` in a child process
(its own JVM where it uses Spark), on inputs every machine has (the sample logs in the `darshan`
wheel, the shipped benchmark table, a synthetic log) and on ../shared/data where it needs it:
absent, that benchmark is skipped with a message. It prints each one's seconds and result line
(`bench.common.result`), and exits 1 when one fails. These are smoke runs of the harness with
small inputs, not figures to log.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time

from bench.common import ROOT, parser, shared

# name -> the part of ../shared/data its quick run needs (None: nothing)
QUICK = {
    "decoder": None,
    "make_corpus": None,
    "huge_dxt": None,
    "models_eval": None,
    "advice_eval": None,
    "watch_eval": "tokio-abc",
    "ingest_baseline": None,
    "transform_ab": None,
    "fleet_page": None,
}


def benchmarks() -> dict[str, str]:
    """name -> the first line of its module docstring, for every benchmark module."""
    out = {}
    for path in sorted((ROOT / "bench").glob("*.py")):
        if path.stem.startswith("_") or path.stem == "common":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        out[path.stem] = doc.split("\n\n")[0].replace("\n", " ")
    return out


def run_quick(name: str) -> tuple[bool, str]:
    """(passed, its line) of `python -m bench.NAME --quick`."""
    need = QUICK[name]
    if need and not shared(need).exists():
        return True, f"skipped: needs {shared(need)} (the shared data folder), absent here"
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", "--quick"], cwd=ROOT, capture_output=True, text=True
    )
    secs = time.monotonic() - t0
    lines = p.stdout.splitlines()
    found = [line.split(": ", 1)[-1] for line in lines if line.startswith(f"[result] {name}: ")]
    if p.returncode != 0 or not found:
        tail = (p.stderr.strip().splitlines() or lines or ["no output"])[-1]
        return False, f"FAILED (exit {p.returncode}, {secs:.0f} s): {tail[:200]}"
    return True, f"{secs:5.0f} s  {found[-1]}"


def main(argv=None) -> int:
    ap = parser("bench", __doc__)
    ap.add_argument("--quick", nargs="*", metavar="NAME", help="run the quick set (or these of it)")
    args = ap.parse_args(argv)
    if args.quick is None:
        for name, what in benchmarks().items():
            print(f"{name:<18} {'quick ' if name in QUICK else '      '} {what}")
        print("\nrun one: python -m bench.NAME --help; the quick set: python -m bench --quick")
        return 0
    names = args.quick or list(QUICK)
    unknown = [n for n in names if n not in QUICK]
    if unknown:
        ap.error(f"not in the quick set: {', '.join(unknown)} (it holds {', '.join(QUICK)})")
    failed = 0
    t0 = time.monotonic()
    for name in names:
        ok, line = run_quick(name)
        failed += not ok
        print(f"{name:<16} {line}", flush=True)
    print(f"{len(names) - failed} of {len(names)} passed in {time.monotonic() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
