"""Bottleneck tags from literal bronze and silver rows: each rule fires on its case and stays quiet on a near miss.

All cases are jobs (log_ids) of one batch: one `transform`, one collect, many assertions.
"""

from __future__ import annotations

import pytest

from features import bottleneck_tags
from iolake.config import load_config
from schemas import SILVER
from tests.support.frames import bronze
from tests.support.tags_lab import GiB, Lab, build, seq

TAGS = load_config("local").tags


@pytest.fixture(scope="module")
def lab_frames(spark):
    return build().frames(spark)


@pytest.fixture(scope="module")
def tags(lab_frames):
    out = bottleneck_tags.transform(*lab_frames, TAGS)
    assert out.columns == SILVER["bottleneck_tags"].columns
    return {(r.log_id, r.tag): r for r in out.collect()}


def test_bottleneck_tags_all_zero_records_do_not_fail(tags):
    # Spark's ANSI mode turns x / 0 into an error; a job that only opened a file gets no_issue
    assert ("zeros", "no_issue") in tags


def fired(tags, log):
    return {t for (lg, t) in tags if lg == log}


POSITIVE = [  # (log, tag, severity, metric, threshold setting, evidence)
    ("small", "small_reads", "high", "small_read_share", "small_requests", ["/small/a"]),
    ("small_few", "small_writes", "high", "small_write_share", "small_requests", ["/small_few/a"]),
    (
        "misaligned",
        "misaligned_file",
        "high",
        "file_not_aligned_share",
        "misaligned_requests",
        ["/misaligned/a", "/misaligned/b"],
    ),
    (
        "misaligned_mem",
        "misaligned_memory",
        "high",
        "memory_not_aligned_share",
        "misaligned_requests",
        ["/misaligned_mem/a"],
    ),
    ("random", "random_reads", "high", "random_read_share", "random_operations", ["/random/a"]),
    (
        "random_w",
        "random_writes",
        "high",
        "random_write_share",
        "random_operations",
        ["/random_w/a"],
    ),
    (
        "shared_imb",
        "shared_file_imbalance",
        "high",
        "shared_file_byte_imbalance",
        "imbalance_stragglers",
        ["/shared_imb/ckpt"],
    ),
    (
        "rank_imb",
        "rank_write_imbalance",
        "high",
        "rank_write_byte_imbalance",
        "imbalance_size",
        ["rank 2"],
    ),
    (
        "rank_mixed",
        "rank_read_imbalance",
        "high",
        "rank_read_byte_imbalance",
        "imbalance_size",
        ["rank 3", "rank 1", "rank 2"],
    ),
    ("straggler", "stragglers", "warn", "rank_time_ratio", "straggler_time_ratio", ["rank 3"]),
    (
        "rank0",
        "rank0_heavy",
        "warn",
        "rank0_bytes_share",
        "rank0_bytes_share",
        ["/rank0/r0", "/rank0/shared"],
    ),
    (
        "indep",
        "no_collective_shared_writes",
        "high",
        "independent_write_share",
        "collective_operations",
        ["/indep/shared.h5"],
    ),
    (
        "indep_mixed",
        "no_collective_shared_reads",
        "high",
        "independent_read_share",
        "collective_operations",
        ["/indep_mixed/shared.h5"],
    ),
    (
        "meta_rank",
        "metadata_heavy",
        "high",
        "max_rank_meta_time_s",
        "metadata_time_rank",
        ["rank 1"],
    ),
    (
        "meta_shared",
        "metadata_heavy",
        "high",
        "max_rank_meta_time_s",
        "metadata_time_rank",
        ["/meta_shared/a"],
    ),
    (
        "meta_share",
        "metadata_heavy",
        "warn",
        "meta_time_share",
        "metadata_time_share",
        ["/meta_share/a", "/meta_share/b"],
    ),
    ("stdio", "stdio_heavy", "high", "stdio_bytes_share", "interface_stdio", ["/stdio/log.txt"]),
    (
        "stripe1",
        "single_stripe_shared",
        "warn",
        "single_stripe_shared_file_bytes",
        "single_stripe_min_bytes",
        ["/stripe1/big"],
    ),
    ("osts", "few_osts", "warn", "ost_coverage", "ost_coverage", ["OST 3", "OST 40"]),
    ("phases", "many_io_phases", "warn", "io_phases", "io_phases", ["phase 6: 10.00-10.10 s"]),
    ("heat_phases", "many_io_phases", "warn", "io_phases", "io_phases", []),
    ("raw", "read_after_write", "info", "raw_bytes_share", "read_after_write_share", ["/raw/tmp"]),
    (
        "reread",
        "redundant_reads",
        "warn",
        "read_amplification",
        "redundant_read_ratio",
        ["/reread/input"],
    ),
    (
        "rewrite",
        "redundant_writes",
        "warn",
        "write_amplification",
        "redundant_write_ratio",
        ["/rewrite/ckpt"],
    ),
    (
        "rewrite_big",
        "redundant_writes",
        "warn",
        "write_amplification",
        "redundant_write_ratio",
        ["/rewrite_big/ckpt"],
    ),
    (
        "small_shared",
        "small_shared_reads",
        "high",
        "small_shared_read_share",
        "small_requests",
        ["/small_shared/ckpt"],
    ),
    (
        "small_shared",
        "small_shared_writes",
        "high",
        "small_shared_write_share",
        "small_requests",
        ["/small_shared/ckpt"],
    ),
    (
        "time_imb",
        "shared_file_time_imbalance",
        "high",
        "shared_file_time_imbalance",
        "imbalance_stragglers",
        ["/time_imb/ckpt"],
    ),
    (
        "mpi_reads",
        "blocking_mpiio_reads",
        "warn",
        "blocking_mpiio_reads",
        "blocking_operations_absolute",
        ["/mpi_reads/in.h5"],
    ),
    (
        "indep",
        "blocking_mpiio_writes",
        "warn",
        "blocking_mpiio_writes",
        "blocking_operations_absolute",
        ["/indep/own.h5", "/indep/shared.h5"],
    ),
    (
        "one_reader",
        "single_reader_shared",
        "warn",
        "single_reader_share",
        "single_reader_share",
        ["/one_reader/input.nml"],
    ),
]

