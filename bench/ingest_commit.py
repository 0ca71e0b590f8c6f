"""Ingest's commit, two ways in one run: the staged files added as they are, or written again by a MERGE.

    .venv/bin/python bench/ingest_commit.py CORPUS [--rounds 2] [--keep DIR]

CORPUS is a folder of Darshan logs (`bench/make_corpus.py`). Each round ingests all of it into a
fresh lake twice, `ingest.commit: files` (the default: the decode tasks' Parquet files become
the tables' files, `iolake/lake/files.py`) and `ingest.commit: merge` (an insert-only MERGE writes
the rows again), in alternating order (files first in odd rounds), each `python -m jobs.ingest`
in its own JVM. Per table it reads the `[commit] TABLE: gate G s, VERB S s` lines; it prints the
best round of each way: the decode, each large table's commit, the whole ingest and logs/s, with
the ratio files / merge. Both ways must report the same rows per table, or it stops.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMIT = re.compile(r"^\[commit\] (\w+): gate ([0-9.]+) s, .* ([0-9.]+) s$")
DECODE = re.compile(r"^\[decode\] \d+/\d+ logs in ([0-9.]+) s")
ROWS = re.compile(r"^  (\w+)\s+([0-9,]+) rows$")
SHOWN = ("io_ops", "posix", "files", "jobs", "logs")


def conf_dir(scratch: Path, key: str, value: str) -> Path:
    """A copy of conf/ whose base.yaml sets `ingest.KEY: VALUE` (KEY may list several, "a,b")."""
    out = scratch / f"conf-{key.replace(',', '-')}-{value}"
    shutil.copytree(ROOT / "conf", out)
    base = out / "base.yaml"
    text = base.read_text()
    for k in key.split(","):
        text, n = re.subn(rf"(?m)^  {k}: \w+", f"  {k}: {value}", text)
        if n != 1:
            raise SystemExit(f"conf/base.yaml has no `ingest.{k}` line to set")
    base.write_text(text)
    return out


def ingest(corpus: str, lake: Path, conf: Path, tree: Path = ROOT) -> dict:
    """`python -m jobs.ingest` of the code in `tree` (default: this one) in its own JVM: its wall
    seconds, decode and stage seconds, and each table's gate / commit seconds and rows."""
    cmd = [sys.executable, "-m", "jobs.ingest", corpus, "--lake", str(lake), "--conf-dir", str(conf)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True, cwd=tree)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"ingest failed with exit code {p.returncode}")
    out = {"wall": wall, "commit": {}, "gate": {}, "rows": {}, "decode": None}
    for line in p.stdout.splitlines():
        if m := COMMIT.match(line):
            out["gate"][m.group(1)], out["commit"][m.group(1)] = float(m.group(2)), float(m.group(3))
        elif m := DECODE.match(line):
            out["decode"] = float(m.group(1))
        elif m := ROWS.match(line):
            out["rows"][m.group(1)] = int(m.group(2).replace(",", ""))
        elif line.startswith("[ingest] done in"):
            out["stage"] = float(line.split()[3])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the last lake of each way here")
    args = ap.parse_args()
    n_logs = sum(1 for p in Path(args.corpus).rglob("*") if p.is_file() and ".darshan" in p.name)
    scratch = Path(tempfile.mkdtemp(prefix="ingest-commit-"))
    runs: dict[str, list[dict]] = {"files": [], "merge": []}
    try:
        confs = {m: conf_dir(scratch, "commit", m) for m in runs}
        for r in range(args.rounds):
            for mode in (("files", "merge") if r % 2 == 0 else ("merge", "files")):
                lake = scratch / f"lake-{mode}-{r}"
                res = ingest(args.corpus, lake, confs[mode])
                runs[mode].append(res)
                print(f"round {r + 1} {mode:>5}: ingest {res['stage']:.1f} s (decode {res['decode']:.1f} s, "
                      f"io_ops commit {res['commit'].get('io_ops', 0):.1f} s)", flush=True)
                if args.keep and r == args.rounds - 1:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(lake), args.keep / f"lake-{mode}")
                else:
                    shutil.rmtree(lake, ignore_errors=True)
        if runs["files"][0]["rows"] != runs["merge"][0]["rows"]:
            raise SystemExit(f"the two ways committed different rows: {runs['files'][0]['rows']} vs "
                             f"{runs['merge'][0]['rows']}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    best = {m: min(rs, key=lambda x: x["stage"]) for m, rs in runs.items()}
    f, g = best["files"], best["merge"]
    print(f"\n{n_logs:,} logs, best of {args.rounds} rounds per way (io_ops {f['rows'].get('io_ops', 0):,} rows)")
    print("| | merge | files | files / merge |")
    print("|---|---|---|---|")
    print(f"| decode | {g['decode']:.1f} s | {f['decode']:.1f} s | {f['decode'] / g['decode']:.2f} |")
    for t in SHOWN:
        if t in f["commit"] and t in g["commit"]:
            print(f"| {t} commit (gate) | {g['commit'][t]:.1f} s ({g['gate'][t]:.1f}) | {f['commit'][t]:.1f} s "
                  f"({f['gate'][t]:.1f}) | {f['commit'][t] / max(g['commit'][t], 1e-9):.2f} |")
    cf, cg = sum(f["commit"].values()), sum(g["commit"].values())
    print(f"| all commits | {cg:.1f} s | {cf:.1f} s | {cf / cg:.2f} |")
    print(f"| ingest stage | {g['stage']:.1f} s ({n_logs / g['stage']:.0f} logs/s) | {f['stage']:.1f} s "
          f"({n_logs / f['stage']:.0f} logs/s) | {f['stage'] / g['stage']:.2f} |")


if __name__ == "__main__":
    main()
