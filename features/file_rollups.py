"""One decoded log's file rollups (bronze/file_rollups), computed where ingest decodes the log.

`file_features.file_rollups` builds these rows in Spark for every new log: a groupBy per module
table and seven joins, a large share of the features stage. The decode task holds all of
one log's module tables, so ingest rolls them up there with numpy and the stage applies its rules
to the rows (`file_features.from_rollups`).

The same rows as the Spark pass, by Spark's rules: a sum or maximum of a column that is null on
every row is null; sums of longs wrap; sums of doubles add in row order from 0.0, as Spark's one
partial aggregate does; `max` returns NaN when any value is NaN, and `min` only when every value is;
a NaN timestamp passes `> 0`; the most frequent access size is the size of the greatest count,
the larger size on a tie (`file_features._access1`); `greatest` skips nulls. A log whose files
table names a record twice, or that has two job rows, raises: ingest notes it and the stage's
Spark pass rolls that log up.
"""

from __future__ import annotations

import functools
import re

import numpy as np

SUMS = {  # rollup column -> the module counter summed over the record's rows
    "px": {
        "opens": "POSIX_OPENS",
        "reads": "POSIX_READS",
        "writes": "POSIX_WRITES",
        "bytes_read": "POSIX_BYTES_READ",
        "bytes_written": "POSIX_BYTES_WRITTEN",
        "consec_r": "POSIX_CONSEC_READS",
        "consec_w": "POSIX_CONSEC_WRITES",
        "seq_r": "POSIX_SEQ_READS",
        "seq_w": "POSIX_SEQ_WRITES",
    },
    "mp": {
        "indep_opens": "MPIIO_INDEP_OPENS",
        "coll_opens": "MPIIO_COLL_OPENS",
        "views": "MPIIO_VIEWS",
        "syncs": "MPIIO_SYNCS",
        "bytes_read": "MPIIO_BYTES_READ",
        "bytes_written": "MPIIO_BYTES_WRITTEN",
    },
    "st": {
        "opens": "STDIO_OPENS",
        "reads": "STDIO_READS",
        "writes": "STDIO_WRITES",
        "syncs": "STDIO_FLUSHES",
        "bytes_read": "STDIO_BYTES_READ",
        "bytes_written": "STDIO_BYTES_WRITTEN",
    },
}
COALESCED = {  # rollup column -> counters summed with nulls as 0 (never null)
    "px": {"syncs": ("POSIX_FSYNCS", "POSIX_FDSYNCS")},
    "mp": {
        "reads": ("MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"),
        "writes": (
            "MPIIO_INDEP_WRITES",
            "MPIIO_COLL_WRITES",
            "MPIIO_SPLIT_WRITES",
            "MPIIO_NB_WRITES",
        ),
        "coll_ops": ("MPIIO_COLL_READS", "MPIIO_COLL_WRITES"),
    },
    "st": {},
}
MODULES = {"px": ("posix", "POSIX"), "mp": ("mpiio", "MPIIO"), "st": ("stdio", "STDIO")}
H5_FILE = re.compile(r"^(.*):/")


def _pairs(log: np.ndarray, rec: np.ndarray):
    """The distinct (log, record) pairs in (log, record) order, and each input pair's place among them."""
    order = np.lexsort((rec, log))
    sl, sr = log[order], rec[order]
    head = np.ones(len(order), bool)
    head[1:] = (sl[1:] != sl[:-1]) | (sr[1:] != sr[:-1])
    at = np.empty(len(order), np.int64)
    at[order] = np.cumsum(head) - 1
    return sl[head], sr[head], at


def _lookup(log: np.ndarray, rec: np.ndarray, in_log: np.ndarray, in_rec: np.ndarray) -> np.ndarray:
    """For each (log, rec) pair, the row of (in_log, in_rec) holding it (one of them), -1 where none does."""
    n_in = len(in_log)
    keys_l, keys_r = np.concatenate([in_log, log]), np.concatenate([in_rec, rec])
    order = np.lexsort((np.arange(len(keys_l)) >= n_in, keys_r, keys_l))  # a pair's `in` rows first
    sl, sr = keys_l[order], keys_r[order]
    head = np.ones(len(order), bool)
    head[1:] = (sl[1:] != sl[:-1]) | (sr[1:] != sr[:-1])
    first = order[head]
    found = np.where(first < n_in, first, -1)[np.cumsum(head) - 1]
    out = np.empty(len(log), np.int64)
    mine = order >= n_in
    out[order[mine] - n_in] = found[mine]
    return out


