"""The `iolake` command: run the pipeline or one stage on the embedded default or a cluster.

  iolake run [INPUT...] [--lake DIR] [--env local|cluster]   every available stage, in pipeline order
             [--skip NAME]                                  but NAME (repeatable)
  iolake stage NAME [INPUT...] [--lake DIR] ...             one stage of pipeline.yaml (ingest takes INPUT)
  iolake ingest INPUT... [--lake DIR] [--env local|cluster]  the same as `iolake stage ingest INPUT...`
  iolake stages                                             the stages of pipeline.yaml
  iolake predict TRACE... [--lake DIR]                      per-file placement plan from the champion models
  iolake advise TRACE... [--lake DIR] [--out CSV]           what to change: what-if, stripe and tag advice
  iolake maintain [--table NAME] [--dry-run] [--lake DIR]   OPTIMIZE + Z-ORDER, VACUUM, table stats
  iolake report JOB [--out FILE_OR_DIR] [--lake DIR]        one job's HTML page: summary, tags, covering set,
                [--format html|text|json]                   timeline, placement plan (JOB: log_id, its prefix, or jobid)
  iolake fleet [--out DIR] [--since YYYY-MM] [--until YYYY-MM] [--top N] [--reports N] [--lake DIR]
                                                            the fleet's HTML dashboard from the fleet marts

With no INPUT, `run` ingests the sample Darshan logs shipped in the `darshan` wheel; with no
--lake, the lake is `lake.root` of the configuration (`lake/` in the working directory).
Spark's own log lines go to LAKE/_logs/spark-RUN_ID.log unless --verbose.
Every stage module (`python -m jobs.features`, `cluster/pipeline_main.py stage features`) has
the same command line as `iolake stage NAME`: it is this parser.
Exit codes: 0 success, 2 bad usage or configuration, 3 a data-quality gate stopped a commit,
1 any other failure.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from iolake.config import load_config
from iolake.exits import guarded
from iolake.runinfo import RunInfo

# The commands built on the platform: name -> "module:function" of the app (apps/) that runs it,
# imported only when the command runs, so that the platform imports no app (`.importlinter`):
# apps are found the way stages are found through pipeline.yaml's module names.
APPS = {
    "predict": "apps.predict:main",
    "advise": "apps.advise:main",
    "report": "apps.report:main",
    "watch": "apps.watch:main",
    "maintain": "apps.maintain:main",
    "fleet": "apps.fleet:main",
}


def app(name: str):
    """The function that runs command `name` (`APPS`), imported now."""
    module, _, function = APPS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def sample_inputs() -> list[str]:
    import darshan

    return [str(Path(darshan.__file__).parent / "examples" / "example_logs")]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lake", help="lake root folder or URI (default: lake.root of the configuration, ./lake)"
    )
    p.add_argument(
        "--env", default="local", help="configuration overlay: local (default) or cluster"
    )
    p.add_argument("--conf-dir", help="configuration folder (default: the project's conf/)")
    p.add_argument("--decoder", choices=("pydarshan", "native"), help="override ingest.decoder")
    p.add_argument(
        "--verbose", action="store_true", help="show Spark's own log lines on the console"
    )


def _stage_args(p: argparse.ArgumentParser, stage) -> None:
    """The arguments of one stage: INPUT... when it reads trace files, then the common options."""
    if "traces" in stage.inputs:
        p.add_argument("inputs", nargs="+", help="trace files or folders (paths or URIs)")
    _common(p)


def _stage_names(names: list[str]):
    """argparse `type` of --skip: NAME or NAME,NAME..., each a stage of pipeline.yaml."""

    def parse(value: str) -> list[str]:
        got = [v.strip() for v in value.split(",") if v.strip()]
        bad = [v for v in got if v not in names]
        if bad or not got:
            raise argparse.ArgumentTypeError(
                f"{', '.join(bad) or repr(value)}: not a stage of pipeline.yaml "
                f"(its stages: {', '.join(names)})"
            )
        return got

    return parse


def parser() -> argparse.ArgumentParser:
    from iolake.pipeline import load_pipeline

    p = argparse.ArgumentParser(
        prog="iolake",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run every available stage in pipeline.yaml order")
    r.add_argument("inputs", nargs="*", help="trace files or folders (default: the sample logs)")
    pipeline = load_pipeline()
    names = [s.name for s in pipeline]
    r.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="NAME",
        type=_stage_names(names),
        help="do not run this stage (repeatable, or NAME,NAME): the stages after it read what "
        "the lake already holds; a skipped incremental stage catches up on its next run",
    )
    _common(r)
    st = sub.add_parser("stage", help="run one stage of pipeline.yaml")
    stages = st.add_subparsers(dest="stage", required=True, metavar="NAME")
    for s in pipeline:
        _stage_args(
            stages.add_parser(
                s.name, help=f"{', '.join(s.tables_in) or 'trace files'} -> {', '.join(s.outputs)}"
            ),
            s,
        )
    i = sub.add_parser("ingest", help="ingest trace files into the bronze tables (= stage ingest)")
    i.add_argument("inputs", nargs="+", help="trace files or folders (paths or URIs)")
    _common(i)
    sub.add_parser("stages", help="list the pipeline's stages")
    pr = sub.add_parser("predict", help="per-file placement plan of Darshan logs (champion models)")
    pr.add_argument("inputs", nargs="+", help="Darshan log files")
    _common(pr)
    ad = sub.add_parser(
        "advise", help="what to change in Darshan logs: model what-if, DCA-IO stripes, tag advice"
    )
    ad.add_argument("inputs", nargs="+", help="Darshan log files")
    ad.add_argument("--out", metavar="CSV", help="also write every advice row as CSV")
    _common(ad)
    m = sub.add_parser(
        "maintain", help="OPTIMIZE (Z-ORDER) and VACUUM every table; print table stats"
    )
    m.add_argument(
        "--table",
        action="append",
        metavar="NAME",
        help="only this table (repeatable; `posix` or `bronze/posix`)",
    )
    m.add_argument(
        "--dry-run",
        action="store_true",
        help="VACUUM DRY RUN only: list what would be deleted, no OPTIMIZE",
    )
    _common(m)
    rp = sub.add_parser(
        "report",
        help="write one job's self-contained HTML report (reads the lake, no Spark needed)",
    )
    rp.add_argument(
        "job", metavar="JOB", help="a log_id, a unique prefix of one, or the job's jobid"
    )
    rp.add_argument(
        "--out",
        metavar="FILE_OR_DIR",
        help="the output file, or a folder for <log_id>.html|.txt|.json (default: html to "
        "reports/<log_id>.html, text and json to stdout)",
    )
    rp.add_argument(
        "--format",
        choices=("html", "text", "json"),
        default="html",
        help="html: the self-contained page (default); text: a terminal summary of the findings "
        "by severity with their recommendations; json: the same facts, machine-readable",
    )
    _common(rp)
    w = sub.add_parser(
        "watch",
        help="flag application runs slower than their own history (reads the lake, "
        "or --history FILE; no Spark needed)",
    )
    w.add_argument(
        "--history",
        metavar="FILE",
        help="CSV or Parquet: app, start (epoch s or ISO 8601), metric "
        "columns of conf watch.metrics (default: the lake's gold/app_runs)",
    )
    w.add_argument("--out", metavar="CSV", help="write the flagged rows as CSV")
    _common(w)
    fl = sub.add_parser(
        "fleet",
        help="write the fleet's HTML dashboard from the gold fleet marts (no Spark needed)",
    )
    fl.add_argument(
        "--out", metavar="DIR", help="folder for index.html and apps/*.html (default: fleet/)"
    )
    fl.add_argument("--since", metavar="YYYY-MM", help="first month shown (inclusive)")
    fl.add_argument("--until", metavar="YYYY-MM", help="last month shown (inclusive)")
    fl.add_argument(
        "--top", type=int, default=15, metavar="N", help="rows of each ranking (default 15)"
    )
    fl.add_argument(
        "--reports",
        type=int,
        default=0,
        metavar="N",
        help="also render the `iolake report` pages of the first N jobs the pages link to, "
        "into OUT/jobs/ (default 0: the pages show the command instead)",
    )
    _common(fl)
    return p


def stage_parser(name: str) -> argparse.ArgumentParser:
    """The command line of stage NAME: what `iolake stage NAME` and the stage module's `main` parse."""
    from iolake.runner import stage_by_name

    stage = stage_by_name(name)
    p = argparse.ArgumentParser(
        prog=f"iolake stage {name}",
        description=f"{', '.join(stage.inputs)} -> {', '.join(stage.outputs)}",
    )
    _stage_args(p, stage)
    return p


