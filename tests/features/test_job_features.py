"""Job features (DCA-IO Table I): the slowest-process I/O time and counts, checked by hand."""

from features import file_features, job_features
from iolake.config import load_config
from tests.support.frames import bronze

JOB = {
    "jobid": 42,
    "uid": 7,
    "nprocs": 2,
    "exe": "/opt/bin/ior -a POSIX -w",
    "start_time_sec": 1_700_000_000,
    "end_time_sec": 1_700_000_060,
    "run_time_s": 60.0,
}


def test_job_features_io_time_is_the_slowest_process(spark):
    posix = [
        # rank 0 owns a file: 1 s of I/O; rank 1 owns a file: 3 s; a shared file: slowest 2 s, fastest 0.5 s
        {
            "record_id": 1,
            "rank": 0,
            "POSIX_READS": 10,
            "POSIX_WRITES": 0,
            "POSIX_BYTES_READ": 500,
            "POSIX_F_READ_TIME": 0.75,
            "POSIX_F_META_TIME": 0.25,
            "POSIX_SEQ_READS": 10,
            "POSIX_SIZE_READ_0_100": 10,
            "POSIX_OPENS": 1,
        },
        {
            "record_id": 2,
            "rank": 1,
            "POSIX_READS": 0,
            "POSIX_WRITES": 4,
            "POSIX_BYTES_WRITTEN": 8 * 1048576,
            "POSIX_F_WRITE_TIME": 3.0,
            "POSIX_SEQ_WRITES": 2,
            "POSIX_SIZE_WRITE_1M_4M": 4,
            "POSIX_OPENS": 1,
        },
        {
            "record_id": 3,
            "rank": -1,
            "POSIX_READS": 6,
            "POSIX_WRITES": 0,
            "POSIX_BYTES_READ": 6 * 2048,
            "POSIX_F_READ_TIME": 2.5,
            "POSIX_F_SLOWEST_RANK_TIME": 2.0,
            "POSIX_F_FASTEST_RANK_TIME": 0.5,
            "POSIX_SIZE_READ_1K_10K": 6,
            "POSIX_SEQ_READS": 6,
            "POSIX_OPENS": 2,
        },
    ]
    files = [{"record_id": i, "name": f"/p/f{i}"} for i in (1, 2, 3)]
    tables = bronze(spark, jobs=[JOB], posix=posix, files=files)
    ff = file_features.transform(tables, load_config("local").features)
    j = job_features.transform(tables, ff, load_config("local").suspect).collect()[0]
    assert j.program == "ior" and j.nprocs == 2 and j.jobid == 42
    assert j.io_time_s == 3.0 + 2.0  # slowest own time (rank 1) + slowest time on the shared file
    assert j.fastest_rank_time_s == 1.0 + 0.5 and abs(j.rank_time_ratio - 5.0 / 1.5) < 1e-12
    assert (j.read_requests, j.write_requests) == (16, 4)
    assert (j.small_requests, j.medium_requests) == (10, 6)
    assert j.bytes_read == 500 + 12288 and j.bytes_written == 8 * 1048576
    assert abs(j.seq_pct - 100.0 * 18 / 20) < 1e-9
    assert abs(j.meta_time_share - 0.25 / (0.75 + 0.25 + 3.0 + 2.5)) < 1e-12
    assert abs(j.throughput_mib_s - (500 + 12288 + 8 * 1048576) / 1048576 / 5.0) < 1e-9
    assert (j.file_count, j.shared_file_count) == (3, 1)


def test_job_features_ost_count_is_dca_io_stripe_count_beside_the_largest_files_layout(spark):
    posix = [
        {"record_id": 1, "rank": 0, "POSIX_READS": 1, "POSIX_WRITES": 0, "POSIX_BYTES_READ": 100},
        {
            "record_id": 2,
            "rank": 0,
            "POSIX_READS": 0,
            "POSIX_WRITES": 1,
            "POSIX_BYTES_WRITTEN": 5000,
        },
    ]
    M = 1048576
    lustre = [
        # file 1: 2 stripes on OSTs 3, 7; file 2 (the largest): a 2-component layout, 4 stripes then 2
        {
            "record_id": 1,
            "rank": 0,
            "component": 0,
            "LUSTRE_COMP_STRIPE_COUNT": 2,
            "LUSTRE_COMP_STRIPE_SIZE": M,
            "LUSTRE_OST_IDS": [3, 7],
        },
        {
            "record_id": 2,
            "rank": 0,
            "component": 0,
            "LUSTRE_COMP_STRIPE_COUNT": 4,
            "LUSTRE_COMP_STRIPE_SIZE": 4 * M,
            "LUSTRE_OST_IDS": [7, 8, 9, 10],
        },
        {
            "record_id": 2,
            "rank": 0,
            "component": 1,
            "LUSTRE_COMP_STRIPE_COUNT": 2,
            "LUSTRE_COMP_STRIPE_SIZE": 4 * M,
            "LUSTRE_OST_IDS": [11, -1],
        },  # -1: a stripe not yet given an OST
    ]
    files = [{"record_id": i, "name": f"/lus/f{i}"} for i in (1, 2)]
    tables = bronze(spark, jobs=[JOB], posix=posix, files=files, lustre=lustre)
    ff = file_features.transform(tables, load_config("local").features)
    j = job_features.transform(tables, ff, load_config("local").suspect).collect()[0]
    assert j.ost_count == 6  # {3, 7, 8, 9, 10, 11}
    assert (j.stripe_count, j.stripe_size) == (4, 4 * M)  # file 2's first component
    other = {**JOB, "jobid": 43}
    bare = bronze(spark, jobs=[other], posix=posix, files=files)
    j2 = job_features.transform(
        bare,
        file_features.transform(bare, load_config("local").features),
        load_config("local").suspect,
    ).collect()[0]
    assert j2.ost_count is None and j2.stripe_count is None


