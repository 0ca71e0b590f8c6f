"""The whole `iolake run` at scale: seconds and peak RSS per stage, and the fit to 1,000,000 logs.

    python -m bench.pipeline_scale CORPUS --sizes 10000 100000 [--keep DIR] [--conf-dir DIR]
    python -m bench.pipeline_scale CORPUS [CORPUS ...] --grow LAKE [--output FILE]


CORPUS is a folder of distinct Darshan logs in dNNNN/ sub-folders (`python -m bench.make_corpus`).
For each size N, in one run of this script: `iolake run` of the first N logs (whole sub-folders
in name order, then single files of the next one) into an empty lake on local[2], every stage
of `pipeline.yaml` in order. The child's stdout is read as it comes: each stage's
`[stage] done in S s` line closes the stage, so every stage gets its own wall seconds and its own
peak RSS of the driver side (Python driver + JVM) and of PySpark's Python workers, sampled from
/proc every 0.2 s. The stage seconds are the runner's own (`ops/runs.stage_seconds` holds the
same figures).

With two or more sizes it fits, per stage, seconds = fixed + per-log x N on the two largest
sizes and extrapolates to 1,000,000 logs (what these 2 cores would take for one night's
million). With `--grow LAKE` each CORPUS is one step into a lake that already exists, the way
a lake too big for one run is built (and the way a centre adds a night): the same per-stage
table per step, with the rows each stage added to its output tables (their row counts after the
step less before, from the Parquet footers of the Delta snapshots' files), the logs the lake
held before and after and its size on disk. A step that stops can be run again: logs already
in the ledger are skipped. `--output FILE` appends every line `iolake run` printed to FILE, each
after the seconds since the run started (`+ 81.3 `), to see where a stage's time went.
The figures are for this machine only; compare stages with each other, and runs with runs made
the same way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import MIB, ROOT, STAGE_DONE, StageRSS, iolake_cmd, parser, result

LEDGER = "bronze/logs"  # one row per log: the lake's logs


def pick_inputs(corpus: Path, n: int, scratch: Path) -> list[str]:
    """The first n logs of the corpus as input paths: whole sub-folders, then a folder of links."""
    dirs = sorted(d for d in corpus.iterdir() if d.is_dir())
    inputs, have = [], 0
    for d in dirs:
        if have == n:
            break
        logs = sorted(p for p in d.iterdir() if ".darshan" in p.name)
        if have + len(logs) <= n:
            inputs.append(str(d))
            have += len(logs)
            continue
        rest = scratch / f"rest-{n}"
        rest.mkdir(parents=True, exist_ok=True)
        for p in logs[: n - have]:
            (rest / p.name).symlink_to(p)
        inputs.append(str(rest))
        have = n
        break
    if have < n:
        raise SystemExit(f"{corpus} holds {have:,} logs, fewer than {n:,}")
    return inputs


BATCH_OR_SORT = re.compile(r"\[\w+\] (batch \d+/\d+|\S+ new logs over \d+ months|ledger sorted)")


def run_pipeline(
    inputs: list[str], lake: Path, conf_dir: Path | None = None, output: Path | None = None
) -> tuple[float, list[tuple[str, float, int, int]]]:
    """Wall seconds of `iolake run`, and per stage: (name, seconds, peak driver, peak workers);
    with `output`, every line of the run appended there after its second since the start."""
    cmd = iolake_cmd("run", *inputs, "--lake", str(lake))
    if conf_dir:
        cmd += ["--conf-dir", str(conf_dir)]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    rss, stages, tail = StageRSS(p.pid), [], []
    out = open(output, "a") if output else None  # noqa: SIM115 (closed below)
    for line in p.stdout:
        tail = (tail + [line])[-80:]
        if out:
            out.write(f"+ {time.perf_counter() - t0:8.1f} {line}")
            out.flush()
        m = STAGE_DONE.match(line)
        if m:
            d, w = rss.cut()
            stages.append((m.group(1), float(m.group(2)), d, w))
            print(
                f"    {line.rstrip()}  (peak RSS driver {d / MIB:,.0f} MiB, workers {w / MIB:,.0f} MiB)",
                flush=True,
            )
        elif line.startswith(
            ("iolake run", "[decode]", "[commit]", "[labels]", "[train]", "[score]")
        ) or BATCH_OR_SORT.match(line):
            print("    " + line.rstrip()[:160], flush=True)
    p.wait()
    rss.stop()
    if out:
        out.close()
    if p.returncode != 0:
        sys.stdout.write("".join(tail))
        raise SystemExit(f"iolake run failed with exit code {p.returncode}")
    return time.perf_counter() - t0, stages


def table_rows(lake: Path) -> dict[str, int]:
    """Rows of every Delta table a stage of `pipeline.yaml` writes ("layer/name" -> rows; a table
    not written yet is absent), counted from the Parquet footers of the snapshot's files (no data
    pages read). `bronze/logs` is the ledger: its rows are the lake's logs."""
    from deltalake import DeltaTable

    from iolake.pipeline import load_pipeline

    rows = {}
    for stage in load_pipeline():
        for name in stage.tables_out:
            path = lake / name
            if name not in rows and (path / "_delta_log").is_dir():
                rows[name] = DeltaTable(str(path)).to_pyarrow_dataset().count_rows()
    return rows


