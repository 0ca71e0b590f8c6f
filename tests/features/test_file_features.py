"""File features from literal bronze rows: each rule of features/file_features.py can fail here."""

import pytest

from features import file_features
from iolake.config import load_config
from tests.support.frames import bronze

CONF = load_config("local").features
JOB = {
    "jobid": 1,
    "nprocs": 2,
    "start_time_sec": 1_700_000_000,
    "end_time_sec": 1_700_000_100,
    "run_time_s": 100.0,
}


def _posix(record_id, rank, **c):
    base = {
        "record_id": record_id,
        "rank": rank,
        "POSIX_OPENS": 1,
        "POSIX_READS": 0,
        "POSIX_WRITES": 0,
        "POSIX_BYTES_READ": 0,
        "POSIX_BYTES_WRITTEN": 0,
        "POSIX_MAX_BYTE_READ": -1,
        "POSIX_MAX_BYTE_WRITTEN": -1,
        "POSIX_FSYNCS": 0,
        "POSIX_FDSYNCS": 0,
        "POSIX_SEQ_READS": 0,
        "POSIX_SEQ_WRITES": 0,
        "POSIX_CONSEC_READS": 0,
        "POSIX_CONSEC_WRITES": 0,
        "POSIX_ACCESS1_ACCESS": 4096,
        "POSIX_ACCESS1_COUNT": 1,
        "POSIX_F_READ_TIME": 0.0,
        "POSIX_F_WRITE_TIME": 0.0,
        "POSIX_F_META_TIME": 0.0,
    }
    base.update(c)
    return base


def _features(spark, posix, files, jobs=(JOB,), **more):
    tables = bronze(spark, posix=list(posix), files=list(files), jobs=list(jobs), **more)
    return {r.record_id: r for r in file_features.transform(tables, CONF).collect()}


def test_file_features_write_then_read_is_raw_and_fsync_rules(spark):
    rows = [
        # rank 0: 4 writes, 4 reads of 4 KiB, written first; IOR -Y: two fsyncs per write
        _posix(
            1,
            0,
            POSIX_WRITES=4,
            POSIX_READS=4,
            POSIX_BYTES_WRITTEN=16384,
            POSIX_BYTES_READ=16384,
            POSIX_MAX_BYTE_WRITTEN=16383,
            POSIX_MAX_BYTE_READ=16383,
            POSIX_FSYNCS=8,
            POSIX_OPENS=2,
            POSIX_SEQ_WRITES=4,
            POSIX_SEQ_READS=4,
            POSIX_CONSEC_WRITES=3,
            POSIX_CONSEC_READS=3,
            POSIX_F_WRITE_START_TIMESTAMP=1.0,
            POSIX_F_READ_START_TIMESTAMP=2.0,
            POSIX_ACCESS1_COUNT=8,
        ),
        # rank 1, another file: read first, then written, with -e (one extra sync)
        _posix(
            2,
            1,
            POSIX_WRITES=4,
            POSIX_READS=4,
            POSIX_BYTES_WRITTEN=16384,
            POSIX_BYTES_READ=16384,
            POSIX_MAX_BYTE_WRITTEN=16383,
            POSIX_MAX_BYTE_READ=16383,
            POSIX_FSYNCS=9,
            POSIX_OPENS=2,
            POSIX_F_WRITE_START_TIMESTAMP=3.0,
            POSIX_F_READ_START_TIMESTAMP=2.0,
            POSIX_ACCESS1_COUNT=8,
        ),
    ]
    files = [
        {
            "record_id": 1,
            "name": "/dev/shm/run/0/f.0",
            "mount_point": "/dev/shm",
            "fs_type": "tmpfs",
        },
        {
            "record_id": 2,
            "name": "/scratch/run/1/f.1",
            "mount_point": "/scratch",
            "fs_type": "lustre",
        },
    ]
    got = _features(spark, rows, files)
    a, b = got[1], got[2]
    assert (a.io_type, b.io_type) == ("RAW", "WAR")
    assert (a.fsync_per_write, a.fsync) == (True, False)  # 2 per write, nothing extra
    assert (b.fsync_per_write, b.fsync) == (True, True)  # 9 = 2 x 4 + 1
    assert a.interface == "POSIX" and a.transfer_size == 4096 and a.rw_per_open == 4.0
    assert a.file_per_process and a.unique_dir and b.unique_dir
    assert (a.tier, b.tier) == ("bb", "pfs")
    assert (a.consecutive_ops, a.sequential_ops, a.random_ops) == (6, 2, 0)
    assert b.random_access  # no sequential counters at all: every op random