def test_job_features_negative_time_counters_count_as_zero(spark):
    # Darshan's ppc64 test logs carry POSIX_F_META_TIME = -2.08e-304 (uninitialised bits that
    # pydarshan reads the same): a negative share stopped the watch gate for a whole drop.
    posix = [
        {
            "record_id": 1,
            "rank": -1,
            "POSIX_READS": 4,
            "POSIX_WRITES": 2,
            "POSIX_BYTES_READ": 4096,
            "POSIX_BYTES_WRITTEN": 2048,
            "POSIX_F_READ_TIME": 0.749659,
            "POSIX_F_WRITE_TIME": 0.137439,
            "POSIX_F_META_TIME": -2.080741e-304,
            "POSIX_F_SLOWEST_RANK_TIME": -1.0,
            "POSIX_F_FASTEST_RANK_TIME": 0.5,
            "POSIX_OPENS": 1,
        },
        {
            "record_id": 2,
            "rank": 0,
            "POSIX_READS": 1,
            "POSIX_WRITES": 0,
            "POSIX_BYTES_READ": 100,
            "POSIX_F_READ_TIME": 0.25,
            "POSIX_F_META_TIME": -3.0,
            "POSIX_OPENS": 1,
        },
    ]
    stdio = [
        {
            "record_id": 3,
            "rank": 0,
            "STDIO_WRITES": 1,
            "STDIO_BYTES_WRITTEN": 10,
            "STDIO_F_WRITE_TIME": 0.003052,
            "STDIO_F_META_TIME": -0.5,
        }
    ]
    files = [{"record_id": i, "name": f"/p/f{i}"} for i in (1, 2, 3)]
    tables = bronze(spark, jobs=[JOB], posix=posix, stdio=stdio, files=files)
    ff = file_features.transform(tables, load_config("local").features)
    j = job_features.transform(tables, ff, load_config("local").suspect).collect()[0]
    assert j.meta_time_s == 0.0 and j.meta_time_share == 0.0
    assert abs(j.read_time_s - (0.749659 + 0.25)) < 1e-12
    assert abs(j.write_time_s - (0.137439 + 0.003052)) < 1e-12
    # rank 0 alone: 0.25 s read + 0.003052 s written (its negative metadata times count as 0);
    # the shared record's slowest-rank time is negative, so it adds nothing
    assert abs(j.io_time_s - (0.25 + 0.003052)) < 1e-12


def test_job_features_stripe_of_files_moving_as_many_bytes_is_one_files_whatever_the_order(spark):
    """Two files moving the same bytes with different layouts: the job's stripe count and size
    are both the higher record id's, in either row order (a bare max_by took each from whichever
    row came first, and could mix the two files)."""
    M = 1048576
    posix = [
        {"record_id": r, "rank": 0, "POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 4096} for r in (5, 9)
    ]
    layouts = [
        {
            "record_id": 5,
            "rank": 0,
            "component": 0,
            "LUSTRE_COMP_STRIPE_COUNT": 8,
            "LUSTRE_COMP_STRIPE_SIZE": M,
            "LUSTRE_OST_IDS": list(range(8)),
        },
        {
            "record_id": 9,
            "rank": 0,
            "component": 0,
            "LUSTRE_COMP_STRIPE_COUNT": 1,
            "LUSTRE_COMP_STRIPE_SIZE": 16 * M,
            "LUSTRE_OST_IDS": [3],
        },
    ]
    files = [{"record_id": r, "name": f"/lus/f{r}"} for r in (5, 9)]
    seen = set()
    for order in (layouts, layouts[::-1]):
        tables = bronze(spark, jobs=[JOB], posix=posix, files=files, lustre=order)
        ff = file_features.transform(tables, load_config("local").features)
        j = job_features.transform(tables, ff, load_config("local").suspect).collect()[0]
        seen.add((j.stripe_count, j.stripe_size))
    assert seen == {(1, 16 * M)}
