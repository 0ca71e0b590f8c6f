"""The `iolake` command: run the pipeline or one stage on the embedded default or a cluster.

  iolake run [INPUT...] [--lake DIR] [--env local|cluster]   every available stage, in pipeline order
  iolake ingest INPUT... [--lake DIR] [--env local|cluster]  trace files -> bronze tables
  iolake stages                                             the stages of pipeline.yaml
  iolake predict TRACE... [--lake DIR]                      per-file placement plan from the champion models
  iolake maintain [--table NAME] [--dry-run] [--lake DIR]   OPTIMIZE + Z-ORDER, VACUUM, table stats
  iolake report JOB [--out FILE_OR_DIR] [--lake DIR]        one job's HTML page: summary, tags, covering set,
                                                            timeline, placement plan (JOB: log_id, its prefix, or jobid)

With no INPUT, `run` ingests the sample Darshan logs shipped in the `darshan` wheel; with no
--lake, the lake is `lake/` in the working directory.
Exit codes: 0 success, 2 bad usage or configuration, 3 a data-quality gate stopped a commit,
1 any other failure.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from iolake.config import load_config
from iolake.exits import guarded


def sample_inputs() -> list[str]:
    import darshan

    return [str(Path(darshan.__file__).parent / "examples" / "example_logs")]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lake", help="lake root folder or URI (default: ./lake, or `lake` in conf)")
    p.add_argument("--env", default="local", help="configuration overlay: local (default) or cluster")
    p.add_argument("--conf-dir", help="configuration folder (default: the project's conf/)")
    p.add_argument("--decoder", choices=("pydarshan", "native"), help="override ingest.decoder")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="iolake", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every available stage in pipeline.yaml order")
    r.add_argument("inputs", nargs="*", help="trace files or folders (default: the sample logs)")
    _common(r)
    i = sub.add_parser("ingest", help="ingest trace files into the bronze tables")
    i.add_argument("inputs", nargs="+", help="trace files or folders (paths or URIs)")
    _common(i)
    sub.add_parser("stages", help="list the pipeline's stages")
    pr = sub.add_parser("predict", help="per-file placement plan of Darshan logs (champion models)")
    pr.add_argument("inputs", nargs="+", help="Darshan log files")
    _common(pr)
    m = sub.add_parser("maintain", help="OPTIMIZE (Z-ORDER) and VACUUM every table; print table stats")
    m.add_argument("--table", action="append", metavar="NAME",
                   help="only this table (repeatable; `posix` or `bronze/posix`)")
    m.add_argument("--dry-run", action="store_true", help="VACUUM DRY RUN only: list what would be deleted, no OPTIMIZE")
    _common(m)
    rp = sub.add_parser("report", help="write one job's self-contained HTML report (reads the lake, no Spark needed)")
    rp.add_argument("job", metavar="JOB", help="a log_id, a unique prefix of one, or the job's jobid")
    rp.add_argument("--out", metavar="FILE_OR_DIR", help="the HTML file, or a folder for <log_id>.html "
                                                        "(default: reports/<log_id>.html)")
    _common(rp)
    return p


def _conf(args):
    overrides: dict = {"lake": {"root": args.lake or str(Path.cwd() / "lake")}}
    if args.decoder:
        overrides["ingest"] = {"decoder": args.decoder}
    return load_config(args.env, args.conf_dir, overrides)


def main(argv=None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parser().parse_args(argv)

    def body() -> int:
        if args.cmd == "stages":
            from iolake.pipeline import load_pipeline

            for s in load_pipeline():
                print(f"{s.name:<10} {'ready' if s.available else 'not built yet':<14} {s.module}")
            return 0
        conf = _conf(args)
        if args.cmd == "ingest":
            return _ingest(conf, args.inputs)
        if args.cmd == "predict":
            from apps.predict import main as predict_main
            from models.registry import ModelAliasMissing

            try:
                return predict_main(conf, args.inputs)
            except ModelAliasMissing as e:
                print(f"iolake predict: {e}", file=sys.stderr)
                return 2
        if args.cmd == "report":
            from apps.report import main as report_main

            return report_main(conf, args.job, args.out)
        if args.cmd == "maintain":
            from apps.maintain import main as maintain_main

            return maintain_main(_session(conf), conf, args.table, args.dry_run)
        return _run(conf, args.inputs or sample_inputs())

    return guarded("iolake", body)


def stage_main(run_fn, name: str, doc: str, argv=None) -> int:
    """The command line of a stage module that reads and writes only the lake (spark-submit-able)."""
    args = stage_parser(name, doc).parse_args(argv)

    def body() -> int:
        conf = _conf(args)
        run_fn(_session(conf), conf)
        return 0

    return guarded(name, body)


def stage_parser(name: str, doc: str) -> argparse.ArgumentParser:
    """The argument parser of a stage module (`jobs/<stage>.py`, spark-submit-able)."""
    p = argparse.ArgumentParser(prog=name, description=doc.split("\n\n")[0])
    _common(p)
    return p


def _session(conf):
    from iolake.spark import session_from_config

    return session_from_config(conf)


def _ingest(conf, inputs) -> int:
    from iolake.runs import ingest_counts, record
    from jobs.ingest import format_summary, run

    def body(rec) -> int:
        rec.spark = _session(conf)
        t = time.monotonic()
        summary = run(rec.spark, conf, inputs, rec.info)
        rec.counts = ingest_counts(summary)
        rec.stage_done("ingest", time.monotonic() - t)
        print(format_summary(summary))
        return 0

    return record("ingest", conf, inputs, body)


def _run(conf, inputs, pipeline=None) -> int:
    """Every available stage of `pipeline` (default: the project's pipeline.yaml), in order."""
    import importlib

    from iolake.pipeline import load_pipeline
    from iolake.runs import ingest_counts, record

    def body(rec) -> int:
        t0 = time.monotonic()
        spark = rec.spark = _session(conf)
        info = rec.info
        print(f"iolake run {info.run_id}: lake {conf.lake}, env {conf.env}, inputs {', '.join(inputs)}")
        for stage in (load_pipeline(pipeline) if pipeline else load_pipeline()):
            if not stage.available:
                print(f"[{stage.name}] skipped: not built yet ({stage.module})")
                continue
            mod = importlib.import_module(stage.module)
            t = time.monotonic()
            try:
                if stage.name == "ingest":
                    summary = mod.run(spark, conf, inputs, info)
                    rec.counts = ingest_counts(summary)
                    print(mod.format_summary(summary))
                else:
                    mod.run(spark, conf, info)
            finally:  # a failed stage's time is recorded too
                rec.stage_done(stage.name, time.monotonic() - t)
            print(f"[{stage.name}] done in {time.monotonic() - t:.1f} s")
        print(f"iolake run {info.run_id}: finished in {time.monotonic() - t0:.1f} s; tables under {conf.lake}")
        return 0

    return record("run", conf, inputs, body)


if __name__ == "__main__":
    sys.exit(main())
