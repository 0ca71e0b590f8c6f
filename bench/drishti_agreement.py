"""Agreement of iolake's bottleneck tags with Drishti's insight codes, per code, over the shared logs.

Runs Drishti itself (`drishti-io`, installed with pip into a separate venv, never a project
dependency) on every Darshan log of ../shared/data/darshan (its MANIFEST.csv), reading the codes
that fired from Drishti's `--csv` export; runs iolake's ingest, features and tags stages on the same
logs into a scratch lake; and prints, for each Drishti code an iolake tag covers
(`schemas.bottleneck_tags.CATALOG`), over the logs both tools read: how many fired in both, only in
Drishti, only in iolake, in neither. With `--explain` it lists the logs behind every one-sided
count. Codes iolake leaves out (`schemas.bottleneck_tags.LEFT_OUT`) are printed with Drishti's count
and the reason.

Drishti's output per log is cached in `--out` (a log already there is not run again).

    python -m bench.drishti_agreement [--data DIR] [--venv DIR] [--out DIR]
                                      [--lake DIR] [--jobs N] [--explain] [--drishti-only]
"""

from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import parser, result, shared

DRISHTI_VERSION = "0.8"
# tags with a branch of iolake's own: only rows decided by the Drishti setting count as the Drishti code
DRISHTI_PART = {"metadata_heavy": "tags.metadata_time_rank"}  # not its metadata-share (warn) branch
TIMEOUT_S = 600


def ensure_drishti(venv: Path) -> Path:
    """`venv/bin/drishti`, creating the venv and installing drishti-io into it first if needed."""
    exe = venv / "bin" / "drishti"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", f"drishti-io=={DRISHTI_VERSION}"],
            check=True,
        )
    return exe


def manifest_logs(data: Path) -> list[Path]:
    with open(data / "MANIFEST.csv", newline="") as f:
        return [data / r["path"] for r in csv.DictReader(f)]


def _key(log: Path) -> str:
    return hashlib.sha1(str(log).encode()).hexdigest()[:16]


