"""`iolake watch`: which applications got slower, since when, and is it them or the file system?

Over the lake (default: gold/app_runs, read without Spark through delta-rs) or over a history
table a centre already keeps (`--history FILE`, CSV or Parquet: `app`, `start` — epoch seconds
or ISO 8601 — and the metric columns named in conf `watch.metrics`, default `bandwidth_mib_s`;
optional `fs` for the weather flag and `log_id`). The rules are those of the `watch` stage
(`features/regressions.py`, settings conf `watch:`), run on the same columns, so the same
history gives the same alarms either way. Prints the flagged (job, metric) rows, most recent
first; `--out FILE` writes them as CSV (gold/regressions' columns).

`umami_panel_data` returns what an UMAMI panel (keynote, "Umami: meaningful metrics for
understanding I/O load") draws for one job: per metric the application's history, short and
long moving averages, the quartiles of its past runs and the quartile of the job's own value.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from features import regressions


def read_history(path: str) -> pd.DataFrame:
    """An external history table: CSV (any pandas-readable compression) or Parquet (file or folder)."""
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq") or p.is_dir():
        return pd.read_parquet(p)
    return pd.read_csv(p)


def lake_history(conf) -> pd.DataFrame:
    """gold/app_runs' history columns, read Spark-free (an empty frame before any watch run)."""
    from iolake.lake import arrow
    from schemas import GOLD

    return arrow.read(
        conf.lake.root, GOLD["app_runs"], regressions.history_columns(conf.watch)
    ).to_pandas()


def watch(conf, history: str | None = None) -> pd.DataFrame:
    """The flagged rows of the lake's history, or of the table at `history`."""
    h = read_history(history) if history else lake_history(conf)
    return regressions.find_regressions_conf(h, conf.watch)


def umami_panel_data(
    conf, log_id: str | None = None, app: str | None = None, history: str | None = None
) -> dict:
    """UMAMI panel data for a job (`log_id`, in the lake) or for an application's latest run (`app`):
    `features.regressions.umami_panel` over the runs up to and including the job's start."""
    h = read_history(history) if history else lake_history(conf)
    at = None
    if log_id is not None:
        row = h[h["log_id"] == log_id]
        if row.empty:
            raise KeyError(f"no run {log_id!r} in the history")
        app, at = row["app"].iloc[0], row["start"].iloc[0]
    return regressions.umami_panel(
        h,
        [(m.name, m.worse) for m in conf.watch.metrics],
        regressions.Params.from_conf(conf.watch),
        app=app,
        at=at,
    )


def _show(flagged: pd.DataFrame, limit: int = 30) -> str:
    if flagged.empty:
        return "no regressions"
    f = flagged.sort_values("start", ascending=False).head(limit)
    lines = [
        f"{'start':<20} {'app':<48} {'metric':<16} {'value':>11} {'baseline':>11} {'change':>7} "
        f"{'rule':<9} weather"
    ]
    for r in f.itertuples(index=False):
        weather = (
            "-" if r.weather is None or r.weather != r.weather else ("yes" if r.weather else "no")
        )
        lines.append(
            f"{pd.Timestamp(r.start).strftime('%Y-%m-%d %H:%M'):<20} {str(r.app)[:48]:<48} "
            f"{r.metric:<16} {r.value:>11.4g} {r.baseline:>11.4g} {100 * r.change:>6.0f}% {r.rule:<9} {weather}"
        )
    if len(flagged) > limit:
        lines.append(f"... {len(flagged) - limit} more (--out FILE writes them all)")
    return "\n".join(lines)


def main(conf, history: str | None = None, out: str | None = None) -> int:
    try:
        flagged = watch(conf, history)
    except (ValueError, FileNotFoundError) as e:
        print(f"iolake watch: {e}", file=sys.stderr)
        return 2
    apps = flagged["app"].nunique() if len(flagged) else 0
    weather = int(flagged["weather"].eq(True).sum()) if len(flagged) else 0
    print(
        f"iolake watch: {len(flagged)} regressions in {apps} applications ({weather} with file-system weather), "
        f"rules {', '.join(conf.watch.rules)}; history {history or conf.lake.root + '/gold/app_runs'}"
    )
    print(_show(flagged))
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        flagged.to_csv(out, index=False)
        print(f"iolake watch: wrote {out}")
    return 0
