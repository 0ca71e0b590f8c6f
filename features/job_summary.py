"""The sections of pydarshan's job summary, per log, as Spark frames (the SQL views) and pandas
frames (the report, which runs without Spark). One spec per section, two executors.

Reads the bronze module tables (posix, mpiio, stdio, h5f, h5d, pnetcdf_file, pnetcdf_var, dfs,
daos), bronze/jobs (`nprocs`) and bronze/files (`name`); writes nothing. apps/views.py registers
the Spark frames as the views `io_cost`, `file_categories`, `access_sizes`, `common_access_sizes`,
`op_counts` and `data_access_by_root`; apps/report.py draws the pandas frames. Every record of a
module counts, a shared record (rank -1, reduced over ranks) as one record, as pydarshan's code
adds them; a missing counter counts 0. The definitions are pydarshan 3.5.0's
(darshan-hpc/darshan, darshan-util/pydarshan/darshan/):

- `io_cost` (experimental/plots/plot_io_cost.py, `get_io_cost_df` / `get_by_avg_series`): per
  (log, module) the sums over records of `<M>_F_READ_TIME`, `<M>_F_WRITE_TIME`, `<M>_F_META_TIME`
  (and `PNETCDF_FILE_F_WAIT_TIME` as the wait) divided by the job's nprocs: seconds per process.
  H5F and H5D are one module `HDF5`, PNETCDF_FILE and PNETCDF_VAR one `PNETCDF`
  (`combine_hdf5_modules`, `combine_pnetcdf_modules`). iolake adds `bytes_read` /
  `bytes_written` (`<M>_BYTES_READ` / `_WRITTEN` summed; HDF5's from H5D, PNETCDF's from
  PNETCDF_VAR: the file-level module would count the same bytes twice).
- `file_categories` (lib/accum.py `log_file_count_summary_table`, over darshan-util's
  accumulator `darshan_accumulator_emit`, as features/derived_metrics.py): per (log, module of
  POSIX, MPI-IO, STDIO, DFS, DAOS, category) with category `all`, `read_only`, `write_only`,
  `read_write`: the file count, bytes read and written, and the sizes estimated from the largest
  byte offset (`avg_size_bytes` = (sum of max offsets + count) / count, `max_size_bytes` = max
  offset + 1; null when the module reports no offsets: MPI-IO, DFS, DAOS).
- `access_sizes` (experimental/plots/plot_access_histogram.py over
  experimental/aggregators/mod_agg_iohist.py): per (log, module of POSIX, MPI-IO, H5D,
  PNETCDF_VAR, DFS, DAOS, direction, bin) the sum of `<M>_SIZE_READ_*` / `<M>_SIZE_WRITE_*`
  (`_AGG_` for MPI-IO, H5D, PNETCDF_VAR), bins labelled as pydarshan's axis (`0-100` ... `1G+`).
- `common_access_sizes` (experimental/plots/plot_common_access_table.py): the four slots
  `<M>_ACCESS{1..4}_ACCESS` / `_COUNT` of every record, a slot dropped when both its size and
  count are 0 (`remove_nonzero_rows`), counts summed per size over records
  (`combine_access_sizes`), ranked by count (`rank` 1 the most common; pydarshan sorts by count
  only, an unstable sort, so iolake breaks ties by the smaller size). The page shows ranks 1-4.
- `op_counts` (experimental/plots/plot_opcounts.py `gather_count_data` over
  aggregators/agg_ioops.py): per (log, module, operation) the bars of pydarshan's figure in its
  order (`position`), each a sum of counters, e.g. POSIX `Fsync` = FSYNCS + FDSYNCS, H5D's figure
  with H5F's opens and flushes, PNETCDF_VAR's with PNETCDF_FILE's. POSIX `Mmap` is
  `POSIX_MMAPS` summed (pydarshan draws 0, marked "faulty?"); a negative sum counts 0.
- `data_access_by_root` (experimental/plots/data_access_by_filesystem.py): the POSIX and STDIO
  records; a file's root is the first two parts of its path joined (`/scratch/a/b` ->
  `/scratch`, `<STDOUT>` -> `<STDOUT>`, a path starting `//` -> `/`, all digits ->
  `anonymized (N)`; `convert_file_path_to_root_path`); per (log, root): `bytes_read` /
  `bytes_written` summed over records with at least one byte read / written, `files_read` /
  `files_written` the distinct paths among them, and `files` every path of the root in a POSIX
  or STDIO record (pydarshan's list of roots).
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# Darshan module -> bronze table, counter prefix
TABLE = {
    "POSIX": "posix",
    "MPI-IO": "mpiio",
    "STDIO": "stdio",
    "H5F": "h5f",
    "H5D": "h5d",
    "PNETCDF_FILE": "pnetcdf_file",
    "PNETCDF_VAR": "pnetcdf_var",
    "DFS": "dfs",
    "DAOS": "daos",
}
PREFIX = {m: ("MPIIO" if m == "MPI-IO" else m) for m in TABLE}

# io_cost: the module each Darshan module's time goes to, in pydarshan's figure order
IO_COST_MODULE = {
    "POSIX": "POSIX",
    "MPI-IO": "MPI-IO",
    "STDIO": "STDIO",
    "H5F": "HDF5",
    "H5D": "HDF5",
    "PNETCDF_FILE": "PNETCDF",
    "PNETCDF_VAR": "PNETCDF",
    "DFS": "DFS",
    "DAOS": "DAOS",
}
IO_COST_BYTES = ("POSIX", "MPI-IO", "STDIO", "H5D", "PNETCDF_VAR", "DFS", "DAOS")
IO_COST_COLUMNS = (
    "read_time_s",
    "write_time_s",
    "meta_time_s",
    "wait_time_s",
    "bytes_read",
    "bytes_written",
)

# access_sizes: the size bins, counter suffix -> pydarshan's axis label
SIZE_BINS = (
    ("0_100", "0-100"),
    ("100_1K", "101-1K"),
    ("1K_10K", "1K-10K"),
    ("10K_100K", "10K-100K"),
    ("100K_1M", "100K-1M"),
    ("1M_4M", "1M-4M"),
    ("4M_10M", "4M-10M"),
    ("10M_100M", "10M-100M"),
    ("100M_1G", "100M-1G"),
    ("1G_PLUS", "1G+"),
)
HIST_MODULES = ("POSIX", "MPI-IO", "H5D", "PNETCDF_VAR", "DFS", "DAOS")
AGG_SIZES = {"MPI-IO", "H5D", "PNETCDF_VAR"}  # modules whose bins count aggregate datatype sizes

# op_counts: module -> bars of pydarshan's figure: (label, [(module, counter), ...] summed)
_H5 = [
    ("H5D Read", [("H5D", "H5D_READS")]),
    ("H5D Write", [("H5D", "H5D_WRITES")]),
    ("H5D Open", [("H5D", "H5D_OPENS")]),
    ("H5D Flush", [("H5D", "H5D_FLUSHES")]),
    ("H5F Open", [("H5F", "H5F_OPENS")]),
    ("H5F Flush", [("H5F", "H5F_FLUSHES")]),
]
_NC_FILE = [
    (
        "File Open",
        [("PNETCDF_FILE", "PNETCDF_FILE_OPENS"), ("PNETCDF_FILE", "PNETCDF_FILE_CREATES")],
    ),
    ("File Sync", [("PNETCDF_FILE", "PNETCDF_FILE_SYNCS")]),
    ("File Ind Waits", [("PNETCDF_FILE", "PNETCDF_FILE_INDEP_WAITS")]),
    ("File Coll Waits", [("PNETCDF_FILE", "PNETCDF_FILE_COLL_WAITS")]),
]
_NC_VAR = [
    (label, [("PNETCDF_VAR", f"PNETCDF_VAR_{c}")])
    for label, c in (
        ("Var Ind Read", "INDEP_READS"),
        ("Var Ind Write", "INDEP_WRITES"),
        ("Var Open", "OPENS"),
        ("Var Coll Read", "COLL_READS"),
        ("Var Coll Write", "COLL_WRITES"),
        ("Var NB Read", "NB_READS"),
        ("Var NB Write", "NB_WRITES"),
    )
]


def _own(module: str, pairs) -> list:
    return [(label, [(module, f"{PREFIX[module]}_{c}") for c in cs]) for label, cs in pairs]


OP_COUNTS: dict[str, list] = {
    "POSIX": _own(
        "POSIX",
        [
            ("Read", ["READS"]),
            ("Write", ["WRITES"]),
            ("Open", ["OPENS"]),
            ("Stat", ["STATS"]),
            ("Seek", ["SEEKS"]),
            ("Mmap", ["MMAPS"]),
            ("Fsync", ["FSYNCS", "FDSYNCS"]),
        ],
    ),
    "MPI-IO": _own(
        "MPI-IO",
        [
            ("Ind. Read", ["INDEP_READS"]),
            ("Ind. Write", ["INDEP_WRITES"]),
            ("Ind. Open", ["INDEP_OPENS"]),
            ("Col. Read", ["COLL_READS"]),
            ("Col. Write", ["COLL_WRITES"]),
            ("Col. Open", ["COLL_OPENS"]),
            ("Sync", ["SYNCS"]),
        ],
    ),
    "STDIO": _own(
        "STDIO",
        [
            ("Read", ["READS"]),
            ("Write", ["WRITES"]),
            ("Open", ["OPENS"]),
            ("Seek", ["SEEKS"]),
            ("Flush", ["FLUSHES"]),
        ],
    ),
    # pydarshan's H5F figure shows only H5F's own bars, H5D's shows H5F's too
    "H5F": [(label, cs if label.startswith("H5F") else []) for label, cs in _H5],
    "H5D": _H5,
    "PNETCDF_FILE": [(label, []) for label, _ in _NC_VAR] + _NC_FILE,
    "PNETCDF_VAR": _NC_VAR + _NC_FILE,
    "DFS": _own(
        "DFS",
        [
            (label, [c])
            for label, c in (
                ("Read", "READS"),
                ("Readx", "READXS"),
                ("Write", "WRITES"),
                ("Writex", "WRITEXS"),
                ("Open", "OPENS"),
                ("GlobalOpen", "GLOBAL_OPENS"),
                ("Lookup", "LOOKUPS"),
                ("GetSize", "GET_SIZES"),
                ("Punch", "PUNCHES"),
                ("Remove", "REMOVES"),
                ("Stat", "STATS"),
            )
        ],
    ),
    "DAOS": _own(
        "DAOS",
        [
            (label, [c])
            for label, c in (
                ("ObjFetch", "OBJ_FETCHES"),
                ("ObjUpdate", "OBJ_UPDATES"),
                ("ObjOpen", "OBJ_OPENS"),
                ("ObjPunch", "OBJ_PUNCHES"),
                ("ObjDkeyPunch", "OBJ_DKEY_PUNCHES"),
                ("ObjAkeyPunch", "OBJ_AKEY_PUNCHES"),
                ("ObjDkeyList", "OBJ_DKEY_LISTS"),
                ("ObjAkeyList", "OBJ_AKEY_LISTS"),
                ("ObjRecxList", "OBJ_RECX_LISTS"),
                ("ArrRead", "ARRAY_READS"),
                ("ArrWrite", "ARRAY_WRITES"),
                ("ArrOpen", "ARRAY_OPENS"),
                ("ArrGetSize", "ARRAY_GET_SIZES"),
                ("ArrSetSize", "ARRAY_SET_SIZES"),
                ("ArrStat", "ARRAY_STATS"),
                ("ArrPunch", "ARRAY_PUNCHES"),
                ("ArrDestroy", "ARRAY_DESTROYS"),
                ("KVGet", "KV_GETS"),
                ("KVPut", "KV_PUTS"),
                ("KVOpen", "KV_OPENS"),
                ("KVRemove", "KV_REMOVES"),
                ("KVList", "KV_LISTS"),
                ("KVDestroy", "KV_DESTROYS"),
            )
        ],
    ),
}

CATEGORY_MODULES = ("POSIX", "MPI-IO", "STDIO", "DFS", "DAOS")
OFFSET_MODULES = {"POSIX", "STDIO"}  # modules with MAX_BYTE_READ / MAX_BYTE_WRITTEN
CATEGORIES = ("all", "read_only", "write_only", "read_write")
ROOT_MODULES = ("POSIX", "STDIO")


def filesystem_root(path: str | None) -> str | None:
    """pydarshan's file-system root of a path (`convert_file_path_to_root_path`): the first two
    parts of the path joined, `/` for a path starting `//`, `anonymized (N)` for digits."""
    if path is None:
        return None
    root = "".join(PurePosixPath(path).parts[:2])
    if root.isdigit():
        return f"anonymized ({root})"
    if root.startswith("//"):
        return "/"
    return root


# ---- the counters each section sums ------------------------------------------------------
def _io_cost_terms(module: str) -> dict[str, str]:
    p = PREFIX[module]
    terms = {
        "read_time_s": f"{p}_F_READ_TIME",
        "write_time_s": f"{p}_F_WRITE_TIME",
        "meta_time_s": f"{p}_F_META_TIME",
    }
    if module == "PNETCDF_FILE":
        terms["wait_time_s"] = "PNETCDF_FILE_F_WAIT_TIME"
    if module in IO_COST_BYTES:
        terms["bytes_read"] = f"{p}_BYTES_READ"
        terms["bytes_written"] = f"{p}_BYTES_WRITTEN"
    return terms


def _size_counter(module: str, direction: str, suffix: str) -> str:
    agg = "_AGG" if module in AGG_SIZES else ""
    return f"{PREFIX[module]}_SIZE_{direction.upper()}{agg}_{suffix}"


# ---- pandas: the report's path (one or several logs) ---------------------------------------
def _num(df: pd.DataFrame, col: str) -> pd.Series:
    if col not in df.columns:
        return pd.Series(0, index=df.index, dtype="float64")
    return pd.to_numeric(df[col], errors="coerce").fillna(0)


def pd_io_cost(modules: dict[str, pd.DataFrame], nprocs: dict[str, int]) -> pd.DataFrame:
    """`io_cost` of the logs in `modules` (Darshan module -> its bronze rows) with `nprocs`
    (log_id -> processes)."""
    parts = []
    for module, rows in modules.items():
        if module not in IO_COST_MODULE or rows is None or rows.empty:
            continue
        sums = pd.DataFrame({"log_id": rows["log_id"]})
        for col in IO_COST_COLUMNS:
            counter = _io_cost_terms(module).get(col)
            sums[col] = _num(rows, counter) if counter else 0.0
        sums = sums.groupby("log_id", as_index=False).sum()
        sums["module"] = IO_COST_MODULE[module]
        parts.append(sums)
    cols = ["log_id", "module", *IO_COST_COLUMNS]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts).groupby(["log_id", "module"], as_index=False, sort=False).sum()
    n = out["log_id"].map(nprocs).astype("float64")
    for col in ("read_time_s", "write_time_s", "meta_time_s", "wait_time_s"):
        out[col] = out[col].astype("float64") / n
    for col in ("bytes_read", "bytes_written"):
        out[col] = out[col].astype("int64")
    return out[cols]


def pd_access_sizes(modules: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """`access_sizes`: one row per (log, module, direction, bin)."""
    rows_out = []
    for module in HIST_MODULES:
        rows = modules.get(module)
        if rows is None or rows.empty:
            continue
        for log_id, g in rows.groupby("log_id"):
            for direction in ("read", "write"):
                for i, (suffix, label) in enumerate(SIZE_BINS):
                    n = _num(g, _size_counter(module, direction, suffix)).sum()
                    rows_out.append((log_id, module, direction, i, label, int(n)))
    return pd.DataFrame(
        rows_out, columns=["log_id", "module", "direction", "bin", "bin_label", "count"]
    )


def pd_common_access_sizes(modules: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """`common_access_sizes`: every access size with its count, ranked per (log, module)."""
    parts = []
    for module in HIST_MODULES:
        rows = modules.get(module)
        if rows is None or rows.empty:
            continue
        p = PREFIX[module]
        for i in range(1, 5):
            slot = pd.DataFrame(
                {
                    "log_id": rows["log_id"],
                    "access_size": _num(rows, f"{p}_ACCESS{i}_ACCESS").astype("int64"),
                    "count": _num(rows, f"{p}_ACCESS{i}_COUNT").astype("int64"),
                }
            )
            slot["module"] = module
            parts.append(slot[(slot["access_size"] != 0) | (slot["count"] != 0)])
    cols = ["log_id", "module", "access_size", "count", "rank"]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts).groupby(["log_id", "module", "access_size"], as_index=False)["count"]
    out = out.sum().sort_values(
        ["log_id", "module", "count", "access_size"], ascending=[True, True, False, True]
    )
    out["rank"] = out.groupby(["log_id", "module"]).cumcount() + 1
    return out[cols].reset_index(drop=True)


def pd_op_counts(modules: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """`op_counts`: one row per (log, module, operation) for each module with records."""
    logs_of = {m: set(r["log_id"]) for m, r in modules.items() if r is not None and not r.empty}
    sums: dict[tuple, float] = {}

    def total(log_id: str, module: str, counter: str) -> float:
        key = (log_id, module, counter)
        if key not in sums:
            rows = modules.get(module)
            sums[key] = (
                0.0
                if rows is None or rows.empty
                else float(_num(rows[rows["log_id"] == log_id], counter).sum())
            )
        return sums[key]

    out = []
    for module, bars in OP_COUNTS.items():
        for log_id in sorted(logs_of.get(module, ())):
            for pos, (label, terms) in enumerate(bars):
                n = sum(total(log_id, m, c) for m, c in terms)
                out.append((log_id, module, pos, label, max(int(n), 0)))
    return pd.DataFrame(out, columns=["log_id", "module", "position", "operation", "count"])


def pd_file_categories(modules: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """`file_categories`: per (log, module, category) counts, bytes and estimated sizes."""
    out = []
    for module in CATEGORY_MODULES:
        rows = modules.get(module)
        if rows is None or rows.empty:
            continue
        p = PREFIX[module]
        rec = pd.DataFrame(
            {
                "log_id": rows["log_id"],
                "record_id": rows["record_id"],
                "r": _num(rows, f"{p}_BYTES_READ").astype("int64"),
                "w": _num(rows, f"{p}_BYTES_WRITTEN").astype("int64"),
            }
        )
        if module in OFFSET_MODULES:
            rec["off"] = (
                pd.concat(
                    [_num(rows, f"{p}_MAX_BYTE_READ"), _num(rows, f"{p}_MAX_BYTE_WRITTEN")],
                    axis=1,
                )
                .max(axis=1)
                .astype("int64")
            )
        else:
            rec["off"] = -1
        files = rec.groupby(["log_id", "record_id"], as_index=False).agg(
            r=("r", "sum"), w=("w", "sum"), off=("off", "max")
        )
        if module in OFFSET_MODULES:
            files["off"] = files["off"].clip(lower=0)
        for log_id, g in files.groupby("log_id"):
            member = {
                "all": g.index == g.index,
                "read_only": (g["r"] > 0) & (g["w"] == 0),
                "write_only": (g["w"] > 0) & (g["r"] == 0),
                "read_write": (g["r"] > 0) & (g["w"] > 0),
            }
            for cat in CATEGORIES:
                f = g[member[cat]]
                n = len(f)
                sized = n > 0 and module in OFFSET_MODULES
                out.append(
                    (
                        log_id,
                        module,
                        cat,
                        n,
                        int(f["r"].sum()),
                        int(f["w"].sum()),
                        (int(f["off"].sum()) + n) / n if sized else None,
                        int(f["off"].max()) + 1 if sized else None,
                    )
                )
    return pd.DataFrame(
        out,
        columns=[
            "log_id",
            "module",
            "category",
            "files",
            "bytes_read",
            "bytes_written",
            "avg_size_bytes",
            "max_size_bytes",
        ],
    )


def pd_data_access_by_root(modules: dict[str, pd.DataFrame], names: pd.DataFrame) -> pd.DataFrame:
    """`data_access_by_root`: per (log, file-system root); `names` is bronze/files (log_id,
    record_id, name)."""
    parts = []
    for module in ROOT_MODULES:
        rows = modules.get(module)
        if rows is None or rows.empty:
            continue
        p = PREFIX[module]
        parts.append(
            pd.DataFrame(
                {
                    "log_id": rows["log_id"],
                    "record_id": rows["record_id"],
                    "r": _num(rows, f"{p}_BYTES_READ").astype("int64"),
                    "w": _num(rows, f"{p}_BYTES_WRITTEN").astype("int64"),
                }
            )
        )
    cols = [
        "log_id",
        "filesystem_root",
        "bytes_read",
        "bytes_written",
        "files_read",
        "files_written",
        "files",
    ]
    if not parts:
        return pd.DataFrame(columns=cols)
    rec = pd.concat(parts).merge(
        names[["log_id", "record_id", "name"]], on=["log_id", "record_id"], how="inner"
    )
    rec["filesystem_root"] = rec["name"].map(filesystem_root)
    rec["rd"] = rec["r"].where(rec["r"] >= 1, 0)
    rec["wr"] = rec["w"].where(rec["w"] >= 1, 0)
    rec["name_r"] = rec["name"].where(rec["r"] >= 1)
    rec["name_w"] = rec["name"].where(rec["w"] >= 1)
    out = rec.groupby(["log_id", "filesystem_root"], as_index=False).agg(
        bytes_read=("rd", "sum"),
        bytes_written=("wr", "sum"),
        files_read=("name_r", "nunique"),
        files_written=("name_w", "nunique"),
        files=("name", "nunique"),
    )
    out["total"] = out["bytes_read"] + out["bytes_written"]
    out = out.sort_values(["log_id", "total", "filesystem_root"], ascending=[True, False, True])
    return out[cols].reset_index(drop=True)


# ---- Spark: the views -----------------------------------------------------------------------
def _s(df: DataFrame, col: str | None, kind: str = "long"):
    zero = F.lit(0.0) if kind == "double" else F.lit(0).cast("long")
    if col is None or col not in df.columns:
        return zero
    return F.coalesce(F.col(col).cast(kind), zero)


def _union(parts: list[DataFrame]) -> DataFrame | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def io_cost(modules: dict[str, DataFrame], jobs: DataFrame) -> DataFrame | None:
    """The `io_cost` view: one row per (log_id, module) (module docstring)."""
    parts = []
    for module, df in modules.items():
        if module not in IO_COST_MODULE:
            continue
        terms = _io_cost_terms(module)
        kinds = {c: ("long" if c.startswith("bytes") else "double") for c in IO_COST_COLUMNS}
        parts.append(
            df.select(
                "log_id",
                F.lit(IO_COST_MODULE[module]).alias("module"),
                *[_s(df, terms.get(c), kinds[c]).alias(c) for c in IO_COST_COLUMNS],
            )
        )
    rows = _union(parts)
    if rows is None:
        return None
    n = jobs.groupBy("log_id").agg(F.max("nprocs").cast("double").alias("nprocs"))
    sums = rows.groupBy("log_id", "module").agg(*[F.sum(c).alias(c) for c in IO_COST_COLUMNS])
    return sums.join(n, "log_id", "left").select(
        "log_id",
        "module",
        *[(F.col(c) / F.col("nprocs")).alias(c) for c in IO_COST_COLUMNS if c.endswith("_s")],
        "bytes_read",
        "bytes_written",
    )


def access_sizes(modules: dict[str, DataFrame]) -> DataFrame | None:
    """The `access_sizes` view: one row per (log_id, module, direction, bin)."""
    parts = []
    for module in HIST_MODULES:
        df = modules.get(module)
        if df is None:
            continue
        cells = [
            F.struct(
                F.lit(d).alias("direction"),
                F.lit(i).alias("bin"),
                F.lit(label).alias("bin_label"),
                F.sum(_s(df, _size_counter(module, d, suffix))).alias("count"),
            )
            for d in ("read", "write")
            for i, (suffix, label) in enumerate(SIZE_BINS)
        ]
        parts.append(
            df.groupBy("log_id")
            .agg(F.array(*cells).alias("cells"))
            .select("log_id", F.lit(module).alias("module"), F.explode("cells").alias("c"))
            .select("log_id", "module", "c.*")
        )
    return _union(parts)


def common_access_sizes(modules: dict[str, DataFrame]) -> DataFrame | None:
    """The `common_access_sizes` view: per (log_id, module, access_size) its count and rank."""
    from pyspark.sql import Window

    parts = []
    for module in HIST_MODULES:
        df = modules.get(module)
        if df is None:
            continue
        p = PREFIX[module]
        slots = F.array(
            *[
                F.struct(
                    _s(df, f"{p}_ACCESS{i}_ACCESS").alias("access_size"),
                    _s(df, f"{p}_ACCESS{i}_COUNT").alias("count"),
                )
                for i in range(1, 5)
            ]
        )
        parts.append(
            df.select("log_id", F.lit(module).alias("module"), F.explode(slots).alias("s"))
            .select("log_id", "module", "s.*")
            .where((F.col("access_size") != 0) | (F.col("count") != 0))
        )
    rows = _union(parts)
    if rows is None:
        return None
    sizes = rows.groupBy("log_id", "module", "access_size").agg(F.sum("count").alias("count"))
    order = Window.partitionBy("log_id", "module").orderBy(
        F.col("count").desc(), F.col("access_size").asc()
    )
    return sizes.withColumn("rank", F.row_number().over(order))


def op_counts(modules: dict[str, DataFrame]) -> DataFrame | None:
    """The `op_counts` view: one row per (log_id, module, operation) of each module with
    records."""
    sums = {}  # Darshan module -> per-log sums of the counters any figure uses
    need: dict[str, set[str]] = {}
    for bars in OP_COUNTS.values():
        for _, terms in bars:
            for m, c in terms:
                need.setdefault(m, set()).add(c)
    for m, counters in need.items():
        if m in modules:
            df = modules[m]
            sums[m] = df.groupBy("log_id").agg(
                *[F.sum(_s(df, c)).alias(c) for c in sorted(counters)]
            )
    parts = []
    for module, bars in OP_COUNTS.items():
        if module not in modules:
            continue
        base = modules[module].select("log_id").distinct()
        others = {m for _, terms in bars for m, _ in terms}
        for m in sorted(others):
            if m in sums:
                base = base.join(
                    sums[m].select(
                        "log_id", *[F.col(c).alias(f"{m}::{c}") for c in sums[m].columns[1:]]
                    ),
                    "log_id",
                    "left",
                )
        cells = []
        for pos, (label, terms) in enumerate(bars):
            total = F.lit(0).cast("long")
            for m, c in terms:
                if m in sums:
                    total = total + F.coalesce(F.col(f"`{m}::{c}`"), F.lit(0).cast("long"))
            cells.append(
                F.struct(
                    F.lit(pos).alias("position"),
                    F.lit(label).alias("operation"),
                    F.greatest(total, F.lit(0).cast("long")).alias("count"),
                )
            )
        parts.append(
            base.select(
                "log_id", F.lit(module).alias("module"), F.explode(F.array(*cells)).alias("c")
            ).select("log_id", "module", "c.*")
        )
    return _union(parts)


def file_categories(modules: dict[str, DataFrame]) -> DataFrame | None:
    """The `file_categories` view: per (log_id, module, category)."""
    parts = []
    for module in CATEGORY_MODULES:
        df = modules.get(module)
        if df is None:
            continue
        p = PREFIX[module]
        off = (
            F.greatest(_s(df, f"{p}_MAX_BYTE_READ"), _s(df, f"{p}_MAX_BYTE_WRITTEN"))
            if module in OFFSET_MODULES
            else F.lit(-1).cast("long")
        )
        files = (
            df.select(
                "log_id",
                "record_id",
                _s(df, f"{p}_BYTES_READ").alias("r"),
                _s(df, f"{p}_BYTES_WRITTEN").alias("w"),
                off.alias("off"),
            )
            .groupBy("log_id", "record_id")
            .agg(F.sum("r").alias("r"), F.sum("w").alias("w"), F.max("off").alias("off"))
        )
        if module in OFFSET_MODULES:
            files = files.withColumn("off", F.greatest(F.col("off"), F.lit(0).cast("long")))
        r, w = F.col("r"), F.col("w")
        cats = F.array(
            F.lit("all"),
            F.when((r > 0) & (w == 0), F.lit("read_only")),
            F.when((w > 0) & (r == 0), F.lit("write_only")),
            F.when((r > 0) & (w > 0), F.lit("read_write")),
        )
        member = files.select("*", F.explode(cats).alias("category")).where(
            F.col("category").isNotNull()
        )
        agg = member.groupBy("log_id", "category").agg(
            F.count(F.lit(1)).alias("files"),
            F.sum("r").alias("bytes_read"),
            F.sum("w").alias("bytes_written"),
            F.sum("off").alias("off_sum"),
            F.max("off").alias("off_max"),
        )
        grid = (
            files.select("log_id")
            .distinct()
            .crossJoin(
                files.sparkSession.createDataFrame([(c,) for c in CATEGORIES], "category string")
            )
        )
        sized = F.lit(module in OFFSET_MODULES) & (F.col("files") > 0)
        parts.append(
            grid.join(agg, ["log_id", "category"], "left").select(
                "log_id",
                F.lit(module).alias("module"),
                "category",
                F.coalesce(F.col("files"), F.lit(0).cast("long")).alias("files"),
                F.coalesce(F.col("bytes_read"), F.lit(0).cast("long")).alias("bytes_read"),
                F.coalesce(F.col("bytes_written"), F.lit(0).cast("long")).alias("bytes_written"),
                F.when(sized, (F.col("off_sum") + F.col("files")) / F.col("files")).alias(
                    "avg_size_bytes"
                ),
                F.when(sized, F.col("off_max") + 1).alias("max_size_bytes"),
            )
        )
    return _union(parts)


def data_access_by_root(modules: dict[str, DataFrame], names: DataFrame) -> DataFrame | None:
    """The `data_access_by_root` view: per (log_id, filesystem_root)."""
    parts = []
    for module in ROOT_MODULES:
        df = modules.get(module)
        if df is None:
            continue
        p = PREFIX[module]
        parts.append(
            df.select(
                "log_id",
                "record_id",
                _s(df, f"{p}_BYTES_READ").alias("r"),
                _s(df, f"{p}_BYTES_WRITTEN").alias("w"),
            )
        )
    rows = _union(parts)
    if rows is None:
        return None
    root = F.udf(lambda p: filesystem_root(p), "string")
    rec = rows.join(
        names.select("log_id", "record_id", "name"), ["log_id", "record_id"], "inner"
    ).withColumn("filesystem_root", root("name"))
    return rec.groupBy("log_id", "filesystem_root").agg(
        F.sum(F.when(F.col("r") >= 1, F.col("r")).otherwise(0)).alias("bytes_read"),
        F.sum(F.when(F.col("w") >= 1, F.col("w")).otherwise(0)).alias("bytes_written"),
        F.countDistinct(F.when(F.col("r") >= 1, F.col("name"))).alias("files_read"),
        F.countDistinct(F.when(F.col("w") >= 1, F.col("name"))).alias("files_written"),
        F.countDistinct("name").alias("files"),
    )