def _conf(args):
    overrides: dict = {}
    if args.lake:
        overrides["lake"] = {"root": args.lake}
    if args.decoder:
        overrides["ingest"] = {"decoder": args.decoder}
    conf = load_config(args.env, args.conf_dir, overrides)
    root = conf.lake.root
    if (
        "://" not in root and not Path(root).is_absolute()
    ):  # one lake whatever the working directory later
        conf = dataclasses.replace(
            conf, lake=dataclasses.replace(conf.lake, root=str(Path(root).resolve()))
        )
    return conf


def main(argv=None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parser().parse_args(argv)

    def body() -> int:
        if args.cmd == "stages":
            from iolake.pipeline import load_pipeline

            for s in load_pipeline():
                print(
                    f"{s.name:<10} {'ready' if s.available else 'not built yet':<14} {s.module:<14} "
                    f"{', '.join(s.inputs)} -> {', '.join(s.outputs)}"
                )
            return 0
        conf = _conf(args)
        if args.cmd in ("stage", "ingest"):
            name = "ingest" if args.cmd == "ingest" else args.stage
            return _stages(
                conf, [name], getattr(args, "inputs", None) or [], args.verbose, command=args.cmd
            )
        if args.cmd == "predict":
            from models.registry import ModelAliasMissing

            try:
                return app("predict")(conf, args.inputs)
            except ModelAliasMissing as e:
                print(f"iolake predict: {e}", file=sys.stderr)
                return 2
        if args.cmd == "advise":
            return app("advise")(conf, args.inputs, args.out)
        if args.cmd == "report":
            return app("report")(conf, args.job, args.out, args.format)
        if args.cmd == "fleet":
            return app("fleet")(conf, args.out, args.since, args.until, args.top, args.reports)
        if args.cmd == "watch":
            return app("watch")(conf, args.history, args.out)
        if args.cmd == "maintain":
            return app("maintain")(session(conf, args.verbose), conf, args.table, args.dry_run)
        skip = {n for names in args.skip for n in names}
        return _run(conf, args.inputs or sample_inputs(), verbose=args.verbose, skip=skip)

    return guarded("iolake", body)


# Commands that only read the lake through delta-rs and write a page or print: once their output
# is written and flushed, the console script ends the process without the interpreter's teardown
# (freeing every Arrow and pandas object, stopping delta-rs's runtime threads), which adds
# noticeably to a short command's time and saves nothing (docs/benchmarks.md, layout_cost).
QUICK_EXIT = frozenset({"report", "fleet"})


def console_main() -> int:
    """The `iolake` console script: `main` with the process's arguments. A reader of the output
    that goes away (`iolake report J --format text | head`) ends the command quietly with exit
    code PIPE_CLOSED instead of a traceback; the commands of QUICK_EXIT end the process as soon as
    their output is flushed. (`main` itself never exits the process: tests call it.)"""
    from iolake.exits import PIPE_CLOSED

    argv = sys.argv[1:]
    try:
        rc = main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would report the closed pipe again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return PIPE_CLOSED
    if argv and argv[0] in QUICK_EXIT:
        sys.stderr.flush()
        logging.shutdown()
        os._exit(rc)
    return rc


def stage_main(name: str, argv=None) -> int:
    """`main` of every stage module: `iolake stage NAME` with the module's own argv."""
    args = stage_parser(name).parse_args(argv)

    def body() -> int:
        return _stages(
            _conf(args),
            [name],
            getattr(args, "inputs", None) or [],
            args.verbose,
            command="ingest" if name == "ingest" else "stage",
        )

    return guarded(name, body)


def entry_points(name: str):
    """`(run, main)` of the stage module for stage `name`:
    `run(spark, conf, run_info=None, echo=print, **params)` runs it through `run_stage`;
    `main(argv=None)` is `iolake stage NAME` with the module's argv (spark-submit-able)."""

    def run(spark, conf, run_info: RunInfo | None = None, echo=print, **params) -> dict:
        from iolake.runner import run_stage

        return run_stage(spark, conf, name, run_info, echo, **params)

    def main(argv=None) -> int:
        return stage_main(name, argv)

    run.__doc__ = (
        f"Run stage {name!r} through the runner (`iolake.runner.run_stage`); returns its summary."
    )
    main.__doc__ = f"`iolake stage {name}` with this argv; returns the exit code."
    return run, main


def session(conf, verbose: bool = False, run_id: str | None = None):
    """The SparkSession for `conf`; Spark's log lines go to a file under the lake unless `verbose`."""
    from iolake.spark import session_from_config, spark_log_file

    return session_from_config(conf, None if verbose else spark_log_file(conf, run_id))


def _run(conf, inputs, pipeline=None, verbose: bool = False, skip=frozenset()) -> int:
    """Every available stage of `pipeline` (default: the project's pipeline.yaml), in order,
    but those named in `skip` (`iolake run --skip`)."""
    from iolake.pipeline import load_pipeline

    stages = load_pipeline(pipeline) if pipeline else load_pipeline()
    return _stages(conf, stages, inputs, verbose, command="run", announce=True, skip=skip)


def _stages(
    conf, stages, inputs, verbose: bool, command: str, announce: bool = False, skip=frozenset()
) -> int:
    """Run `stages` (Stage objects or names) in order, recording the run in ops/runs; a stage
    named in `skip` is announced as skipped and not run (nor recorded with a time)."""
    from iolake.runner import run_stage, stage_by_name
    from iolake.runs import ingest_counts, record
    from iolake.spark import log_file_of

    stages = [stage_by_name(s) if isinstance(s, str) else s for s in stages]

    def body(rec) -> int:
        t0 = time.monotonic()
        info = rec.info
        spark = rec.spark = session(conf, verbose, info.run_id)
        log_file = log_file_of(spark)  # None with --verbose, or when the session already existed
        if announce:
            print(
                f"iolake {command} {info.run_id}: lake {conf.lake.root}, env {conf.env}, inputs {', '.join(inputs)}"
            )
        for stage in stages:
            if rec.lease is not None:
                rec.lease.check()
            if stage.name in skip:
                unread = " (the inputs are not read)" if "traces" in stage.inputs else ""
                print(f"[{stage.name}] skipped: --skip{unread}")
                continue
            if not stage.available:
                print(f"[{stage.name}] skipped: not built yet ({stage.module})")
                continue
            t = time.monotonic()
            try:
                with _library_output_to(log_file):
                    summary = run_stage(spark, conf, stage, info, print, traces=inputs)
                if stage.name == "ingest":
                    rec.counts = ingest_counts(summary)
            finally:  # a failed stage's time is recorded too
                rec.stage_done(stage.name, time.monotonic() - t)
            print(f"[{stage.name}] done in {time.monotonic() - t:.1f} s")
        if announce:
            print(
                f"iolake {command} {info.run_id}: finished in {time.monotonic() - t0:.1f} s; tables under "
                f"{conf.lake.root}"
            )
            if any(s.name in ("train", "score") for s in stages):
                _where_to_look(conf)
        if log_file:
            print(f"Spark's log: {log_file} (--verbose shows it on the console)")
        return 0

    name = command if command != "stage" else f"stage {stages[0].name}"
    return record(name, conf, inputs, body, lease=True)


def _where_to_look(conf) -> None:
    """The champions a run left in the registry, and the commands that show them and their predictions."""
    import mlflow

    from iolake.lake import arrow
    from models import tracking
    from models.registry import ModelAliasMissing, version_by_alias
    from schemas import TABLES

    uri = tracking.configure(conf)
    m = conf.models
    for name in (m.placement_model, m.bandwidth_model, m.job_bandwidth_model):
        try:
            mv = version_by_alias(name, m.alias)
            run = mlflow.get_run(mv.run_id)
            src = run.data.tags.get("iolake.training_source") or run.data.tags.get(
                "iolake.label_source", "?"
            )
            print(
                f"  {name}@{m.alias}: v{mv.version} ({run.data.params.get('model', '?')}, trained on {src})"
            )
        except ModelAliasMissing as e:  # never trained, or every version held back
            print(
                f"  {name}@{m.alias}: "
                + (f"none (v{e.held_back[0]}: {e.held_back[1]})" if e.held_back else "none yet")
            )
    try:
        preds = arrow.read(conf.lake.root, TABLES["placement_predictions"], columns=["log_id"])
        example = preds.column("log_id")[0].as_py() if preds.num_rows else None
    except Exception:  # a summary line is not worth failing a finished run
        example = None
    lake = f" --lake {conf.lake.root}" if conf.lake.root != "lake" else ""
    if example:
        print(f"  a job's report with its placement plan: iolake report{lake} {example[:12]}")
    try:
        fleet = arrow.exists(conf.lake.root, TABLES["fleet_app_month"])
    except Exception:  # as above: a summary line
        fleet = False
    if fleet:
        print(f"  the whole lake (the fleet marts as a page): iolake fleet{lake}")
    print(f"  models and their runs: mlflow ui --backend-store-uri {uri}")


@contextlib.contextmanager
def _library_output_to(log_file: str | None):
    """While a stage runs, what libraries print (MLflow's registry messages, its INFO log and
    UserWarnings) goes to the run's log file, not the console; with no log file (--verbose) nothing changes."""
    if log_file is None:
        yield
        return
    loggers = [logging.getLogger(n) for n in ("mlflow", "alembic", "py4j")]
    saved = [(lg.level, lg.handlers[:], lg.propagate) for lg in loggers]
    with open(log_file, "a") as f, contextlib.redirect_stderr(f), warnings.catch_warnings():
        handler = logging.StreamHandler(f)
        for lg in loggers:
            lg.setLevel(logging.INFO)
            lg.handlers, lg.propagate = [handler], False
        warnings.simplefilter("default")
        warnings.showwarning = lambda msg, cat, fn, ln, *_: f.write(
            warnings.formatwarning(msg, cat, fn, ln)
        )
        try:
            yield
        finally:
            for lg, (level, handlers, propagate) in zip(loggers, saved):
                lg.setLevel(level)
                lg.handlers, lg.propagate = handlers, propagate


if __name__ == "__main__":  # `python -m iolake.cli`: the console script's way
    sys.exit(console_main())