def run_drishti(exe: Path, log: Path, out: Path) -> dict:
    """Drishti's fired codes for one log: {"codes": set, "error": str | None}; cached in `out`."""
    done = out / f"{_key(log)}.csv"
    err = out / f"{_key(log)}.err"
    if not done.exists() and not err.exists():
        work = Path(tempfile.mkdtemp(prefix="drishti-", dir=out))
        try:  # Drishti writes <trace>.csv into --export_dir; it also shells out to sacct (absent here)
            p = subprocess.run(
                [str(exe), "--csv", "--export_dir", str(work), str(log)],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
            got = list(work.glob("*.csv"))
            if p.returncode == 0 and got:
                got[0].rename(done)
            else:
                tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or [
                    f"exit {p.returncode}, no CSV"
                ]
                err.write_text(f"exit {p.returncode}: {tail[0]}")
        except subprocess.TimeoutExpired:
            err.write_text(f"timed out after {TIMEOUT_S} s")
        finally:
            for f in work.iterdir():
                f.unlink()
            work.rmdir()
    if done.exists():
        with open(done, newline="") as f:
            rows = list(csv.reader(f))
        header, values = rows[0], rows[1]
        return {"codes": {c for c, v in zip(header, values) if v == "True"}, "error": None}
    return {"codes": set(), "error": err.read_text()}


def run_iolake(logs: list[Path], lake: str) -> dict[str, set[str]]:
    """iolake's fired tags per log path (ingest, features, tags into `lake`); a log ingest could not
    read is absent."""
    from iolake.config import load_config
    from iolake.lake import read_table
    from iolake.spark import session_from_config
    from jobs import features, ingest, tags
    from readers.fsio import content_hash
    from schemas import SILVER

    conf = load_config("local", overrides={"lake": {"root": lake}})
    spark = session_from_config(conf)
    quiet = dict(echo=lambda *_: None)
    ingest.run(
        spark, conf, [str(p) for p in logs], **quiet
    )  # a reused lake skips the logs it holds
    features.run(spark, conf, **quiet)
    shutil.rmtree(
        SILVER["bottleneck_tags"].path(lake), ignore_errors=True
    )  # the rules under test: always anew
    tags.run(spark, conf, **quiet)
    rows = (
        read_table(spark, SILVER["bottleneck_tags"], lake)
        .select("log_id", "tag", "threshold_name")
        .toPandas()
    )
    by_id: dict[str, set[str]] = {}
    for r in rows.itertuples():
        got = by_id.setdefault(r.log_id, set())
        if r.tag not in DRISHTI_PART or r.threshold_name == DRISHTI_PART[r.tag]:
            got.add(r.tag)
    # a log's id is its content hash: copies of one log under several paths are one lake log
    ids = {str(p): content_hash(str(p), "darshan") for p in logs}
    return {p: by_id[i] for p, i in ids.items() if i in by_id}


def table(
    drishti: dict[str, set[str]], iolake: dict[str, set[str]], explain: bool
) -> tuple[str, int, int]:
    """Per covered Drishti code: both / only Drishti / only iolake / neither over the logs both read;
    the table's text, and the (log, code) pairs both tools agree on and all of them."""
    from schemas.bottleneck_tags import CATALOG, LEFT_OUT

    logs = sorted(set(drishti) & set(iolake))
    by_code: dict[str, list[str]] = {}
    for tag, t in CATALOG.items():
        for code in t.drishti:
            by_code.setdefault(code, []).append(tag)
    lines = [
        f"{len(logs)} logs read by both tools",
        "",
        f"{'code':<5} {'iolake tag(s)':<44} {'both':>5} {'only Drishti':>13} {'only iolake':>12} {'neither':>8}",
    ]
    notes = []
    agree = pairs = 0
    for code in sorted(by_code, key=_order):
        tags_ = by_code[code]
        d = {lg for lg in logs if code in drishti[lg]}
        i = {lg for lg in logs if iolake[lg] & set(tags_)}
        agree, pairs = agree + len(logs) - len(d ^ i), pairs + len(logs)
        lines.append(
            f"{code:<5} {' | '.join(f'{t} ({CATALOG[t].code})' for t in tags_):<44} {len(d & i):>5} "
            f"{len(d - i):>13} {len(i - d):>12} {len(set(logs) - d - i):>8}"
        )
        if explain:
            for side, s in (("only Drishti", d - i), ("only iolake", i - d)):
                notes += [f"  {code} {side}: {Path(lg).name}" for lg in sorted(s)]
    lines += ["", "left out (Drishti fired on / logs):"]
    for code in sorted(LEFT_OUT, key=_order):
        n = sum(code in drishti[lg] for lg in logs)
        lines.append(f"{code:<5} {n:>4} / {len(logs):<4} {LEFT_OUT[code]}")
    return "\n".join(lines + ([""] + notes if notes else [])), agree, pairs


def _order(code: str) -> tuple:
    return ("SPM".index(code[0]), int(code[1:]))


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("--data", default=str(shared("darshan")))
    ap.add_argument(
        "--venv", default="/tmp/drishti-venv", help="the separate venv holding drishti-io"
    )
    ap.add_argument("--out", default="/tmp/drishti-out", help="Drishti's per-log CSVs (a cache)")
    ap.add_argument("--lake", default=None, help="reuse (or keep) the scratch lake here")
    ap.add_argument("--jobs", type=int, default=1, help="Drishti runs at once")
    ap.add_argument(
        "--explain", action="store_true", help="list the logs behind each one-sided count"
    )
    ap.add_argument(
        "--drishti-only", action="store_true", help="run (and cache) Drishti, nothing else"
    )
    args = ap.parse_args(argv)
    data, out = Path(args.data).resolve(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    exe = ensure_drishti(Path(args.venv))
    logs = [p.resolve() for p in manifest_logs(data)]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(logs, pool.map(lambda p: run_drishti(exe, p, out), logs)))
    failed = {p: r["error"] for p, r in results.items() if r["error"]}
    print(f"Drishti {DRISHTI_VERSION}: {len(logs) - len(failed)} of {len(logs)} logs analysed")
    reasons: dict[str, int] = {}
    for e in failed.values():
        reasons[e] = reasons.get(e, 0) + 1
    for e, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {n:>4} failed: {e[:160]}")
    if args.drishti_only:
        return 0
    drishti = {str(p): r["codes"] for p, r in results.items() if not r["error"]}
    lake = args.lake or tempfile.mkdtemp(prefix="iolake-drishti-") + "/lake"
    iolake = run_iolake(logs, lake)
    print(f"iolake: {len(iolake)} of {len(logs)} logs tagged (lake {lake})\n")
    text, agree, pairs = table(drishti, iolake, args.explain)
    print(text)
    result(
        "drishti_agreement",
        f"{len(set(drishti) & set(iolake))} logs: the tools agree on {agree} of {pairs} "
        f"(log, covered code) pairs ({agree / max(pairs, 1):.1%})",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
