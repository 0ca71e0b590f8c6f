"""The lake on an S3-compatible server beside the lake on a local folder: same rows, and the time.

    python -m bench.s3_lake [INPUT ...] [--rounds 1] [--work DIR] [--json]

Starts the test suite's servers on loopback (tests/support/services.py: S3Proxy over a local
folder, and `mlflow server` with its artifacts in a bucket of it), then runs `iolake run` over
the same INPUT (default: the sample logs) into a local folder (MLflow on SQLite in it) and into
`s3://bench/lake-N` (MLflow on the server), alternating which goes first per round. Prints each
stage's seconds for both (best of the rounds), the S3 / local ratio, and whether every table
holds the same rows (`tests/support/compare.py`). Both lakes run on this machine, so the ratio
is the cost of the S3 protocol and S3A's commit path, not of a network.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, STAGE_DONE, iolake_cmd, parser, result, sample_logs

TOTAL = re.compile(r"finished in ([0-9.]+) s")


def _stages(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        m = STAGE_DONE.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
    m = TOTAL.search(text)
    if m:
        out["total"] = float(m.group(1))
    return out


def _conf(dest: Path, tracking_uri: str | None) -> Path:
    import yaml

    dest.mkdir(parents=True, exist_ok=True)
    for f in (ROOT / "conf").glob("*.yaml"):
        (dest / f.name).write_text(f.read_text())
    if tracking_uri:
        local = yaml.safe_load((dest / "local.yaml").read_text()) or {}
        local["mlflow"] = {"tracking_uri": tracking_uri}
        (dest / "local.yaml").write_text(yaml.safe_dump(local, sort_keys=False))
    return dest


def main(argv=None) -> int:
    import os
    import subprocess

    from tests.support.compare import compare
    from tests.support.services import MlflowServer, S3Server

    p = parser(__spec__.name, __doc__)
    p.add_argument("inputs", nargs="*")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--work", type=Path)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    inputs = args.inputs or [str(sample_logs())]
    work = args.work or Path(tempfile.mkdtemp(prefix="iolake-bench-s3-"))
    s3 = S3Server(work / "s3").start()
    try:
        s3.bucket("bench")
        s3.bucket("mlflow")
        ml = MlflowServer(work / "mlflow", "s3://mlflow/artifacts", s3.env()).start()
        try:
            best: dict[str, dict[str, float]] = {"local": {}, "s3": {}}
            lakes = {}
            for k in range(args.rounds):
                order = ("local", "s3") if k % 2 == 0 else ("s3", "local")
                for where in order:
                    if where == "local":
                        lake = work / f"local-{k}"
                        shutil.rmtree(lake, ignore_errors=True)
                        conf, env, lake = _conf(work / "conf-local", None), {}, str(lake)
                    else:
                        lake = f"s3://bench/lake-{k}"
                        conf, env = _conf(work / "conf-s3", ml.url), s3.env()
                    t = time.monotonic()
                    run = subprocess.run(
                        iolake_cmd("run", *inputs, "--lake", lake, "--conf-dir", str(conf)),
                        cwd=ROOT,
                        env={**os.environ, **env},
                        capture_output=True,
                        text=True,
                    )
                    wall = time.monotonic() - t
                    if run.returncode != 0:
                        print(run.stdout[-3000:], run.stderr[-3000:])
                        raise SystemExit(f"{where} run failed ({run.returncode})")
                    stages = {**_stages(run.stdout), "wall": wall}
                    for s, v in stages.items():
                        best[where][s] = min(best[where].get(s, v), v)
                    lakes[where] = lake
                    print(f"round {k + 1} {where}: {wall:.1f} s", flush=True)
            os.environ.update(s3.env())
            rows = compare(lakes["local"], lakes["s3"])
        finally:
            ml.stop()
    finally:
        s3.stop()
    names = list(best["local"])
    print(f"{'stage':<12} {'local s':>9} {'s3 s':>9} {'s3/local':>9}")
    for n in names:
        a, b = best["local"][n], best["s3"].get(n)
        ratio = f"{b / a:.2f}" if b and a else "-"
        print(f"{n:<12} {a:>9.1f} {b if b is not None else float('nan'):>9.1f} {ratio:>9}")
    equal = sum(r["equal"] for r in rows)
    print(f"tables equal: {equal}/{len(rows)}")
    for r in rows:
        if not r["equal"]:
            print(f"  {r['table']}: {r.get('why')}")
    if args.json:
        print(json.dumps({"best": best, "tables": rows}, indent=1))
    ratio = best["s3"]["wall"] / best["local"]["wall"]
    result(
        "s3_lake",
        f"{equal}/{len(rows)} tables equal; wall local {best['local']['wall']:.0f} s, "
        f"s3 {best['s3']['wall']:.0f} s ({ratio:.2f}x)",
    )
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if equal == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