class _Groups:
    """A module table's rows grouped by (log, record): `g` the row's group, `logs` and `recs` the groups'
    logs and record ids, in that order. A validity mask of None means every value is present (the
    common case: no mask is built)."""

    def __init__(self, t, log: np.ndarray):
        self.t = t
        self.logs, self.recs, self.g = _pairs(log, t.column("record_id").to_numpy())
        self.k = len(self.recs)
        self.all = np.ones(self.k, bool)

    def col(self, name: str, dtype):
        c = self.t.column(name)
        if not c.null_count:
            return c.to_numpy().astype(dtype, copy=False), None
        ok = c.is_valid().to_numpy(zero_copy_only=False)
        return c.fill_null(0).to_numpy(zero_copy_only=False).astype(dtype, copy=False), ok

    def any(self, ok):
        return self.all if ok is None else np.bincount(self.g, weights=ok, minlength=self.k) > 0

    def sum_long(self, name: str):
        x, ok = self.col(name, np.int64)
        out = np.zeros(self.k, np.int64)
        np.add.at(out, self.g, x if ok is None else np.where(ok, x, 0))
        return out, self.any(ok)

    def sum_coalesced(self, names):
        out = np.zeros(self.k, np.int64)
        for n in names:
            x, ok = self.col(n, np.int64)
            np.add.at(out, self.g, x if ok is None else np.where(ok, x, 0))
        return out, self.all

    def max_long(self, x, ok):
        out = np.full(self.k, np.iinfo(np.int64).min)
        if ok is None:
            np.maximum.at(out, self.g, x)
        else:
            np.maximum.at(out, self.g[ok], x[ok])
        return out, self.any(ok)

    def greatest_max(self, a: str, b: str):
        (x, xo), (y, yo) = self.col(a, np.int64), self.col(b, np.int64)
        if xo is None and yo is None:
            return self.max_long(np.maximum(x, y), None)
        xo = np.ones(len(x), bool) if xo is None else xo
        yo = np.ones(len(y), bool) if yo is None else yo
        return self.max_long(np.where(xo & yo, np.maximum(x, y), np.where(xo, x, y)), xo | yo)

    def max_by(self, value: str, order: str):
        v, vo = self.col(value, np.int64)
        o, oo = self.col(order, np.int64)
        top, has = self.max_long(o, oo)
        hit = o == top[self.g] if oo is None else oo & (o == top[self.g])
        sized = hit if vo is None else hit & vo  # a null size loses a tie to any size
        size, any_size = self.max_long(v, sized)
        return size, has & any_size

    def sum_double(self, name: str):
        x, ok = self.col(name, np.float64)
        return np.bincount(
            self.g, weights=x if ok is None else np.where(ok, x, 0.0), minlength=self.k
        ), self.any(ok)

    def max_double(self, name: str):
        x, ok = self.col(name, np.float64)
        nan = np.isnan(x) if ok is None else ok & np.isnan(x)
        num = ~nan if ok is None else ok & ~nan
        out = np.full(self.k, -np.inf)
        np.maximum.at(out, self.g[num], x[num])
        return np.where(self.any(nan), np.nan, out), self.any(ok)

    def first_ts(self, name: str):
        """min(x where x > 0): Spark's NaN passes `> 0` and is above every number in `min`."""
        x, ok = self.col(name, np.float64)
        nan = np.isnan(x) if ok is None else ok & np.isnan(x)
        num = ~nan & (x > 0) if ok is None else ok & ~nan & (x > 0)
        out = np.full(self.k, np.inf)
        np.minimum.at(out, self.g[num], x[num])
        any_num = self.any(num)
        return np.where(any_num, out, np.nan), any_num | self.any(nan)

    def ranks(self):
        rank = self.t.column("rank").to_numpy()
        shared = (np.bincount(self.g, weights=rank == -1, minlength=self.k) > 0).astype(np.int32)
        order = np.lexsort((rank, self.g))
        g, r = self.g[order], rank[order]
        first = np.ones(len(g), bool)  # the first row of each (record, rank)
        first[1:] = (g[1:] != g[:-1]) | (r[1:] != r[:-1])
        return (shared, self.all), (np.bincount(g[first], minlength=self.k), self.all)