NEGATIVE = [  # (log, tag): a near miss of the tag's rule
    ("small", "small_writes"),
    ("small_few", "small_reads"),
    ("misaligned", "misaligned_memory"),
    ("misaligned_mem", "misaligned_file"),
    ("random", "random_writes"),
    ("random_w", "random_reads"),
    ("shared_bal", "shared_file_imbalance"),
    ("rank_bal", "rank_write_imbalance"),
    ("straggler_short", "stragglers"),
    ("rank0_single", "rank0_heavy"),
    ("rank_bal", "rank0_heavy"),
    ("coll", "no_collective_shared_writes"),
    ("meta_share_short", "metadata_heavy"),
    # a direction with no operations never fires: the write-only jobs get no read tag; reads alone decide
    ("rank_imb", "rank_read_imbalance"),
    ("rank_mixed", "rank_write_imbalance"),
    ("indep", "no_collective_shared_reads"),
    ("indep_mixed", "no_collective_shared_writes"),
    # too little read or written again: under redundant_min_bytes and the share, each, both
    ("rewrite_tiny", "redundant_writes"),
    ("rewrite_share", "redundant_writes"),
    ("reread_small", "redundant_reads"),
    ("stdio_low", "stdio_heavy"),
    ("stripe1_small", "single_stripe_shared"),
    ("osts_spread", "few_osts"),
    ("phases_few", "many_io_phases"),
    ("heat_phases_few", "many_io_phases"),
    ("raw_small", "read_after_write"),
    ("quiet", "redundant_reads"),
    ("quiet", "redundant_writes"),
    ("small", "small_shared_reads"),
    ("small_shared", "small_writes"),
    ("small_few", "small_shared_writes"),
    ("time_bal", "shared_file_time_imbalance"),
    ("nb", "blocking_mpiio_reads"),
    ("nb", "blocking_mpiio_writes"),
    ("two_readers", "single_reader_shared"),
    ("reread", "single_reader_shared"),
]


