"""One job's rows (`iolake.lake.arrow.read_logs`, `job_months`, `ledger_matches`) and the report's
job look-up (`apps.report.find_job`): month-pruned reads return exactly the rows of the old
whole-table read, a log_id prefix resolves through bronze/logs, unknown and ambiguous ids say so.

The lake is written with delta-rs (no Spark): bronze/logs unpartitioned as ingest writes it,
bronze/jobs and bronze/io_ops partitioned by job_month over several commits (several files a
month), gold/regressions unpartitioned. Its logs: A and B share the prefix "aa1", C and D share
a month, Q is quarantined (no month), X has rows but no ledger row (a lake older than its ledger:
read without the month filter, found by the report's fallback scan).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake

from apps.report import JobNotFound, LakeReader, find_job
from iolake.config import load_config
from iolake.lake import arrow
from schemas import TABLES

A = "aa11" + "0" * 60
B = "aa12" + "1" * 60
C = "c0ffee" + "2" * 58
D = "d00d" + "3" * 60
Q = "eeee" + "4" * 60
X = "ff00" + "5" * 60
MONTH = {A: "2025-01", B: "2025-02", C: "2025-02", D: "2025-03", X: "2025-01"}
JOBID = {A: 11, B: 12, C: 13, D: 4242, X: 15}
OPS_PER_LOG = {A: 3, B: 2, C: 4, D: 1, X: 2}


def _write(root, name: str, rows: list[dict], schema: pa.Schema, partitioned: bool) -> None:
    write_deltalake(
        TABLES[name].path(str(root)),
        pa.Table.from_pylist(rows, schema),
        mode="append",
        partition_by=["job_month"] if partitioned else None,
    )


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("job_reads")
    ledger = pa.schema(
        [(c, pa.string()) for c in ("log_id", "job_month", "status", "reason", "source_uri")]
    )
    logs = [
        {"log_id": i, "job_month": MONTH[i], "status": "ok", "source_uri": f"/d/{i[:4]}"}
        for i in (A, B, C, D)
    ]
    logs.append(
        {"log_id": Q, "job_month": None, "status": "quarantined", "reason": "truncated header"}
    )
    _write(root, "logs", logs, ledger, partitioned=False)
    jobs = pa.schema(
        [
            ("log_id", pa.string()),
            ("job_month", pa.string()),
            ("jobid", pa.int64()),
            ("exe", pa.string()),
            ("nprocs", pa.int64()),
            ("start_time_sec", pa.int64()),
        ]
    )
    ops = pa.schema(
        [
            ("log_id", pa.string()),
            ("job_month", pa.string()),
            ("rank", pa.int64()),
            ("offset", pa.int64()),
        ]
    )
    regressions = pa.schema([("log_id", pa.string()), ("app", pa.string())])
    for batch in ((A, C, X), (B, D), (A, B, C, D, X)):  # several commits: several files a month
        _write(
            root,
            "jobs",
            [
                {
                    "log_id": i,
                    "job_month": MONTH[i],
                    "jobid": JOBID[i],
                    "exe": f"/bin/{i[:4]}",
                    "nprocs": 4,
                    "start_time_sec": 1_700_000_000 + JOBID[i],
                }
                for i in batch
                if batch != (A, B, C, D, X)  # the third commit adds io_ops only
            ],
            jobs,
            partitioned=True,
        )
        _write(
            root,
            "io_ops",
            [
                {"log_id": i, "job_month": MONTH[i], "rank": r, "offset": 100 * len(batch) + r}
                for i in batch
                for r in range(OPS_PER_LOG[i])
            ],
            ops,
            partitioned=True,
        )
    _write(
        root,
        "regressions",
        [{"log_id": i, "app": f"app-{i[:2]}"} for i in (A, C, X)],
        regressions,
        partitioned=False,
    )
    return str(root)


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


@pytest.mark.parametrize("table", ["jobs", "io_ops", "regressions"])
@pytest.mark.parametrize("ids", [[A], [B], [C, D], [X], [Q], [A, B, C, D, X, Q]])
def test_read_logs_returns_the_rows_of_the_whole_table_read(lake, table, ids):
    spec = TABLES[table]
    old = arrow.read(lake, spec, filter=pc.field("log_id").isin(ids))
    new = arrow.read_logs(lake, spec, ids)
    assert new.schema == old.schema
    assert _sorted(new) == _sorted(old)
    if table == "io_ops":  # hand count: OPS_PER_LOG per commit the log is in
        commits = {A: 2, B: 2, C: 2, D: 2, X: 2}
        assert new.num_rows == sum(OPS_PER_LOG[i] * commits[i] for i in ids if i != Q)


def test_job_months_reads_the_ledger(lake):
    assert arrow.job_months(lake, [A, C, Q, X]) == {A: "2025-01", C: "2025-02", Q: None}
    assert arrow.job_months(lake, []) == {}


def test_log_filter_prunes_by_month_only_when_the_ledger_places_every_log(lake):
    months = arrow.job_months(lake, [A, B, Q, X])
    where, prune = arrow.log_filter(TABLES["io_ops"], [A, B, Q], months)
    assert prune == [("job_month", "in", ["2025-01", "2025-02"]), ("log_id", "in", [A, B])]
    _, prune = arrow.log_filter(TABLES["io_ops"], [A, X], months)  # X: not in the ledger
    assert prune == [("log_id", "in", [A, X])]
    _, prune = arrow.log_filter(TABLES["regressions"], [A], months)  # not partitioned by month
    assert prune == [("log_id", "in", [A])]
    assert arrow.log_filter(TABLES["io_ops"], [Q], months) is None  # quarantined: no rows


def test_ledger_matches_a_prefix(lake):
    assert sorted(arrow.ledger_matches(lake, "AA1").column("log_id").to_pylist()) == [A, B]
    assert arrow.ledger_matches(lake, A, ["log_id"]).column("log_id").to_pylist() == [A]


@pytest.fixture(scope="module")
def reader(lake):
    return LakeReader(load_config("local", overrides={"lake": {"root": lake}}))


def test_report_reader_reads_one_log_as_the_whole_table_did(lake, reader):
    for i in (A, C, X, Q):
        old = arrow.read(lake, TABLES["io_ops"], ["rank"], filter=pc.field("log_id") == i)
        assert _sorted(reader.read("io_ops", ["rank"], log_id=i)) == _sorted(old)


def test_report_reader_filters_and_projects_the_rows_it_read_once(lake, reader, monkeypatch):
    """The reader keeps each (table, log)'s rows: a second section's columns and filter give what
    a read of the lake with them gives, without reading the lake again."""
    calls = []
    read_logs = arrow.read_logs
    monkeypatch.setattr(
        arrow, "read_logs", lambda *a, **k: calls.append(a[1].name) or read_logs(*a, **k)
    )
    fresh = LakeReader(load_config("local", overrides={"lake": {"root": lake}}))
    everything = fresh.read("io_ops", log_id=A)
    ranked = fresh.read("io_ops", ["rank", "log_id"], log_id=A, filter=pc.field("rank") == 0)
    want = arrow.read(
        lake,
        TABLES["io_ops"],
        ["rank", "log_id"],
        (pc.field("log_id") == A) & (pc.field("rank") == 0),
    )
    assert ranked.schema == want.schema and _sorted(ranked) == _sorted(want)
    assert 0 < ranked.num_rows < everything.num_rows
    assert calls.count("io_ops") == 1


def test_a_lake_given_as_a_path_or_its_conf_reads_its_folder(lake):
    """A pathlib.Path names the folder (its `.root` attribute is only its anchor, "/"); a
    LakeConf names its root."""
    from pathlib import Path

    conf = load_config("local", overrides={"lake": {"root": lake}}).lake
    want = arrow.read(lake, TABLES["io_ops"]).num_rows
    assert want and arrow.read(Path(lake), TABLES["io_ops"]).num_rows == want
    assert arrow.read(conf, TABLES["io_ops"]).num_rows == want
    assert arrow.root(Path(lake)) == arrow.root(conf) == arrow.root(lake)


def test_a_local_lake_is_read_through_pyarrows_own_file_system(lake, tmp_path):
    """A local table is scanned with pyarrow's LocalFileSystem under the table's folder (also a
    folder whose name needs quoting in a URI), not delta-rs' Python file system handler, with
    which a reading process aborted at exit (exit 134) about one time in six; an object store's
    table keeps the handler."""
    import shutil
    import subprocess
    import sys

    import pyarrow.fs as pafs

    spaced = tmp_path / "a lake"
    shutil.copytree(lake, spaced)
    for root in (lake, str(spaced)):
        fs = arrow._local_files(arrow.open_table(root, TABLES["io_ops"]))
        assert isinstance(fs, pafs.SubTreeFileSystem)
        assert isinstance(fs.base_fs, pafs.LocalFileSystem)
        assert fs.base_path.rstrip("/") == TABLES["io_ops"].path(arrow.root(root)).rstrip("/")
    assert _sorted(arrow.read(str(spaced), TABLES["io_ops"])) == _sorted(
        arrow.read(lake, TABLES["io_ops"])
    )
    code = (
        "import sys; from iolake.lake import arrow; "
        "print(arrow.ledger_matches(sys.argv[1], 'aa1').num_rows)"
    )
    for _ in range(5):  # the abort came after the work, at interpreter exit
        p = subprocess.run(
            [sys.executable, "-c", code, lake], capture_output=True, text=True, timeout=120
        )
        assert (p.returncode, p.stdout.strip()) == (0, "2"), p.stderr[-2000:]


@pytest.mark.parametrize(
    "query, log_id",
    [(A, A), ("aa11", A), ("AA11 ", A), ("c0f", C), (D[:20], D), ("4242", D), ("ff00", X)],
)
def test_find_job_resolves_a_log_id_a_prefix_or_a_jobid(reader, query, log_id):
    assert find_job(reader, query) == log_id


def test_find_job_refuses_an_ambiguous_prefix_listing_the_candidates(reader):
    with pytest.raises(JobNotFound, match="ambiguous: 2 logs match") as e:
        find_job(reader, "aa1")
    assert A in str(e.value) and B in str(e.value)


@pytest.mark.parametrize("query", ["0123", "ab", "999"])
def test_find_job_says_no_job_matches_an_unknown_id(reader, query):
    with pytest.raises(JobNotFound, match=f"no job matches '{query}'"):
        find_job(reader, query)


def test_find_job_says_why_a_quarantined_log_has_no_job(reader):
    with pytest.raises(JobNotFound, match="was quarantined: truncated header"):
        find_job(reader, Q[:8])


@pytest.mark.parametrize("query", ["aa11", "4242", "ff00"])
def test_find_job_opens_the_ledger_once(lake, monkeypatch, query):
    """Each open of a Delta table replays its log (at a million logs, the ledger's log of many
    commits): the look-up reads the ledger up to four times, from one snapshot. Counted by a
    subclass of delta-rs' own DeltaTable, which still does every read."""
    from deltalake import DeltaTable

    opened: list[str] = []

    class Counting(DeltaTable):
        def __init__(self, table_uri, *args, **kwargs):
            opened.append(str(table_uri))
            super().__init__(table_uri, *args, **kwargs)

        @staticmethod
        def is_deltatable(table_uri, storage_options=None):
            opened.append(str(table_uri))
            return DeltaTable.is_deltatable(table_uri, storage_options)

    monkeypatch.setattr(arrow, "DeltaTable", Counting)
    reader = LakeReader(load_config("local", overrides={"lake": {"root": lake}}))
    find_job(reader, query)
    ledger = [u for u in opened if u.rstrip("/").endswith("bronze/logs")]
    assert len(ledger) == 1, opened
