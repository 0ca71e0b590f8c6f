"""`IOFrame`: PrismIO's analysis API (§IV) over jobs in the lake, or over one trace read directly.

Reads (`from_lake`): bronze/io_ops, files, jobs, posix, mpiio, stdio; silver/covering_sets when
the lake has it, through delta-rs (`iolake.lake.arrow`): no Spark session, no JVM, a local
folder or a URI. `from_darshan` / `from_recorder` decode one trace with the ingest decoders,
no Spark. Every constructor yields the same frames and columns:

- `ops` (OPS_COLUMNS): one row per traced operation (DXT segment or Recorder call) with its
  file's name; `layer` is the interface (posix, stdio, mpiio, hdf5, mpi, other).
- `counters` (COUNTER_COLUMNS): the module tables in long form, one row per
  (log, module, record, rank, op kind read|write|meta): count, bytes and time_s
  (`<M>_READS`/`_BYTES_READ`/`_F_READ_TIME`, writes alike, meta: opens and `<M>_F_META_TIME`);
  POSIX's read and write rows also carry Darshan's `seq_count` / `consec_count`
  (`POSIX_SEQ_READS` / `POSIX_CONSEC_READS`, writes alike; null elsewhere).
- `jobs` (JOB_COLUMNS), `covering` (COVER_COLUMNS; empty unless from a lake with covering sets).

Rules every method follows:
- `rank=` keeps the listed ranks, then `filter=` (a callable on the frame returning a mask, as
  in PrismIO: `filter=lambda x: x["op"] == "read"`) keeps matching rows.
- One layer per file: an MPI-IO file's POSIX operations are the same bytes again, so a file
  counts only the ops of its top layer (mpiio over posix/stdio over hdf5) — likewise counters.
- Times come from the ops where the trace timed them, else from Darshan's counters: a file
  with DXT segments takes read/write time from them and meta time from `<M>_F_META_TIME`;
  Recorder traces time every call, so their counters (roll-ups of the same calls) are never
  used. Filters given to such methods see the counter frame too, so should use the columns
  the two share: log_id, rank, file_name, record_id, op.
- A frame over more than one log puts `log_id` first in every index.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from apps.analysis import patterns
from apps.analysis import timeline as _timeline
from features import dxt_heatmap

OPS_COLUMNS = [
    "log_id",
    "rank",
    "file_name",
    "record_id",
    "source",
    "layer",
    "op",
    "func",
    "offset",
    "length",
    "start_s",
    "end_s",
    "duration_s",
    "seq",
    "thread",
    "hostname",
]
COUNTER_COLUMNS = [
    "log_id",
    "rank",
    "file_name",
    "record_id",
    "module",
    "op",
    "count",
    "bytes",
    "time_s",
    "seq_count",
    "consec_count",
]
JOB_COLUMNS = ["log_id", "nprocs", "run_time_s"]
COVER_COLUMNS = [
    "log_id",
    "rank",
    "record_id",
    "file_name",
    "start_s",
    "end_s",
    "share_s",
    "interval_source",
]
HEATMAP_COLUMNS = ["log_id", "module", "rank", "bin_width_s", "nbins", "read_bytes", "write_bytes"]
DXT_HEATMAP_COLUMNS = ["log_id", "rank", "bin", "start_s", "end_s", "bytes"]
ACTIVITY_COLUMNS = [
    "log_id",
    "source",
    "module",
    "bin",
    "start_s",
    "end_s",
    "read_bytes",
    "write_bytes",
]
DTYPES = {
    "rank": "int64",
    "record_id": "Int64",
    "offset": "Int64",
    "length": "Int64",
    "seq": "Int64",
    "thread": "Int64",
    "count": "Int64",
    "bytes": "Int64",
    "seq_count": "Int64",
    "consec_count": "Int64",
    "nprocs": "Int64",
    "start_s": "float64",
    "end_s": "float64",
    "duration_s": "float64",
    "time_s": "float64",
    "share_s": "float64",
    "run_time_s": "float64",
}

META_OPS = ("open", "close", "sync", "meta", "seek")
KINDS = ("io", "read", "write", "meta")
LEVEL = {"mpiio": 2, "hdf5": 0}  # every other layer: 1
# (count columns, bytes column, time column) per module and op kind
COUNTERS = {
    module: {
        "read": (
            [f"{p}_READS"]
            if module != "mpiio"
            else [f"{p}_{m}_READS" for m in ("INDEP", "COLL", "SPLIT", "NB")],
            f"{p}_BYTES_READ",
            f"{p}_F_READ_TIME",
        ),
        "write": (
            [f"{p}_WRITES"]
            if module != "mpiio"
            else [f"{p}_{m}_WRITES" for m in ("INDEP", "COLL", "SPLIT", "NB")],
            f"{p}_BYTES_WRITTEN",
            f"{p}_F_WRITE_TIME",
        ),
        "meta": (
            [f"{p}_OPENS"] if module != "mpiio" else [f"{p}_INDEP_OPENS", f"{p}_COLL_OPENS"],
            None,
            f"{p}_F_META_TIME",
        ),
    }
    for module, p in (("posix", "POSIX"), ("mpiio", "MPIIO"), ("stdio", "STDIO"))
}
# Darshan's access-pattern counters (seq, consec) per op kind: POSIX keeps them, MPI-IO and STDIO not
ACCESS = {
    "posix": {
        "read": ("POSIX_SEQ_READS", "POSIX_CONSEC_READS"),
        "write": ("POSIX_SEQ_WRITES", "POSIX_CONSEC_WRITES"),
    }
}
SOURCE_TABLES = ("io_ops", "files", "jobs", *COUNTERS, "heatmap")


def _columns(table: str) -> list[str] | None:
    """The columns IOFrame reads of a lake table (None: all)."""
    if table in COUNTERS:
        cols = {c for spec in COUNTERS[table].values() for c in [*spec[0], *spec[1:]] if c}
        cols |= {c for pair in ACCESS.get(table, {}).values() for c in pair}
        return ["log_id", "record_id", "rank", *sorted(cols)]
    return {
        "jobs": ["log_id", "nprocs", "run_time_s"],
        "files": ["log_id", "record_id", "name"],
        "covering_sets": [
            "log_id",
            "rank",
            "record_id",
            "start_s",
            "end_s",
            "share_s",
            "interval_source",
        ],
    }.get(table)


def lake_tables(read) -> dict[str, pa.Table]:
    """The lake tables an IOFrame is made of (`IOFrame.from_tables`' input), each read by
    `read(name, columns)` (columns None: all) — `from_lake` reads them through delta-rs, and
    `iolake report` through its reader, which keeps one log's rows per table for its other
    sections."""
    return {name: read(name, _columns(name)) for name in (*SOURCE_TABLES, "covering_sets")}


def _typed(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    for c in columns:
        if c not in df.columns:
            df[c] = None
    df = df[columns].reset_index(drop=True)
    return df.astype({c: t for c, t in DTYPES.items() if c in columns})


def _layer(source: pd.Series, func: pd.Series) -> pd.Series:
    from readers.recorder_ops import layer

    rec = func.map(lambda f: layer(f) if isinstance(f, str) else "other")
    return source.map({"DXT_POSIX": "posix", "DXT_MPIIO": "mpiio"}).fillna(rec)


def _top_layer(df: pd.DataFrame, layer_col: str) -> pd.DataFrame:
    if df.empty:
        return df
    level = df[layer_col].map(LEVEL).fillna(1)
    top = level.groupby([df["log_id"], df["record_id"]], dropna=False).transform("max")
    return df[level == top]


def _mask(df: pd.DataFrame, rank, filter) -> pd.DataFrame:
    if rank is not None:
        df = df[df["rank"].isin(list(rank))]
    if filter is not None and len(df):
        got = filter(df)
        df = got if isinstance(got, pd.DataFrame) else df[np.asarray(got, dtype=bool)]
    return df


class IOFrame:
    """Trace data of one or more jobs as pandas frames, with PrismIO's analysis methods."""

    def __init__(
        self,
        ops: pd.DataFrame,
        counters: pd.DataFrame,
        jobs: pd.DataFrame,
        covering: pd.DataFrame,
        heatmap: pd.DataFrame | None = None,
    ):
        self.ops, self.counters, self.jobs, self.covering = ops, counters, jobs, covering
        self.heatmap = pd.DataFrame(columns=HEATMAP_COLUMNS) if heatmap is None else heatmap

    # ---- constructors -------------------------------------------------------------------
    @classmethod
    def from_tables(cls, tables: dict[str, pa.Table]) -> IOFrame:
        """From Arrow tables of the bronze schemas (with `log_id`): io_ops, files, jobs, posix,
        mpiio, stdio and optionally covering_sets. Every other constructor ends here."""
        pdf = {
            name: t.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
            for name, t in tables.items()
        }
        names = pdf["files"][["log_id", "record_id", "name"]].drop_duplicates(
            ["log_id", "record_id"]
        )
        names = names.rename(columns={"name": "file_name"})

        def named(df):
            df = df.merge(names, on=["log_id", "record_id"], how="left")
            missing = df["file_name"].isna() & df["record_id"].notna()
            df.loc[missing, "file_name"] = (
                "<record " + df.loc[missing, "record_id"].astype(str) + ">"
            )
            return df

        ops = named(pdf["io_ops"])
        ops["layer"] = _layer(ops["source"], ops["func"])
        ops["duration_s"] = ops["end_s"] - ops["start_s"]
        ops = _typed(ops, OPS_COLUMNS).sort_values(
            ["log_id", "rank", "start_s", "seq"], kind="stable"
        )
        longs = []
        for module, kinds in COUNTERS.items():
            t = pdf.get(module)
            if t is None or t.empty:
                continue
            for kind, (counts, nbytes, time) in kinds.items():
                seq, consec = ACCESS.get(module, {}).get(kind, (None, None))
                longs.append(
                    pd.DataFrame(
                        {
                            "log_id": t["log_id"],
                            "rank": t["rank"],
                            "record_id": t["record_id"],
                            "module": module,
                            "op": kind,
                            "count": sum(t[c] for c in counts),
                            "bytes": t[nbytes]
                            if nbytes
                            else pd.Series(0, index=t.index, dtype="Int64"),
                            "time_s": t[time].astype("float64"),
                            "seq_count": t[seq]
                            if seq
                            else pd.Series(pd.NA, index=t.index, dtype="Int64"),
                            "consec_count": t[consec]
                            if consec
                            else pd.Series(pd.NA, index=t.index, dtype="Int64"),
                        }
                    )
                )
        counters = (
            named(pd.concat(longs, ignore_index=True))
            if longs
            else pd.DataFrame(columns=COUNTER_COLUMNS)
        )
        counters = _typed(counters, COUNTER_COLUMNS).sort_values(
            ["log_id", "record_id", "rank", "module", "op"]
        )
        jobs = _typed(pdf["jobs"], JOB_COLUMNS).sort_values("log_id")
        cover = pdf.get("covering_sets")
        cover = named(cover) if cover is not None else pd.DataFrame(columns=COVER_COLUMNS)
        cover = _typed(cover, COVER_COLUMNS).sort_values(["log_id", "start_s", "rank"])
        heat = pdf.get("heatmap")
        heat = pd.DataFrame(columns=HEATMAP_COLUMNS) if heat is None else heat[HEATMAP_COLUMNS]
        heat = heat.sort_values(["log_id", "module", "rank"])
        return cls(*(f.reset_index(drop=True) for f in (ops, counters, jobs, cover, heat)))

    @classmethod
    def from_frames(
        cls,
        ops: pd.DataFrame | None = None,
        counters: pd.DataFrame | None = None,
        jobs: pd.DataFrame | None = None,
        covering: pd.DataFrame | None = None,
    ) -> IOFrame:
        """From pandas frames already in IOFrame's columns; missing columns are null, `layer` and
        `duration_s` derived when absent (for literal data in tests and notebooks)."""
        ops = pd.DataFrame(columns=OPS_COLUMNS) if ops is None else ops.copy()
        for c, v in (("log_id", "L"), ("source", "RECORDER"), ("func", None)):
            if c not in ops.columns:
                ops[c] = v
        if "layer" not in ops.columns:
            ops["layer"] = _layer(ops["source"], ops["func"])
        if "duration_s" not in ops.columns:
            ops["duration_s"] = ops["end_s"] - ops["start_s"]
        if "seq" not in ops.columns:
            ops["seq"] = range(len(ops))
        frames = [
            (ops, OPS_COLUMNS),
            (counters, COUNTER_COLUMNS),
            (jobs, JOB_COLUMNS),
            (covering, COVER_COLUMNS),
        ]
        out = []
        for df, cols in frames:
            df = pd.DataFrame(columns=cols) if df is None else df.copy()
            if "log_id" not in df.columns:
                df["log_id"] = "L"
            out.append(_typed(df, cols))
        return cls(*out)

    @classmethod
    def from_darshan(cls, path, decoder: str = "native") -> IOFrame:
        """One Darshan log, decoded as ingest decodes it (same `log_id`: the content hash)."""
        from readers.darshan import decode_darshan
        from readers.fsio import content_hash

        tables = decode_darshan(os.fspath(path), decoder)
        return cls.from_tables(_with_log_id(tables, content_hash(os.fspath(path), "darshan")))

    @classmethod
    def from_recorder(cls, folder) -> IOFrame:
        """One Recorder trace folder, decoded as ingest decodes it."""
        from readers.fsio import content_hash
        from readers.recorder import decode_recorder

        tables = decode_recorder(os.fspath(folder)).tables
        return cls.from_tables(_with_log_id(tables, content_hash(os.fspath(folder), "recorder")))

    @classmethod
    def from_lake(
        cls, lake, *args, log_id: str | list[str] | None = None, storage_options: dict | None = None
    ) -> IOFrame:
        """The given log(s) of the lake (a folder or URI; None: every log), read through delta-rs:
        `IOFrame.from_lake(lake, log_id=None)`. Given logs are read from their months' partitions
        only (`arrow.read_logs`: the months looked up in bronze/logs first). The old form
        `from_lake(spark, lake, ...)` still works: its SparkSession (or None) is ignored, with a
        DeprecationWarning."""
        from iolake.lake import arrow
        from schemas import TABLES

        if lake is None or type(lake).__name__ == "SparkSession":
            warnings.warn(
                "IOFrame.from_lake(spark, lake, ...) is deprecated: the lake is read through delta-rs, "
                "without Spark; call IOFrame.from_lake(lake, log_id=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            if not args:
                raise TypeError("IOFrame.from_lake(lake, log_id=None): the lake is missing")
            lake, *args = args
        if args:
            if len(args) > 1 or log_id is not None:
                raise TypeError("IOFrame.from_lake(lake, log_id=None) takes one log_id")
            (log_id,) = args
        ids = (
            [log_id] if isinstance(log_id, str) else (list(log_id) if log_id is not None else None)
        )
        if ids is None:
            return cls.from_tables(
                lake_tables(
                    lambda name, columns: arrow.read(
                        lake, TABLES[name], columns=columns, storage_options=storage_options
                    )
                )
            )
        months = arrow.job_months(lake, ids, storage_options)  # then only those partitions
        return cls.from_tables(
            lake_tables(
                lambda name, columns: arrow.read_logs(
                    lake,
                    TABLES[name],
                    ids,
                    columns=columns,
                    storage_options=storage_options,
                    months=months,
                )
            )
        )

    def __repr__(self) -> str:
        return (
            f"IOFrame({len(self.log_ids)} log(s), {len(self.ops)} ops, "
            f"{self.counters['record_id'].nunique()} counter records)"
        )

    @property
    def log_ids(self) -> list[str]:
        return sorted(
            set(self.jobs["log_id"]) | set(self.ops["log_id"]) | set(self.counters["log_id"])
        )

    # ---- selection ----------------------------------------------------------------------
    def _keys(self, *keys: str) -> list[str]:
        return ["log_id", *keys] if len(self.log_ids) > 1 else list(keys)

    def _data_ops(self, rank, filter) -> pd.DataFrame:
        return _top_layer(_mask(self.ops, rank, filter), "layer")

    def _timed(self, rank, filter) -> pd.DataFrame:
        """(log_id, rank, file_name, record_id, op read|write|meta, bytes, time_s) from ops where
        the trace timed them, else from counters."""
        ops = self._data_ops(rank, filter)
        ops = ops[ops["file_name"].notna()]
        kind = ops["op"].where(
            ops["op"].isin(["read", "write"]), np.where(ops["op"].isin(META_OPS), "meta", None)
        )
        timed = ops.assign(
            op=kind,
            bytes=ops["length"].where(kind.isin(["read", "write"]), 0),
            time_s=ops["duration_s"],
        )
        timed = timed[timed["op"].notna()]
        # which (log, record, kind) the ops cover — decided on all ops, not the filtered ones
        every = self.ops[self.ops["record_id"].notna()]
        recorder_logs = set(every.loc[every["source"] == "RECORDER", "log_id"])
        dxt = set(
            zip(
                every.loc[every["source"] != "RECORDER", "log_id"],
                every.loc[every["source"] != "RECORDER", "record_id"],
            )
        )
        c = _mask(self.counters, rank, filter)
        c = _top_layer(c.assign(layer=c["module"]), "layer")
        covered = c["log_id"].isin(recorder_logs) | (
            c["op"].isin(["read", "write"])
            & pd.Series(
                [k in dxt for k in zip(c["log_id"], c["record_id"])], index=c.index, dtype=bool
            )
        )
        cols = ["log_id", "rank", "file_name", "record_id", "op", "bytes", "time_s"]
        return pd.concat([timed[cols], c.loc[~covered, cols]], ignore_index=True)

    # ---- PrismIO §IV --------------------------------------------------------------------
    def io_bandwidth(self, rank=None, filter=None) -> pd.DataFrame:
        """Bytes / summed I/O time per (rank, file_name) of reads and writes: column `io_bandwidth` (bytes/s)."""
        t = self._timed(rank, filter)
        t = t[t["op"].isin(["read", "write"])]
        g = t.groupby(self._keys("rank", "file_name")).agg(
            bytes=("bytes", "sum"), time_s=("time_s", "sum")
        )
        bw = g["bytes"].astype("float64") / g["time_s"].where(g["time_s"] > 0)
        return bw.rename("io_bandwidth").to_frame()

    def io_time(self, rank=None, filter=None, kind: str = "io") -> pd.DataFrame:
        """Time in `kind` ops (io = read + write + meta) per (file_name, rank), as PrismIO §IV-B
        defines `io_time` (Fig. 3: `<kind> time`, `rank time`, `percentage`):

        - `rank time`: the rank's run time (wall clock), and `percentage` = `<kind> time` /
          `rank time` as a fraction — PrismIO's reference code divides by the rank's wall time
          (its Recorder reader's end - start timestamp of the rank). The lake keeps one run
          time per job (bronze/jobs.run_time_s: Darshan records one start and end per job, and
          ingest keeps Recorder's earliest start and latest end of any rank), so every rank of a
          job, and rank -1 (records Darshan reduced over all ranks), has the job's run time.
        - `rank io time`: the rank's time in all its I/O (the rank= selection applies, filter=
          not) and `io share` = `<kind> time` / `rank io time`: the share of the rank's I/O time
          (iolake's own measure, beside the paper's)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        t = self._timed(rank, filter)
        if kind != "io":
            t = t[t["op"] == kind]
        label = f"{kind} time"
        out = (
            t.groupby(["log_id", "file_name", "rank"])["time_s"]
            .sum()
            .rename(label)
            .to_frame()
            .reset_index()
        )
        run = dict(zip(self.jobs["log_id"], self.jobs["run_time_s"]))
        out["rank time"] = out["log_id"].map(run).astype("float64")
        out["percentage"] = out[label] / out["rank time"].where(out["rank time"] > 0)
        io = (
            self._timed(rank, None)
            .groupby(["log_id", "rank"])["time_s"]
            .sum()
            .rename("rank io time")
        )
        out = out.merge(io.reset_index(), on=["log_id", "rank"], how="left")
        out["io share"] = out[label] / out["rank io time"].where(out["rank io time"] > 0)
        cols = [label, "rank time", "percentage", "rank io time", "io share"]
        return out.set_index(self._keys("file_name", "rank"))[cols]

    def shared_files(self, rank=None, filter=None) -> pd.DataFrame:
        """Ranks touching each file (ops and counter records; rank -1 = all of the job's ranks)."""
        seen = pd.concat(
            [
                _mask(df, rank, filter)[["log_id", "file_name", "rank"]]
                for df in (self.ops, self.counters)
            ],
            ignore_index=True,
        )
        seen = seen[seen["file_name"].notna()]
        nprocs = dict(zip(self.jobs["log_id"], self.jobs["nprocs"]))
        lists = {
            key: _ranks(g, nprocs) for key, g in seen.groupby(["log_id", "file_name"], sort=True)
        }
        index = pd.MultiIndex.from_tuples(list(lists), names=["log_id", "file_name"])
        out = pd.DataFrame({"ranks sharing the file": list(lists.values())}, index=index)
        if len(self.log_ids) <= 1:
            out.index = out.index.droplevel(0)
        out["num ranks"] = out["ranks sharing the file"].map(len).astype("int64")
        return out.sort_index()

    def access_pattern(self, rank=None, filter=None, definition: str = "prismio") -> pd.DataFrame:
        """consecutive / sequential / random / total accesses per file (PrismIO §IV-C, Fig. 5).

        `definition` (rules in `patterns`):
        - "prismio": PrismIO's — the file's reads and writes in trace order (rank by rank, each
          rank's ops in issue order), offset + size of the previous op == offset is consecutive,
          < offset sequential, else random; total = ops - 1.
        - "darshan": Darshan's POSIX SEQ / CONSEC counters, summed over the file's records
          (files without POSIX records have no row; needs no DXT).
        - "per_rank": iolake's own, per rank and direction in time order, sequential meaning
          after the previous op's start (features/file_features.py's rule)."""
        if definition not in patterns.ACCESS_DEFINITIONS:
            raise ValueError(
                f"definition must be one of {patterns.ACCESS_DEFINITIONS}, not {definition!r}"
            )
        keys = self._keys("file_name")
        if definition == "darshan":
            c = _mask(self.counters, rank, filter)
            c = c[
                (c["module"] == "posix") & c["op"].isin(["read", "write"]) & c["file_name"].notna()
            ]
            out = patterns.darshan_access_counts(
                c.fillna({"count": 0, "seq_count": 0, "consec_count": 0}), keys
            )
        else:
            ops = self._data_ops(rank, filter)
            ops = ops[
                ops["op"].isin(["read", "write"]) & ops["offset"].notna() & ops["length"].notna()
            ]
            count = (
                patterns.prismio_access_counts
                if definition == "prismio"
                else patterns.access_counts
            )
            out = count(ops, keys)
        return out if len(out) else _empty(keys, patterns.ACCESS_COLUMNS)

    def readwrite_pattern(self, rank=None, filter=None) -> pd.DataFrame:
        """Bytes read or written after a read or a write of the same bytes, per file: RAR RAW WAR
        WAW (each byte classified by the last earlier op that touched it, across ranks in time
        order), `read` / `write` = all bytes the file's reads / writes moved (PrismIO §IV-C Fig. 6's
        columns, totals as its reference code sums them), and `first read` / `first write` =
        bytes nobody touched before (RAR + RAW + first read = read; see `patterns`)."""
        ops = self._data_ops(rank, filter)
        ops = ops[ops["op"].isin(["read", "write"]) & ops["offset"].notna() & (ops["length"] > 0)]
        out = patterns.readwrite_table(ops, self._keys("file_name"))
        return out if len(out) else _empty(self._keys("file_name"), patterns.RW_COLUMNS)

    def activity(self) -> pd.DataFrame:
        """Bytes read and written over the job's time, per log and module, in time bins:
        (log_id, source, module, bin, start_s, end_s, read_bytes, write_bytes).

        `source` says where the timing came from: `dxt` / `recorder` where the trace timed each
        operation (an op's bytes go to the bin its start falls in), else `heatmap` (Darshan 3.4+'s
        HEATMAP module summed over ranks: what production logs without DXT carry, and what
        pydarshan's job summary draws). Bins are the log's HEATMAP bins where it has them, else 100
        bins over the job's run time. A log with neither has no rows (counters carry no time).

        HEATMAP rows of different bin widths (Darshan coarsens a rank's bins when its run outgrows
        them) are re-binned to the widest width before they are summed (`timeline.rebin`, after
        darshan-runtime's `collapse_heatmap`; pydarshan's `Heatmap.add_record` refuses such rows),
        so every bin is labelled with the width it holds."""
        out = []
        for log_id in self.log_ids:
            heat = self.heatmap[self.heatmap["log_id"] == log_id]
            width = _timeline.common_bins(heat)[0] if len(heat) else None
            ops = self.ops[
                (self.ops["log_id"] == log_id)
                & self.ops["op"].isin(["read", "write"])
                & self.ops["length"].notna()
                & self.ops["start_s"].notna()
            ]
            if len(ops):
                run = self.jobs.loc[self.jobs["log_id"] == log_id, "run_time_s"]
                end = max(
                    float(ops["end_s"].max()),
                    float(run.iloc[0]) if len(run) and pd.notna(run.iloc[0]) else 0.0,
                )
                width = width or max(end, 1e-9) / 100
                b = (ops["start_s"].astype(float) // width).astype("int64").clip(lower=0)
                moved = ops["length"].astype("int64").clip(lower=0)
                df = pd.DataFrame(
                    {
                        "module": ops["layer"].str.upper(),
                        "bin": b,
                        "read_bytes": moved.where(ops["op"] == "read", 0),
                        "write_bytes": moved.where(ops["op"] == "write", 0),
                        "source": np.where(ops["source"] == "RECORDER", "recorder", "dxt"),
                    }
                )
                df = df.groupby(["source", "module", "bin"], as_index=False)[
                    ["read_bytes", "write_bytes"]
                ].sum()
            elif len(heat):
                width, n = _timeline.common_bins(heat)
                rows = []
                for module, g in heat.groupby("module"):
                    rd, wr = np.zeros(n, dtype="int64"), np.zeros(n, dtype="int64")
                    for w, r, wb in zip(g["bin_width_s"], g["read_bytes"], g["write_bytes"]):
                        rd += _timeline.rebin(r, float(w), width, n)
                        wr += _timeline.rebin(wb, float(w), width, n)
                    rows.append(
                        pd.DataFrame(
                            {
                                "source": "heatmap",
                                "module": module,
                                "bin": np.arange(n),
                                "read_bytes": rd,
                                "write_bytes": wr,
                            }
                        )
                    )
                df = pd.concat(rows, ignore_index=True)
            else:
                continue
            df["log_id"], df["start_s"], df["end_s"] = (
                log_id,
                df["bin"] * width,
                (df["bin"] + 1) * width,
            )
            out.append(df)
        if not out:
            return pd.DataFrame(columns=ACTIVITY_COLUMNS)
        return (
            pd.concat(out, ignore_index=True)[ACTIVITY_COLUMNS]
            .sort_values(["log_id", "module", "bin"])
            .reset_index(drop=True)
        )

    def dxt_heatmap(
        self,
        bins: int = dxt_heatmap.DEFAULT_BINS,
        module: str = "DXT_POSIX",
        ops=("read", "write"),
        max_time: float | str = "run_time",
    ) -> pd.DataFrame:
        """pydarshan's DXT heat map (features/dxt_heatmap.py, after heatmap_handling.py's
        `get_heatmap_df`): the bytes each rank moved in each of `bins` time bins over
        [0, max_time], each DXT segment of `module` ('DXT_POSIX' or 'DXT_MPIIO') whose op is in
        `ops` split over the bins it spans in proportion to time. `max_time`: "run_time" (the
        job's, as pydarshan's job summary draws it), "last_segment" (the largest segment end, as
        `get_heatmap_df` without max_time) or seconds. One row per (log_id, rank, bin) with the
        bin's `start_s` / `end_s`, every rank 0..nprocs-1 and every bin (0 where nothing moved);
        `.pivot(index="rank", columns="bin", values="bytes")` is pydarshan's matrix. A log
        without such segments has no rows."""
        out = []
        for log_id in self.log_ids:
            ops_ = self.ops[self.ops["log_id"] == log_id]
            segs = dxt_heatmap.segments(ops_, module, ops)
            if not len(segs):
                continue
            job = self.jobs[self.jobs["log_id"] == log_id]
            nprocs = (
                int(job["nprocs"].iloc[0]) if len(job) and pd.notna(job["nprocs"].iloc[0]) else None
            )
            if nprocs is None:
                nprocs = int(segs["rank"].max()) + 1
            if max_time == "run_time":
                until = float(job["run_time_s"].iloc[0]) if len(job) else float("nan")
            elif max_time == "last_segment":
                until = float(segs["end_time"].max())
            else:
                until = float(max_time)
            matrix = dxt_heatmap.heatmap(segs, bins, nprocs, until)
            edges = dxt_heatmap.bin_edges(bins, until)
            rank, b = np.divmod(np.arange(matrix.size), matrix.shape[1])
            out.append(
                pd.DataFrame(
                    {
                        "log_id": log_id,
                        "rank": rank,
                        "bin": b,
                        "start_s": edges[:-1][b],
                        "end_s": edges[1:][b],
                        "bytes": matrix.ravel(),
                    }
                )
            )
        if not out:
            return pd.DataFrame(columns=DXT_HEATMAP_COLUMNS)
        return pd.concat(out, ignore_index=True)[DXT_HEATMAP_COLUMNS]

    @property
    def timeline_source(self) -> str | None:
        """What `timeline` draws: `dxt` / `recorder` (the ops' source), `heatmap`, or None (nothing timed)."""
        if len(self.ops):
            return "recorder" if (self.ops["source"] == "RECORDER").all() else "dxt"
        return "heatmap" if len(self.heatmap) else None

    def timeline(
        self, path, highlight_covering: bool = True, rank=None, filter=None, title=None
    ) -> str:
        """Save a PNG of every op as a bar on its rank's row, coloured read / write / meta / other;
        covering-set members (silver/covering_sets) outlined. Returns `path`. Past
        `timeline.MAX_RANK_ROWS` ranks the rows would be thinner than a pixel: the ops are drawn as
        a matrix of rank groups by time bins with the ranks in I/O over time on top and each rank's
        I/O time at the side (`timeline.draw_busy`). A log with no timed ops but a HEATMAP
        (production logs without DXT) gets the HEATMAP drawn instead, the same way, coloured by
        the bytes moved (`timeline_source` says which was drawn)."""
        draw, kwargs = self.timeline_call(highlight_covering, rank, filter, title)
        return draw(path=os.fspath(path), **kwargs)

    def timeline_call(
        self, highlight_covering: bool = True, rank=None, filter=None, title=None
    ) -> tuple[Callable[..., str], dict]:
        """What `timeline` draws, as (function, keyword arguments but `path`): the data chosen
        here, the drawing left to the caller (`iolake report` draws it beside its other figures,
        apps/drawing.py)."""
        if len(self.log_ids) > 1:
            raise ValueError("timeline draws one job; build the IOFrame with one log_id")
        if self.timeline_source == "heatmap":
            heat = (
                self.heatmap
                if rank is None
                else self.heatmap[self.heatmap["rank"].isin(list(rank))]
            )
            title = title or (
                f"log {self.log_ids[0][:12]} · HEATMAP" if self.log_ids else "HEATMAP"
            )
            return _timeline.draw_heatmap, {"heatmap": heat, "title": title}
        ops = _mask(self.ops, rank, filter)
        cover = self.covering if highlight_covering and len(self.covering) else None
        if cover is not None and rank is not None:
            cover = cover[cover["rank"].isin(list(rank)) | (cover["rank"] == -1)]
        title = title or (f"log {self.log_ids[0][:12]}" if self.log_ids else None)
        return _timeline.draw, {"ops": ops, "covering": cover, "title": title}


def _ranks(g: pd.DataFrame, nprocs: dict) -> list[int]:
    rs = {int(r) for r in g["rank"]}
    n = nprocs.get(g["log_id"].iloc[0], pd.NA)
    if -1 in rs and not pd.isna(n):
        rs = (rs - {-1}) | set(range(int(n)))
    return sorted(rs)


def _empty(keys: list[str], columns: list[str]) -> pd.DataFrame:
    index = (
        pd.MultiIndex.from_tuples([], names=keys) if len(keys) > 1 else pd.Index([], name=keys[0])
    )
    return pd.DataFrame(index=index, columns=columns, dtype="int64")


def _with_log_id(tables: dict[str, pa.Table], log_id: str) -> dict[str, pa.Table]:
    out = {}
    for name in SOURCE_TABLES:
        t = tables.get(name)
        if t is None:
            from schemas import TABLES

            t = TABLES[name].decoded_arrow_schema.empty_table()
        out[name] = t.append_column("log_id", pa.array([log_id] * t.num_rows, pa.string()))
    return out