@pytest.mark.parametrize(
    "log,tag,severity,metric,setting,evidence", POSITIVE, ids=[f"{p[1]}:{p[0]}" for p in POSITIVE]
)
def test_bottleneck_tags_rule_fires_with_evidence(
    tags, log, tag, severity, metric, setting, evidence
):
    row = tags.get((log, tag))
    assert row is not None, f"{tag} did not fire on {log}; fired: {sorted(fired(tags, log))}"
    assert (row.severity, row.metric, row.threshold_name) == (severity, metric, f"tags.{setting}")
    assert row.threshold == float(getattr(TAGS, setting))
    assert row.evidence[: len(evidence)] == evidence
    assert row.value is not None and row.message


@pytest.mark.parametrize("log,tag", NEGATIVE, ids=[f"{t}:{lg}" for lg, t in NEGATIVE])
def test_bottleneck_tags_rule_quiet_on_near_miss(tags, log, tag):
    assert (log, tag) not in tags, f"{tag} fired on {log}: {tags[(log, tag)].message}"


def test_bottleneck_tags_values_and_messages(tags):
    assert tags[("small", "small_reads")].value == pytest.approx(1550 / 2050)
    assert "1550 of 2050 POSIX reads" in tags[("small", "small_reads")].message
    assert tags[("misaligned", "misaligned_file")].value == pytest.approx(160 / 300)
    assert tags[("shared_imb", "shared_file_imbalance")].value == pytest.approx(0.5)
    assert tags[("rank_imb", "rank_write_imbalance")].value == pytest.approx(0.7)
    mixed = tags[("rank_mixed", "rank_read_imbalance")]
    assert mixed.value == pytest.approx(0.9)
    assert (
        "POSIX bytes read by ranks on their own files range from 4.0 MiB to 40.0 MiB over 3 ranks"
        in mixed.message
    )
    assert tags[("rank0", "rank0_heavy")].value == pytest.approx(85 / 100)
    assert tags[("indep", "no_collective_shared_writes")].value == 1.0
    assert (
        "3000 of 3000 MPI-IO writes on shared files"
        in tags[("indep", "no_collective_shared_writes")].message
    )
    assert tags[("indep_mixed", "no_collective_shared_reads")].value == 1.0
    assert (
        "3000 of 3000 MPI-IO reads" in tags[("indep_mixed", "no_collective_shared_reads")].message
    )
    assert tags[("meta_rank", "metadata_heavy")].value == 40.0
    assert tags[("meta_shared", "metadata_heavy")].value == 50.0
    assert tags[("meta_shared", "metadata_heavy")].message.startswith("4 rank(s)")
    assert tags[("stdio", "stdio_heavy")].value == pytest.approx(50 / 150)
    assert tags[("stripe1", "single_stripe_shared")].value == 2 * GiB
    assert tags[("osts", "few_osts")].value == pytest.approx(2 / 8)
    assert tags[("phases", "many_io_phases")].value == 12
    assert tags[("phases", "many_io_phases")].message.startswith("traced I/O comes in 12 phases")
    heat = tags[("heat_phases", "many_io_phases")]
    assert heat.value == 12 and heat.message.startswith("HEATMAP I/O comes in 12 phases")
    assert heat.evidence[0].startswith("phase ") and "-" in heat.evidence[0]
    assert tags[("reread", "redundant_reads")].value == pytest.approx(4.0)