# the second case costs make check 16 s of Spark jobs: it runs in make test only
@pytest.mark.parametrize(
    "bytes_read,expected", [(16384, "RO"), pytest.param(32768, "RAR", marks=pytest.mark.slow)]
)
def test_file_features_reread_is_rar(spark, bytes_read, expected):
    n = bytes_read // 4096
    rows = [
        _posix(
            7,
            -1,
            POSIX_READS=n,
            POSIX_BYTES_READ=bytes_read,
            POSIX_MAX_BYTE_READ=16383,
            POSIX_SEQ_READS=n,
            POSIX_OPENS=2 * (bytes_read // 16384),
        )
    ]
    got = _features(spark, rows, [{"record_id": 7, "name": "/p/shared"}])[7]
    assert got.io_type == expected
    assert got.n_ranks == 2 and not got.file_per_process and not got.unique_dir


def test_file_features_mpiio_collective_view_prealloc_and_hdf5(spark):
    px = [
        _posix(
            5,
            -1,
            POSIX_WRITES=9,
            POSIX_BYTES_WRITTEN=4 * 65536 + 262144,
            POSIX_MAX_BYTE_WRITTEN=262143,
            POSIX_F_WRITE_START_TIMESTAMP=0.5,
        )
    ]
    mp = [
        {
            "record_id": 5,
            "rank": -1,
            "MPIIO_COLL_OPENS": 2,
            "MPIIO_INDEP_OPENS": 1,
            "MPIIO_COLL_WRITES": 4,
            "MPIIO_BYTES_WRITTEN": 262144,
            "MPIIO_VIEWS": 2,
            "MPIIO_ACCESS1_ACCESS": 65536,
            "MPIIO_ACCESS1_COUNT": 4,
            "MPIIO_F_WRITE_START_TIMESTAMP": 0.6,
        }
    ]
    h5f = [{"record_id": 5, "rank": -1, "H5F_OPENS": 2}]
    got = _features(spark, px, [{"record_id": 5, "name": "/p/data.h5"}], mpiio=mp, h5f=h5f)[5]
    assert got.interface == "HDF5" and got.collective and got.file_view and got.preallocate
    assert got.transfer_size == 65536 and got.bytes_written == 262144 and got.io_type == "WO"
    assert got.rw_per_open == 2.0  # 4 collective writes over 2 ranks x 1 pass


@pytest.mark.slow  # 13 s of Spark jobs: make test only, keeping make check under 5 minutes
def test_file_features_skips_std_streams_and_heatmaps(spark):
    st = [
        {"record_id": 9, "rank": 0, "STDIO_WRITES": 3, "STDIO_BYTES_WRITTEN": 30, "STDIO_OPENS": 1},
        {
            "record_id": 10,
            "rank": 0,
            "STDIO_WRITES": 3,
            "STDIO_BYTES_WRITTEN": 30,
            "STDIO_OPENS": 1,
        },
    ]
    files = [{"record_id": 9, "name": "<STDOUT>"}, {"record_id": 10, "name": "/p/log.txt"}]
    got = _features(spark, [], files, stdio=st)
    assert set(got) == {10} and got[10].interface == "STDIO" and got[10].transfer_size == 10