def rows_added(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Rows each stage added to its output tables (after less before), by stage name."""
    from iolake.pipeline import load_pipeline

    return {
        s.name: sum(after.get(t, 0) - before.get(t, 0) for t in s.tables_out)
        for s in load_pipeline()
    }


def lake_bytes(lake: Path) -> int:
    """Bytes of every file under the lake (logs, MLflow store and Spark's logs included)."""
    return sum(p.stat().st_size for p in lake.rglob("*") if p.is_file())


def grow(corpora: list[Path], lake: Path, conf_dir: Path | None, output: Path | None = None) -> int:
    """Each corpus as one `iolake run` step into `lake`: stage table, logs and bytes after it."""
    for corpus in corpora:
        rows_before = table_rows(lake)
        before = rows_before.get(LEDGER, 0)
        print(f"== step {corpus} -> {lake} (holds {before:,} logs)", flush=True)
        wall, stages = run_pipeline([str(corpus)], lake, conf_dir, output)
        rows_after = table_rows(lake)
        after, added = rows_after.get(LEDGER, 0), rows_added(rows_before, rows_after)
        print(
            "\n| stage | seconds | rows added | peak RSS driver / workers, MiB |\n|---|---|---|---|"
        )
        for name, secs, d, w in stages:
            print(
                f"| {name} | {secs:,.1f} | {added.get(name, 0):,} | {d / MIB:,.0f} / {w / MIB:,.0f} |"
            )
        size = lake_bytes(lake)
        print(f"| wall, whole run | {wall:,.1f} | |", flush=True)
        result(
            "pipeline_scale",
            f"step {corpus.name}: {after - before:,} new logs into a lake of {before:,} in "
            f"{wall:,.0f} s ({(after - before) / wall:,.1f} logs/s); lake {after:,} logs, "
            f"{size / MIB / 1024:,.2f} GiB",
        )
    return 0


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("corpus", type=Path, nargs="+", help="one corpus; with --grow, one per step")
    ap.add_argument("--grow", type=Path, help="run each CORPUS as a step into this lake")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument(
        "--keep", type=Path, help="keep each lake here (DIR/lake-N) instead of deleting it"
    )
    ap.add_argument(
        "--conf-dir", type=Path, help="configuration folder for `iolake run` (default: conf/)"
    )
    ap.add_argument(
        "--output", type=Path, help="append every line of each run here, timed from its start"
    )
    args = ap.parse_args(argv)
    if args.grow:
        return grow(args.corpus, args.grow, args.conf_dir, args.output)
    if len(args.corpus) > 1:
        raise SystemExit("give one CORPUS (several only with --grow)")
    args.corpus = args.corpus[0]

    scratch = Path(tempfile.mkdtemp(prefix="pipeline-scale-"))
    results: dict[int, tuple[float, list]] = {}
    try:
        for n in sorted(args.sizes):
            lake = (args.keep / f"lake-{n}") if args.keep else scratch / f"lake-{n}"
            if lake.exists():
                raise SystemExit(f"{lake} exists: give an empty place for the lake")
            inputs = pick_inputs(args.corpus, n, scratch)
            print(f"== {n:,} logs ({len(inputs)} input folders) -> {lake}", flush=True)
            wall, stages = run_pipeline(inputs, lake, args.conf_dir, args.output)
            results[n] = (wall, stages)
            print(
                f"   {n:,} logs: {wall:,.0f} s wall, {n / wall:,.1f} logs/s through every stage",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(lake, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    sizes = sorted(results)
    print("\nseconds per stage (peak RSS driver / workers, MiB)")
    names = [s[0] for s in results[sizes[-1]][1]]
    print(
        "| stage | "
        + " | ".join(f"{n:,} logs" for n in sizes)
        + " |"
        + (" per 1,000 logs | 1,000,000 logs (fit) |" if len(sizes) > 1 else "")
    )
    print("|---|" + "---|" * len(sizes) + ("---|---|" if len(sizes) > 1 else ""))
    total_fit = 0.0
    for name in names:
        cells, secs = [], []
        for n in sizes:
            row = next((s for s in results[n][1] if s[0] == name), None)
            if row is None:
                cells.append("—")
                secs.append(0.0)
                continue
            cells.append(f"{row[1]:,.0f} s ({row[2] / MIB:,.0f} / {row[3] / MIB:,.0f})")
            secs.append(row[1])
        line = f"| {name} | " + " | ".join(cells) + " |"
        if len(sizes) > 1:
            (n0, s0), (n1, s1) = (sizes[-2], secs[-2]), (sizes[-1], secs[-1])
            per = (s1 - s0) / (n1 - n0)
            fit = s1 + per * (1_000_000 - n1)
            total_fit += fit
            line += f" {per * 1000:,.2f} s | {fit / 60:,.0f} min |"
        print(line)
    walls = " | ".join(f"{results[n][0]:,.0f} s ({n / results[n][0]:,.1f} logs/s)" for n in sizes)
    print(
        f"| wall, whole run | {walls} |"
        + (f" | {total_fit / 3600:,.1f} h (stages) |" if len(sizes) > 1 else "")
    )
    n = sizes[-1]
    result(
        "pipeline_scale",
        f"{n:,} logs through every stage in {results[n][0]:,.0f} s "
        f"({n / results[n][0]:,.1f} logs/s)"
        + (f"; 1,000,000 logs ~{total_fit / 3600:,.1f} h (fit)" if len(sizes) > 1 else ""),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