def test_bottleneck_tags_values_of_the_drishti_parity_rules(tags):
    assert tags[("rewrite", "redundant_writes")].value == pytest.approx(4.0)
    big = tags[("rewrite_big", "redundant_writes")]
    assert big.value == pytest.approx(4.0)  # 16 MiB over a 4 MiB extent; 12 of 39 MiB = 30.8% again
    assert "(12.0 MiB written again, 30.8% of the job's bytes; worst 4.0 times)" in big.message
    assert tags[("small_shared", "small_shared_reads")].value == pytest.approx(1200 / 1600)
    assert tags[("small_shared", "small_shared_writes")].value == pytest.approx(1500 / 2000)
    assert (
        "1500 of 2000 POSIX writes on shared files"
        in tags[("small_shared", "small_shared_writes")].message
    )
    assert tags[("time_imb", "shared_file_time_imbalance")].value == pytest.approx(4 / 12)
    assert tags[("mpi_reads", "blocking_mpiio_reads")].value == 64
    assert tags[("indep", "blocking_mpiio_writes")].value == 3000 + 5000
    one = tags[("one_reader", "single_reader_shared")]
    assert one.value == pytest.approx(1.0) and "opened by all 4 ranks" in one.message


def test_bottleneck_tags_catalog_gives_every_tag_a_code_and_accounts_for_every_drishti_code():
    from schemas.bottleneck_tags import CATALOG, LEFT_OUT, RETIRED
    from schemas.bottleneck_tags import TAGS as ALL

    assert tuple(CATALOG) == ALL
    codes = [t.code for t in CATALOG.values()]
    assert len(set(codes)) == len(codes) and all(c.startswith("IO") and len(c) == 4 for c in codes)
    assert not set(codes) & set(RETIRED)  # a retired code is never given to another tag
    assert all(t.recommendation for tag, t in CATALOG.items() if tag != "no_issue")
    drishti_08 = {
        "S01",
        *(f"P{n:02d}" for n in range(1, 23) if n != 20),
        *(f"M{n:02d}" for n in range(1, 11)),
    }
    covered = [c for t in CATALOG.values() for c in t.drishti]
    assert len(covered) == len(set(covered))  # a Drishti code stands for one tag
    assert set(covered) | set(LEFT_OUT) == drishti_08 and not set(covered) & set(LEFT_OUT)


def test_bottleneck_tags_every_rule_has_a_case():
    from schemas.bottleneck_tags import TAGS as ALL

    assert set(bottleneck_tags.RULES) == set(ALL) - {"no_issue"}
    assert {p[1] for p in POSITIVE} == set(bottleneck_tags.RULES)
    assert {t for _, t in NEGATIVE} == set(bottleneck_tags.RULES)


def test_bottleneck_tags_quiet_job_gets_one_no_issue_row(tags):
    assert fired(tags, "quiet") == {"no_issue"}
    row = tags[("quiet", "no_issue")]
    assert (row.severity, row.metric, row.value, row.evidence) == ("info", "tags_fired", 0.0, [])
    jobs = {lg for lg, _ in tags}
    assert jobs == {
        r["log_id"] for r in build().rows["jf"]
    }  # every job has rows; no_issue only ever alone
    assert all(fired(tags, lg) == {"no_issue"} for lg in jobs if (lg, "no_issue") in tags)


def test_bottleneck_tags_threshold_comes_from_conf(spark, lab_frames):
    """small_bytes 100 KiB: the 100K-1M bin no longer counts as small, so `small` loses small_reads."""
    import pyspark.sql.functions as F

    conf = load_config("local", overrides={"tags": {"small_bytes": 102400, "evidence_max": 1}})
    assert conf.tags.small_bytes == 102400 and conf.tags.small_requests == TAGS.small_requests
    tables, ff, jf = lab_frames
    keep = ("small", "misaligned")
    one = {t: df.where(F.col("log_id").isin(*keep)) for t, df in tables.items()}
    only = ("small_reads", "misaligned_file")  # the two rules under test: a small plan, a fast test
    got = {
        (r.log_id, r.tag): r
        for r in bottleneck_tags.transform(
            one,
            ff.where(F.col("log_id").isin(*keep)),
            jf.where(F.col("log_id").isin(*keep)),
            conf.tags,
            only,
        ).collect()
    }
    assert ("small", "small_reads") not in got and ("small", "no_issue") in got
    assert got[("misaligned", "misaligned_file")].evidence == [
        "/misaligned/a"
    ]  # capped at evidence_max