def _module_columns(p: str, t, log: np.ndarray) -> tuple[_Groups, dict]:
    """(the groups, {column: (values, valid)}) of one module's rollup columns."""
    gr = _Groups(t, log)
    upper = MODULES[p][1]
    out = {}
    out[f"{p}_shared"], out[f"{p}_ranks"] = gr.ranks()
    for c, name in SUMS[p].items():
        out[f"{p}_{c}"] = gr.sum_long(name)
    for c, names in COALESCED[p].items():
        out[f"{p}_{c}"] = gr.sum_coalesced(names)
    if p != "mp":
        out[f"{p}_max_byte"] = gr.greatest_max(
            f"{upper}_MAX_BYTE_READ", f"{upper}_MAX_BYTE_WRITTEN"
        )
    if p != "st":
        out[f"{p}_access1"] = gr.max_by(f"{upper}_ACCESS1_ACCESS", f"{upper}_ACCESS1_COUNT")
    for c in ("read", "write", "meta"):
        out[f"{p}_{c}_time"] = gr.sum_double(f"{upper}_F_{c.upper()}_TIME")
    out[f"{p}_slowest"] = gr.max_double(f"{upper}_F_SLOWEST_RANK_TIME")
    out[f"{p}_first_read"] = gr.first_ts(f"{upper}_F_READ_START_TIMESTAMP")
    out[f"{p}_first_write"] = gr.first_ts(f"{upper}_F_WRITE_START_TIMESTAMP")
    return gr, out


@functools.cache
def _schema():
    """bronze/file_rollups' decoded Arrow schema, built once per process (the property builds it anew)."""
    from schemas import BRONZE

    return BRONZE["file_rollups"].decoded_arrow_schema


@functools.cache
def _types() -> dict:
    """{column: Arrow type} of `_schema()`, so a log's columns are typed without a lookup each."""
    return {f.name: f.type for f in _schema()}


def _rows(t) -> bool:
    return t is not None and t.num_rows > 0


def log_file_rollups(tables: dict):
    """One decoded log's bronze/file_rollups rows (its docstring) from its Arrow tables (`posix`,
    `mpiio`, `stdio`, `h5f`, `h5d`, `files`, `jobs`, `io_ops`; any may be missing): one row per
    record of its POSIX, MPI-IO or STDIO tables, the columns `file_features.file_rollups` computes."""
    return file_rollups_of(tables)[0]


INPUTS = ("posix", "mpiio", "stdio", "h5f", "h5d", "files", "jobs", "io_ops")


