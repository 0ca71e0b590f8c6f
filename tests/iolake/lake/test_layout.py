"""`iolake.lake.layout.keep_sorted`: a table is rewritten sorted by its look-up column only once
more of its rows than the limit lie in row groups too coarse for a look-up to skip (delta-rs
alone, no Spark)."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake

from iolake.lake.layout import coarse_rows, keep_sorted


def _ids(n: int, seed: str) -> list[str]:
    return [hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(n)]


def _append(path: str, ids: list[str]) -> None:
    """One file of one row group, in the given (hash, so unsorted) order: what a merge writes."""
    write_deltalake(path, pa.table({"log_id": ids, "n": list(range(len(ids)))}), mode="append")


def _groups(path: str) -> list[list[str]]:
    return [
        f.read_row_group(i, ["log_id"])["log_id"].to_pylist()
        for f in map(pq.ParquetFile, DeltaTable(path).file_uris())
        for i in range(f.metadata.num_row_groups)
    ]


def test_keep_sorted_rewrites_only_past_the_limit_and_keeps_every_row(tmp_path):
    path = str(tmp_path / "ledger")
    first, second = _ids(30, "a"), _ids(12, "b")
    _append(path, first)
    assert coarse_rows(path, row_group_rows=8) == 30
    assert coarse_rows(path, row_group_rows=30) == 0  # a row group of 30 is not over 30

    coarse, done = keep_sorted(path, "log_id", 30, row_group_rows=8)  # 30 is not over 30
    assert (coarse, done) == (30, None) and DeltaTable(path).version() == 0
    assert keep_sorted(path, "log_id", 0, row_group_rows=8) == (0, None)  # 0: never

    coarse, done = keep_sorted(path, "log_id", 29, row_group_rows=8)
    assert coarse == 30 and done is not None and DeltaTable(path).version() == 1
    groups = _groups(path)
    assert max(len(g) for g in groups) <= 8 and sum(map(len, groups)) == 30
    assert [i for g in groups for i in g] == sorted(first)
    assert coarse_rows(path, row_group_rows=8) == 0  # sorted: nothing coarse left

    _append(path, second)  # the next night's merge: 12 unsorted rows in one row group
    assert coarse_rows(path, row_group_rows=8) == 12
    assert keep_sorted(path, "log_id", 29, row_group_rows=8)[1] is None
    rows = DeltaTable(path).to_pyarrow_table()
    assert sorted(rows["log_id"].to_pylist()) == sorted(first + second)


def test_an_ingest_whose_ledger_delta_rs_cannot_open_warns_and_goes_on(tmp_path):
    """Ingest sorts its ledger after every log is committed: a store delta-rs cannot open (here,
    no table where the ledger should be) is a warning naming the error, not a failed run."""
    from types import SimpleNamespace

    from iolake.config import load_config
    from jobs.ingest import keep_ledger_sorted
    from schemas import BRONZE

    said: list[str] = []
    ctx = SimpleNamespace(
        conf=load_config("local", overrides={"lake": {"root": str(tmp_path / "none")}}),
        spec=lambda table, kind: BRONZE["logs"],
        spark=SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: default)),
        echo=said.append,
    )
    keep_ledger_sorted(ctx)
    assert len(said) == 1 and said[0].startswith("[ingest] warning: the ledger was not checked")
    assert "TableNotFoundError" in said[0] and "iolake maintain" in said[0]