def test_bottleneck_tags_every_threshold_is_named_in_base_yaml():
    import dataclasses

    import yaml

    from iolake.config import CONF_DIR, TagsConf

    listed = yaml.safe_load((CONF_DIR / "base.yaml").read_text())["tags"]
    assert set(listed) == {f.name for f in dataclasses.fields(TagsConf)}
    assert load_config("local").tags == TagsConf(**listed)  # the yaml restates the defaults


def _phase_rows(spark, ops, gap):
    from types import SimpleNamespace

    rows = [
        {
            "log_id": log,
            "record_id": rec,
            "rank": rank,
            "source": "DXT_POSIX",
            "seq": k,
            "op": "write",
            "offset": 0,
            "length": length,
            "start_s": s,
            "end_s": e,
        }
        for k, (log, rec, rank, s, e, length) in enumerate(ops)
    ]
    out = bottleneck_tags._phases(
        bronze(spark, io_ops=rows), SimpleNamespace(io_phase_gap_s=gap)
    ).collect()
    return sorted((r.log_id, r.phase, r.t0, r.t1, r.bytes) for r in out)


def test_phases_split_only_at_idle_gaps_over_the_threshold(spark):
    """Ops of several ranks and records, listed out of order: a long op bridges later short ones; idle gaps of
    1.05 s and 1.01 s split (threshold 1 s), one of 0.95 s does not; an op whose end precedes its start (or is
    null) ends at its start. Phases, bounds and bytes worked out by hand."""
    ops = [
        ("A", 2, 1, 6.31, 6.4, 7),
        ("A", 1, 0, 2.5, 2.6, 10),
        ("A", 1, 0, 0.0, 0.1, 1),
        ("A", 2, 0, 0.4, 3.0, 100),
        ("A", 1, 1, 4.05, 4.1, 1000),
        ("A", 1, 0, 4.3, 4.2, 20),
        ("A", 2, 1, 5.25, 5.3, 3),
        ("A", 1, 1, 5.26, None, 5),
        ("B", 1, 0, 0.0, 1.0, 1),
        ("B", 1, 0, 2.0, 2.5, 2),
    ]
    assert _phase_rows(spark, ops, 1.0) == [
        ("A", 1, 0.0, 3.0, 111),
        ("A", 2, 4.05, 5.3, 1028),
        ("A", 3, 6.31, 6.4, 7),
        ("B", 1, 0.0, 2.5, 3),
    ]  # B's gap is exactly 1.0 s: not over the threshold
    # no threshold: every idle gap splits, touching ops do not
    assert _phase_rows(
        spark, [("C", 1, 0, 0.0, 1.0, 1), ("C", 1, 1, 1.0, 2.0, 2), ("C", 1, 0, 2.5, 3.0, 4)], 0.0
    ) == [("C", 1, 0.0, 2.0, 3), ("C", 2, 2.5, 3.0, 4)]