def file_rollups_of(tables: dict, logs: dict | None = None):
    """`log_file_rollups` of many logs at once: `tables` holds their rows stacked (a log's rows in its
    order), `logs` ({table: numpy array}; None: one log) says whose each row is. Returns (the rows,
    the log of each row). Every grouping is by (log, record), so a log's rows are those
    `log_file_rollups` gives on its tables alone; it raises, for all, where that raises for one log.
    Ingest rolls a staged file's logs up in one call: one log at a time, numpy and Arrow's per-call
    overhead would dominate."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = _schema()
    none = (schema.empty_table(), np.zeros(0, np.int64))

    def log_of(name):
        t = tables.get(name)
        return np.zeros(t.num_rows, np.int64) if logs is None else np.asarray(logs[name], np.int64)

    mods = {
        p: _module_columns(p, tables[name], log_of(name))
        for p, (name, _) in MODULES.items()
        if _rows(tables.get(name))
    }
    if not mods:
        return none
    u_log, u_rec, at = _pairs(
        np.concatenate([gr.logs for gr, _ in mods.values()]),
        np.concatenate([gr.recs for gr, _ in mods.values()]),
    )
    n = len(u_rec)
    cols: dict = {"record_id": pa.array(u_rec, pa.int64())}
    start = 0
    for _p, (gr, out) in mods.items():
        where, start = at[start : start + gr.k], start + gr.k
        whole = gr.k == n  # this module has every record: no scatter
        for c, (x, ok) in out.items():
            if not whole:
                vals, valid = np.zeros(n, x.dtype), np.zeros(n, bool)
                vals[where], valid[where] = x, ok
                x, ok = vals, valid
            cols[c] = pa.array(x, _types()[c], mask=None if ok.all() else ~ok)
    files = tables.get("files")
    f_row = None
    if _rows(files):
        f_log, f_rec = log_of("files"), files.column("record_id").to_numpy()
        if len(_pairs(f_log, f_rec)[0]) != files.num_rows:
            raise ValueError("bronze/files names a record twice: rolled up in Spark instead")
        f_row = _lookup(u_log, u_rec, f_log, f_rec)
        idx = pa.array(f_row, pa.int64(), mask=f_row < 0)
        for out, c in (
            ("file_name", "name"),
            ("mount_point", "mount_point"),
            ("fs_type", "fs_type"),
        ):
            cols[out] = pc.take(files.column(c), idx)
    cols.update(_h5_columns(tables, log_of, u_log, u_rec, f_row))
    jobs = tables.get("jobs")
    nprocs = pa.nulls(n, pa.int64())
    if _rows(jobs):
        j_log = log_of("jobs")
        if np.bincount(j_log).max() > 1:
            raise ValueError("the log has more than one job row: rolled up in Spark instead")
        j_row = _lookup(u_log, np.zeros(n, np.int64), j_log, np.zeros(len(j_log), np.int64))
        nprocs = pc.take(jobs.column("nprocs"), pa.array(j_row, pa.int64(), mask=j_row < 0))
    cols["nprocs"] = nprocs
    return pa.Table.from_arrays(
        [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in schema], schema=schema
    ), u_log


def _h5_columns(
    tables: dict, log_of, u_log: np.ndarray, u_rec: np.ndarray, f_row: np.ndarray | None
) -> dict:
    """`is_h5` (true or null), `h5_opens` and `h5_rw` per (log, record) of `u_log`, `u_rec`
    (`_h5_ops_per_file`'s rules: an H5F record's opens when bronze/files names it; its datasets'
    reads + writes by file name, within its log). `f_row`: each record's row in `files` (-1: none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(u_rec)
    h5 = np.zeros(n, bool)
    h5f, h5d, ops = tables.get("h5f"), tables.get("h5d"), tables.get("io_ops")
    if _rows(ops):
        calls = pc.and_(
            pc.fill_null(pc.starts_with(ops.column("func"), "H5F"), False),
            pc.is_valid(ops.column("record_id")),
        )
        if pc.any(calls).as_py():
            hit = calls.to_numpy(zero_copy_only=False)
            h5 |= (
                _lookup(
                    u_log,
                    u_rec,
                    log_of("io_ops")[hit],
                    ops.column("record_id").filter(calls).to_numpy(),
                )
                >= 0
            )
    out = {"is_h5": None, "h5_opens": pa.nulls(n, pa.int64()), "h5_rw": pa.nulls(n, pa.int64())}
    if _rows(h5f):
        gr = _Groups(h5f, log_of("h5f"))
        h5 |= _lookup(u_log, u_rec, gr.logs, gr.recs) >= 0
        total, ok = gr.sum_long("H5F_OPENS")
        files = tables.get("files")
        names = files.column("name").to_pylist() if f_row is not None else []
        # the datasets' reads + writes per (log, file name): the part of the dataset's name before ":/"
        by_file: dict = {}
        if _rows(h5d) and f_row is not None:
            d_log = log_of("h5d")
            d_row = _lookup(
                d_log,
                h5d.column("record_id").to_numpy(),
                log_of("files"),
                files.column("record_id").to_numpy(),
            )
            for lg, fr, reads, writes in zip(
                d_log.tolist(),
                d_row.tolist(),
                h5d.column("H5D_READS").to_pylist(),
                h5d.column("H5D_WRITES").to_pylist(),
            ):
                if fr >= 0:
                    name = names[fr]
                    f = None if name is None else (m.group(1) if (m := H5_FILE.match(name)) else "")
                    by_file[(lg, f)] = by_file.get((lg, f), 0) + (reads or 0) + (writes or 0)
        o, w = [None] * n, [None] * n
        where = _lookup(gr.logs, gr.recs, u_log, u_rec)
        named = f_row if f_row is not None else np.full(n, -1)
        for i, lg, t, v in zip(where.tolist(), gr.logs.tolist(), total.tolist(), ok.tolist()):
            if i >= 0 and named[i] >= 0:
                o[i] = t if v else None
                name = names[named[i]]
                w[i] = by_file.get((lg, name)) if name is not None else None
        out["h5_opens"], out["h5_rw"] = pa.array(o, pa.int64()), pa.array(w, pa.int64())
    out["is_h5"] = pa.array(np.where(h5, True, None), pa.bool_())
    return out