def test_phases_traced_ops_win_over_heatmap_and_io_ops_is_read_once(spark, tmp_path):
    """A log with DXT ops and HEATMAP bins gets only its traced phases (2, not the heatmap's 3); a log with HEATMAP
    bins only gets those (bins 0 and 4 of 1 s: two phases); and io_ops, read from files, appears once in the
    plan: the traced phases are not computed a second time to find which logs have them."""
    from types import SimpleNamespace

    ops = [
        {
            "log_id": "both",
            "record_id": 1,
            "rank": 0,
            "source": "DXT_POSIX",
            "seq": k,
            "op": "write",
            "offset": 0,
            "length": n,
            "start_s": s,
            "end_s": s + 0.1,
        }
        for k, (s, n) in enumerate(((0.0, 10), (5.0, 20)))
    ]
    heat = [
        {
            "log_id": log,
            "record_id": 9,
            "module": "POSIX",
            "rank": 0,
            "bin_width_s": 1.0,
            "nbins": 8,
            "read_bytes": [0] * 8,
            "write_bytes": [b if k in bins else 0 for k in range(8)],
        }
        for log, bins, b in (("both", (0, 3, 6), 7), ("heat", (0, 4), 100))
    ]
    t = bronze(spark, io_ops=ops, heatmap=heat)
    path = str(tmp_path / "segs")
    t["io_ops"].write.parquet(path)
    t["io_ops"] = spark.read.parquet(path)
    phases = bottleneck_tags._phases(t, SimpleNamespace(io_phase_gap_s=1.0))
    got = sorted((r.log_id, r.phase, r.source, r.t0, r.t1, r.bytes) for r in phases.collect())
    assert got == [
        ("both", 1, "traced", 0.0, 0.1, 10),
        ("both", 2, "traced", 5.0, 5.1, 20),
        ("heat", 1, "HEATMAP", 0.0, 1.0, 100),
        ("heat", 2, "HEATMAP", 4.0, 5.0, 100),
    ]
    plan = (
        phases._jdf.queryExecution().sparkPlan().toString()
    )  # before exchanges (and their reuse) are planned
    assert plan.count("FileScan") == 1, plan  # the only table read from files


def test_stragglers_evidence_names_each_modules_slowest_rank_of_a_shared_file(spark):
    """A shared file's slowest rank comes from its POSIX and its STDIO record alike (one of each per file):
    the evidence lists ranks 5 (POSIX, 30 s), 7 (another file's POSIX, 25 s) and 6 (STDIO, 20 s) by time."""
    lab = Lab()
    lab.job("slow", nprocs=8, rank_time_ratio=5.0, io_time_s=20.0)
    lab.add(
        "posix",
        "slow",
        "a",
        rank=-1,
        **seq(0, 8, POSIX_SLOWEST_RANK=5, POSIX_F_SLOWEST_RANK_TIME=30.0),
    )
    lab.add("stdio", "slow", "a", rank=-1, STDIO_SLOWEST_RANK=6, STDIO_F_SLOWEST_RANK_TIME=20.0)
    lab.add(
        "posix",
        "slow",
        "b",
        rank=-1,
        **seq(0, 8, POSIX_SLOWEST_RANK=7, POSIX_F_SLOWEST_RANK_TIME=25.0),
    )
    out = {
        r.tag: r
        for r in bottleneck_tags.transform(*lab.frames(spark), TAGS, only=("stragglers",)).collect()
    }
    assert out["stragglers"].evidence == ["rank 5", "rank 7", "rank 6"]


def test_record_rows_are_a_hash_aggregation_with_names_joined_after(spark):
    """The per-record aggregation over every record table holds only numbers, so Spark plans a hash
    aggregation: a string (the file's name) or a list (the slowest ranks) in its buffer made it an object
    hash aggregation that sorts once past 128 keys a task (at 100,000 logs: 68 s over 4.6 M rows, 1 GiB
    spilled). The names come from bronze files by a join afterwards."""
    tables, ff, jf = build().frames(spark)
    jobs = jf.select(
        *bottleneck_tags.KEY, "nprocs", "io_time_s", "rank_time_ratio", "meta_time_share"
    )
    recs = bottleneck_tags._records(tables, ff, jobs, TAGS)
    plan = recs._jdf.queryExecution().sparkPlan().toString()
    assert (
        "HashAggregate" in plan
        and "ObjectHashAggregate" not in plan
        and "SortAggregate" not in plan
    ), plan
    names = {r.name for r in recs.collect()}
    assert "/straggler/out.3" in names and "/indep/shared.h5" in names
