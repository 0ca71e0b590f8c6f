"""Bottleneck tags from literal bronze and silver rows: each rule fires on its case and stays quiet on a near miss.

All cases are jobs (log_ids) of one batch: one `transform`, one collect, many assertions.
"""
from __future__ import annotations

import pytest

from features import bottleneck_tags
from iolake.config import load_config
from schemas import SILVER
from tests.frames import bronze, frame

MiB = 1024**2
GiB = 1024**3
TAGS = load_config("local").tags


class Lab:
    """Rows of a batch of jobs; `file(log, name)` registers a file record and returns its id."""

    def __init__(self):
        self.rows = {t: [] for t in ("posix", "mpiio", "stdio", "lustre", "heatmap", "io_ops", "files", "ff", "jf")}
        self.ids: dict[tuple[str, str], int] = {}

    def job(self, log, **jf):
        row = {"log_id": log, "nprocs": 4, "io_time_s": 10.0, "rank_time_ratio": 1.0, "meta_time_share": 0.1,
               "file_count": 1, "shared_file_count": 0, "read_requests": 0, "write_requests": 0,
               "bytes_read": 0, "bytes_written": 0}
        self.rows["jf"].append({**row, **jf})

    def file(self, log, name) -> int:
        if (log, name) not in self.ids:
            self.ids[(log, name)] = rid = len(self.ids) + 1
            self.rows["files"].append({"log_id": log, "record_id": rid, "name": f"/{log}/{name}"})
        return self.ids[(log, name)]

    def add(self, table, log, name, rank=0, **c):
        self.rows[table].append({"log_id": log, "record_id": self.file(log, name), "rank": rank, **c})

    def ff(self, log, name, **c):
        row = {"log_id": log, "record_id": self.file(log, name), "file_name": f"/{log}/{name}", "tier": "pfs",
               "interface": "POSIX", "n_ranks": 1, "file_per_process": True, "unique_dir": False,
               "collective": False, "file_view": False, "fsync": False, "fsync_per_write": False,
               "preallocate": False, "opens": 1, "reads": 0, "writes": 0, "io_type": "WO",
               "io_type_source": "counters", "random_access": False, "bytes_read": 0, "bytes_written": 0}
        self.rows["ff"].append({**row, **c})

    def frames(self, spark):
        r = self.rows
        tables = bronze(spark, **{t: r[t] for t in ("posix", "mpiio", "stdio", "lustre", "heatmap", "io_ops", "files")})
        return tables, frame(spark, "file_features", r["ff"]), frame(spark, "job_features", r["jf"])


def seq(n_reads=0, n_writes=0, **c):
    """POSIX counters of n sequential, aligned, 1-4 MiB requests (nothing any rule flags)."""
    return {"POSIX_READS": n_reads, "POSIX_WRITES": n_writes, "POSIX_SEQ_READS": n_reads, "POSIX_SEQ_WRITES": n_writes,
            "POSIX_SIZE_READ_1M_4M": n_reads, "POSIX_SIZE_WRITE_1M_4M": n_writes, "POSIX_FILE_NOT_ALIGNED": 0,
            "POSIX_MEM_NOT_ALIGNED": 0, "POSIX_BYTES_READ": n_reads * 2 * MiB,
            "POSIX_BYTES_WRITTEN": n_writes * 2 * MiB, "POSIX_MAX_BYTE_READ": n_reads * 2 * MiB - 1,
            "POSIX_MAX_BYTE_WRITTEN": n_writes * 2 * MiB - 1, **c}


def build() -> Lab:
    lab = Lab()
    for log in ("quiet small small_few misaligned misaligned_mem random random_w shared_imb shared_bal rank_imb "
                "rank_bal rank0 rank0_single indep coll meta_rank meta_shared meta_share meta_share_short stdio "
                "stdio_low stripe1 stripe1_small osts osts_spread phases phases_few heat_phases heat_phases_few "
                "raw raw_small reread rewrite small_shared time_imb time_bal mpi_reads nb one_reader two_readers "
                "rank_mixed indep_mixed rewrite_tiny rewrite_big rewrite_share reread_small").split():
        lab.job(log)
    lab.job("straggler", rank_time_ratio=5.0, io_time_s=20.0)
    lab.job("straggler_short", rank_time_ratio=5.0, io_time_s=0.5)
    lab.add("posix", "quiet", "data", rank=-1, **seq(10, 10))
    lab.ff("quiet", "data", io_type="WAR", bytes_read=20 * MiB, bytes_written=20 * MiB)

    # small requests: 1500 of 2050 reads < 1 MiB (file c's 50 are too few to name); writes 1500 of 20000
    lab.add("posix", "small", "a", **seq(1500, 20000, POSIX_SIZE_READ_1M_4M=0, POSIX_SIZE_READ_100K_1M=1500,
                                          POSIX_SIZE_WRITE_0_100=1500, POSIX_SIZE_WRITE_1M_4M=18500))
    lab.add("posix", "small", "b", **seq(500))
    lab.add("posix", "small", "c", **seq(50, POSIX_SIZE_READ_1M_4M=0, POSIX_SIZE_READ_1K_10K=50))
    lab.add("posix", "small_few", "a", **seq(900, 1200, POSIX_SIZE_READ_1M_4M=0, POSIX_SIZE_READ_0_100=900,
                                              POSIX_SIZE_WRITE_1M_4M=0, POSIX_SIZE_WRITE_10K_100K=1200))
    # misaligned: 160 of 300 file offsets; memory 5 of 300; and the other way round
    lab.add("posix", "misaligned", "a", **seq(100, 100, POSIX_FILE_NOT_ALIGNED=150, POSIX_MEM_NOT_ALIGNED=5,
                                               POSIX_FILE_ALIGNMENT=4096))
    lab.add("posix", "misaligned", "b", **seq(0, 100, POSIX_FILE_NOT_ALIGNED=10))
    lab.add("posix", "misaligned_mem", "a", **seq(100, 100, POSIX_FILE_NOT_ALIGNED=10, POSIX_MEM_NOT_ALIGNED=50))
    # random: 4000 of 5000 reads; 500 of 5000 writes
    lab.add("posix", "random", "a", **seq(5000, 5000, POSIX_SEQ_READS=1000, POSIX_SEQ_WRITES=4500))
    lab.add("posix", "random_w", "a", **seq(3000, 3000, POSIX_SEQ_READS=2500, POSIX_SEQ_WRITES=0))
    # shared-file imbalance: slowest rank 600 MiB vs fastest 100 MiB of 1000 MiB; a balanced file beside it
    for log, slow, fast in (("shared_imb", 600, 100), ("shared_bal", 260, 240)):
        lab.add("posix", log, "ckpt", rank=-1, **seq(0, 500, POSIX_SLOWEST_RANK_BYTES=slow * MiB,
                                                       POSIX_FASTEST_RANK_BYTES=fast * MiB,
                                                       POSIX_BYTES_WRITTEN=1000 * MiB))
    lab.add("posix", "shared_imb", "even", rank=-1, **seq(0, 500, POSIX_SLOWEST_RANK_BYTES=260 * MiB,
                                                           POSIX_FASTEST_RANK_BYTES=240 * MiB,
                                                           POSIX_BYTES_WRITTEN=1000 * MiB))
    # rank size imbalance over ranks' own files, writes only: 100/100/30/100 MiB vs 100/90/100/95
    for log, sizes in (("rank_imb", (100, 100, 30, 100)), ("rank_bal", (100, 90, 100, 95))):
        for r, mib in enumerate(sizes):
            lab.add("posix", log, f"out.{r}", rank=r, **seq(0, mib // 2))
    # every rank writes 100 MiB; ranks 1-3 read 40/30/4 MiB (rank 0 none): reads alone are imbalanced,
    # (40 - 4) / 40 = 0.9; reads and writes together, 100/140/130/104 MiB, would be (140 - 100) / 140 < 0.3
    for r, mib in enumerate((0, 40, 30, 4)):
        lab.add("posix", "rank_mixed", f"out.{r}", rank=r, **seq(mib // 2, 50))
    # rank 0: 80 MiB alone + 5 MiB as slowest rank of a shared file, of 100 MiB; single-rank job alike
    lab.add("posix", "rank0", "r0", rank=0, **seq(0, 40))
    lab.add("posix", "rank0", "r1", rank=1, **seq(0, 5))
    lab.add("posix", "rank0", "shared", rank=-1, **seq(0, 5, POSIX_SLOWEST_RANK=0, POSIX_SLOWEST_RANK_BYTES=5 * MiB,
                                                        POSIX_FASTEST_RANK=2, POSIX_FASTEST_RANK_BYTES=1 * MiB))
    lab.rows["jf"] = [dict(r, nprocs=1) if r["log_id"] == "rank0_single" else r for r in lab.rows["jf"]]
    lab.add("posix", "rank0_single", "r0", rank=0, **seq(0, 40))
    # stragglers: rank 3 spends 15 s, the others 3 s
    for log in ("straggler", "straggler_short"):
        for r in range(4):
            lab.add("posix", log, f"out.{r}", rank=r, **seq(0, 10, POSIX_F_WRITE_TIME=15.0 if r == 3 else 3.0))
    # MPI-IO: 3000 independent writes on a shared file (5000 more on a rank's own file do not count)
    lab.add("mpiio", "indep", "shared.h5", rank=-1, MPIIO_INDEP_WRITES=3000, MPIIO_COLL_WRITES=0)
    lab.add("mpiio", "indep", "own.h5", rank=0, MPIIO_INDEP_WRITES=5000)
    lab.add("mpiio", "coll", "shared.h5", rank=-1, MPIIO_INDEP_WRITES=1500, MPIIO_COLL_WRITES=3000)
    # 3000 independent reads and 4000 collective writes on a shared file: all reads are independent
    # (reads and writes together, 3000 of 7000, would stay under the 0.5 share)
    lab.add("mpiio", "indep_mixed", "shared.h5", rank=-1, MPIIO_INDEP_READS=3000, MPIIO_COLL_READS=0,
            MPIIO_INDEP_WRITES=0, MPIIO_COLL_WRITES=4000)
    # metadata: rank 1 spends 40 s; 200 s over a shared file of 4 ranks (50 s each); a 80% share of 10 s
    lab.add("posix", "meta_rank", "a", rank=0, **seq(0, 10, POSIX_F_META_TIME=5.0))
    lab.add("posix", "meta_rank", "b", rank=1, **seq(0, 10, POSIX_F_META_TIME=40.0))
    lab.add("posix", "meta_shared", "a", rank=-1, **seq(0, 10, POSIX_F_META_TIME=200.0))
    lab.ff("meta_shared", "a", n_ranks=4, meta_time_s=200.0)
    for log, t in (("meta_share", 10.0), ("meta_share_short", 0.5)):
        lab.rows["jf"] = [dict(r, meta_time_share=0.8, io_time_s=t) if r["log_id"] == log else r
                          for r in lab.rows["jf"]]
        lab.add("posix", log, "a", rank=0, **seq(0, 10, POSIX_F_META_TIME=2.0))
        lab.ff(log, "a", meta_time_s=8.0)
        lab.ff(log, "b", meta_time_s=0.5)
    # STDIO: 50 MiB of 150 MiB; 5 MiB of 105 MiB
    for log, mib in (("stdio", 50), ("stdio_low", 5)):
        lab.add("posix", log, "data", **seq(0, 50))
        lab.add("stdio", log, "log.txt", STDIO_BYTES_WRITTEN=mib * MiB, STDIO_BYTES_READ=0)
    # Lustre: a 2 GiB shared file on one stripe (not: a per-process one, an 8-stripe one, a small one)
    for log, name, n_ranks, size, stripes in (("stripe1", "big", 4, 2 * GiB, 1), ("stripe1", "fpp", 1, 2 * GiB, 1),
                                              ("stripe1", "wide", 4, 3 * GiB, 8),
                                              ("stripe1_small", "big", 4, 100 * MiB, 1)):
        lab.ff(log, name, n_ranks=n_ranks, bytes_written=size)
        lab.add("lustre", log, name, rank=-1, component=0, LUSTRE_COMP_STRIPE_COUNT=stripes,
                LUSTRE_OST_IDS=list(range(stripes)))
    # OSTs: 8 one-stripe files on OSTs 3 (x6) and 40 (x2) vs 4 files on 4 OSTs
    for k, ost in enumerate((3, 3, 3, 40, 3, 3, 40, 3)):
        lab.add("lustre", "osts", f"f{k}", rank=-1, component=0, LUSTRE_COMP_STRIPE_COUNT=1, LUSTRE_OST_IDS=[ost])
    for k in range(4):
        lab.add("lustre", "osts_spread", f"f{k}", rank=k, component=0, LUSTRE_COMP_STRIPE_COUNT=1, LUSTRE_OST_IDS=[k])
    # DXT: 12 bursts 2 s apart (the 6th is the largest) vs 12 ops 0.5 s apart
    for log, step in (("phases", 2.0), ("phases_few", 0.5)):
        for k in range(12):
            lab.add("io_ops", log, "trace", source="DXT_POSIX", seq=k, op="write", offset=k * MiB,
                    length=(8 if k == 5 else 1) * MiB, start_s=k * step, end_s=k * step + 0.1)
    # no DXT, HEATMAP only (1 s bins, 2 ranks): 12 bursts 3 s apart vs 12 bursts 2 s apart (1 s idle,
    # not over io_phase_gap_s); an MPI-IO heatmap with other bins (its bytes reach POSIX) is not counted
    for log, step in (("heat_phases", 3), ("heat_phases_few", 2)):
        bins = [MiB if k % step == 0 and k // step < 12 else 0 for k in range(40)]
        for rank in (0, 1):
            lab.rows["heatmap"].append({"log_id": log, "record_id": 99, "module": "POSIX", "rank": rank,
                                        "bin_width_s": 1.0, "nbins": 40, "read_bytes": [0] * 40, "write_bytes": bins})
        lab.rows["heatmap"].append({"log_id": log, "record_id": 98, "module": "MPIIO", "rank": 0, "bin_width_s": 1.0,
                                    "nbins": 40, "read_bytes": [MiB if k % 2 else 0 for k in range(40)],
                                    "write_bytes": [0] * 40})
    # read after write: 80 of 100 MiB vs 5 of 100 MiB
    for log, raw in (("raw", 80), ("raw_small", 5)):
        lab.ff(log, "tmp", io_type="RAW", bytes_read=raw * MiB // 2, bytes_written=raw * MiB // 2)
        lab.ff(log, "out", io_type="WO", bytes_written=(100 - raw) * MiB)
    # redundant reads: 32 MiB read from an 8 MiB extent (24 MiB again, of 36 MiB); another file read once
    lab.add("posix", "reread", "input", rank=-1, **seq(16, POSIX_MAX_BYTE_READ=8 * MiB - 1))
    lab.add("posix", "reread", "once", rank=-1, **seq(2))
    # redundant writes: 32 MiB written to an 8 MiB extent (a checkpoint rewritten in place)
    lab.add("posix", "rewrite", "ckpt", rank=-1, **seq(0, 16, POSIX_MAX_BYTE_WRITTEN=8 * MiB - 1))
    # a 769-byte index written with 770 bytes (1 byte again) beside 39,000,000 bytes of data: too little
    lab.add("posix", "rewrite_tiny", "index", rank=-1, **seq(0, 1, POSIX_BYTES_WRITTEN=770,
                                                             POSIX_MAX_BYTE_WRITTEN=768))
    lab.add("posix", "rewrite_tiny", "data", rank=-1, **seq(0, 20, POSIX_BYTES_WRITTEN=39_000_000,
                                                            POSIX_MAX_BYTE_WRITTEN=38_999_999))
    # the same job size with a 4 MiB checkpoint written 4 times (12 MiB again, of 16 + 23 = 39 MiB)
    lab.add("posix", "rewrite_big", "ckpt", rank=-1, **seq(0, 8, POSIX_MAX_BYTE_WRITTEN=4 * MiB - 1))
    lab.add("posix", "rewrite_big", "data", rank=-1, **seq(0, 8, POSIX_BYTES_WRITTEN=23 * MiB,
                                                           POSIX_MAX_BYTE_WRITTEN=23 * MiB - 1))
    # 32 MiB written again (64 MiB to a 32 MiB extent) beside 4 GiB of data, 32 / 4160 = 0.77%: over
    # redundant_min_bytes, not over the share
    lab.add("posix", "rewrite_share", "ckpt", rank=-1, **seq(0, 32, POSIX_MAX_BYTE_WRITTEN=32 * MiB - 1))
    lab.add("posix", "rewrite_share", "data", rank=-1, **seq(0, 2048))
    # a 2 MiB input read 4 times, the job's only I/O: 6 MiB again, all of the share, not the bytes
    lab.add("posix", "reread_small", "input", rank=-1, **seq(4, POSIX_MAX_BYTE_READ=2 * MiB - 1))
    # small requests on a shared file: 1200 of 1600 reads and 1500 of 2000 writes; the job's 20000 large
    # writes to a rank's own file keep small_writes quiet (1500 of 22000 = 6.8%)
    lab.add("posix", "small_shared", "ckpt", rank=-1, **seq(1600, 2000, POSIX_SIZE_READ_1M_4M=400,
                                                             POSIX_SIZE_READ_0_100=1200, POSIX_SIZE_WRITE_1M_4M=500,
                                                             POSIX_SIZE_WRITE_10K_100K=1500))
    lab.add("posix", "small_shared", "own", rank=0, **seq(0, 20000))
    # time imbalance on a shared file: 12 s of I/O over ranks, slowest 5 s vs fastest 1 s; 3.2 vs 2.0 s
    for log, slow, fast in (("time_imb", 5.0, 1.0), ("time_bal", 3.2, 2.0)):
        lab.add("posix", log, "ckpt", rank=-1, **seq(0, 10, POSIX_F_WRITE_TIME=10.0, POSIX_F_META_TIME=2.0,
                                                      POSIX_F_SLOWEST_RANK_TIME=slow, POSIX_F_FASTEST_RANK_TIME=fast))
    # MPI-IO: 64 blocking collective reads; blocking ops beside a non-blocking (split-collective) one
    lab.add("mpiio", "mpi_reads", "in.h5", rank=-1, MPIIO_COLL_READS=64, MPIIO_INDEP_READS=0)
    lab.add("mpiio", "nb", "out.h5", rank=-1, MPIIO_INDEP_WRITES=100, MPIIO_NB_WRITES=1, MPIIO_COLL_READS=10,
            MPIIO_SPLIT_READS=2)
    # all 4 ranks open a 16 MiB input, one reads it (neither slowest nor fastest: only the variance of the
    # ranks' bytes tells, at its maximum B^2 (n - 1) / n^2 = (16 MiB)^2 * 3 / 16); two ranks reading 8 MiB each
    lab.add("posix", "one_reader", "input.nml", rank=-1, **seq(8, POSIX_SLOWEST_RANK_BYTES=0,
                                                              POSIX_FASTEST_RANK_BYTES=0,
                                                              POSIX_F_VARIANCE_RANK_BYTES=5.2776558133248e13))
    lab.add("posix", "two_readers", "input.nml", rank=-1, **seq(8, POSIX_SLOWEST_RANK_BYTES=8 * MiB,
                                                               POSIX_FASTEST_RANK_BYTES=0,
                                                               POSIX_F_VARIANCE_RANK_BYTES=1.7592186044416e13))
    # all-zero records (seen in real logs: opened, never read or written) must not divide by zero
    lab.job("zeros", io_time_s=0.0)
    lab.add("posix", "zeros", "opened", rank=-1, **{c: 0 for c in (
        "POSIX_OPENS", "POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN",
        "POSIX_SLOWEST_RANK_BYTES", "POSIX_FASTEST_RANK_BYTES", "POSIX_SEQ_READS", "POSIX_SEQ_WRITES")},
        POSIX_MAX_BYTE_READ=-1, POSIX_MAX_BYTE_WRITTEN=-1)
    lab.add("mpiio", "zeros", "opened", rank=-1, MPIIO_INDEP_READS=0, MPIIO_COLL_READS=0)
    return lab


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
    ("misaligned", "misaligned_file", "high", "file_not_aligned_share", "misaligned_requests",
     ["/misaligned/a", "/misaligned/b"]),
    ("misaligned_mem", "misaligned_memory", "high", "memory_not_aligned_share", "misaligned_requests",
     ["/misaligned_mem/a"]),
    ("random", "random_reads", "high", "random_read_share", "random_operations", ["/random/a"]),
    ("random_w", "random_writes", "high", "random_write_share", "random_operations", ["/random_w/a"]),
    ("shared_imb", "shared_file_imbalance", "high", "shared_file_byte_imbalance", "imbalance_stragglers",
     ["/shared_imb/ckpt"]),
    ("rank_imb", "rank_write_imbalance", "high", "rank_write_byte_imbalance", "imbalance_size", ["rank 2"]),
    ("rank_mixed", "rank_read_imbalance", "high", "rank_read_byte_imbalance", "imbalance_size",
     ["rank 3", "rank 1", "rank 2"]),
    ("straggler", "stragglers", "warn", "rank_time_ratio", "straggler_time_ratio", ["rank 3"]),
    ("rank0", "rank0_heavy", "warn", "rank0_bytes_share", "rank0_bytes_share", ["/rank0/r0", "/rank0/shared"]),
    ("indep", "no_collective_shared_writes", "high", "independent_write_share", "collective_operations",
     ["/indep/shared.h5"]),
    ("indep_mixed", "no_collective_shared_reads", "high", "independent_read_share", "collective_operations",
     ["/indep_mixed/shared.h5"]),
    ("meta_rank", "metadata_heavy", "high", "max_rank_meta_time_s", "metadata_time_rank", ["rank 1"]),
    ("meta_shared", "metadata_heavy", "high", "max_rank_meta_time_s", "metadata_time_rank", ["/meta_shared/a"]),
    ("meta_share", "metadata_heavy", "warn", "meta_time_share", "metadata_time_share",
     ["/meta_share/a", "/meta_share/b"]),
    ("stdio", "stdio_heavy", "high", "stdio_bytes_share", "interface_stdio", ["/stdio/log.txt"]),
    ("stripe1", "single_stripe_shared", "warn", "single_stripe_shared_file_bytes", "single_stripe_min_bytes",
     ["/stripe1/big"]),
    ("osts", "few_osts", "warn", "ost_coverage", "ost_coverage", ["OST 3", "OST 40"]),
    ("phases", "many_io_phases", "warn", "io_phases", "io_phases", ["phase 6: 10.00-10.10 s"]),
    ("heat_phases", "many_io_phases", "warn", "io_phases", "io_phases", []),
    ("raw", "read_after_write", "info", "raw_bytes_share", "read_after_write_share", ["/raw/tmp"]),
    ("reread", "redundant_reads", "warn", "read_amplification", "redundant_read_ratio", ["/reread/input"]),
    ("rewrite", "redundant_writes", "warn", "write_amplification", "redundant_write_ratio", ["/rewrite/ckpt"]),
    ("rewrite_big", "redundant_writes", "warn", "write_amplification", "redundant_write_ratio",
     ["/rewrite_big/ckpt"]),
    ("small_shared", "small_shared_reads", "high", "small_shared_read_share", "small_requests",
     ["/small_shared/ckpt"]),
    ("small_shared", "small_shared_writes", "high", "small_shared_write_share", "small_requests",
     ["/small_shared/ckpt"]),
    ("time_imb", "shared_file_time_imbalance", "high", "shared_file_time_imbalance", "imbalance_stragglers",
     ["/time_imb/ckpt"]),
    ("mpi_reads", "blocking_mpiio_reads", "warn", "blocking_mpiio_reads", "blocking_operations_absolute",
     ["/mpi_reads/in.h5"]),
    ("indep", "blocking_mpiio_writes", "warn", "blocking_mpiio_writes", "blocking_operations_absolute",
     ["/indep/own.h5", "/indep/shared.h5"]),
    ("one_reader", "single_reader_shared", "warn", "single_reader_share", "single_reader_share",
     ["/one_reader/input.nml"]),
]

NEGATIVE = [  # (log, tag): a near miss of the tag's rule
    ("small", "small_writes"), ("small_few", "small_reads"), ("misaligned", "misaligned_memory"),
    ("misaligned_mem", "misaligned_file"), ("random", "random_writes"), ("random_w", "random_reads"),
    ("shared_bal", "shared_file_imbalance"),
    ("rank_bal", "rank_write_imbalance"), ("straggler_short", "stragglers"), ("rank0_single", "rank0_heavy"),
    ("rank_bal", "rank0_heavy"), ("coll", "no_collective_shared_writes"), ("meta_share_short", "metadata_heavy"),
    # a direction with no operations never fires: the write-only jobs get no read tag; reads alone decide
    ("rank_imb", "rank_read_imbalance"), ("rank_mixed", "rank_write_imbalance"),
    ("indep", "no_collective_shared_reads"), ("indep_mixed", "no_collective_shared_writes"),
    # too little read or written again: under redundant_min_bytes and the share, each, both
    ("rewrite_tiny", "redundant_writes"), ("rewrite_share", "redundant_writes"), ("reread_small", "redundant_reads"),
    ("stdio_low", "stdio_heavy"), ("stripe1_small", "single_stripe_shared"), ("osts_spread", "few_osts"),
    ("phases_few", "many_io_phases"), ("heat_phases_few", "many_io_phases"), ("raw_small", "read_after_write"),
    ("quiet", "redundant_reads"),
    ("quiet", "redundant_writes"), ("small", "small_shared_reads"), ("small_shared", "small_writes"),
    ("small_few", "small_shared_writes"), ("time_bal", "shared_file_time_imbalance"), ("nb", "blocking_mpiio_reads"),
    ("nb", "blocking_mpiio_writes"), ("two_readers", "single_reader_shared"), ("reread", "single_reader_shared"),
]


@pytest.mark.parametrize("log,tag,severity,metric,setting,evidence", POSITIVE, ids=[f"{p[1]}:{p[0]}" for p in POSITIVE])
def test_bottleneck_tags_rule_fires_with_evidence(tags, log, tag, severity, metric, setting, evidence):
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
    assert "POSIX bytes read by ranks on their own files range from 4.0 MiB to 40.0 MiB over 3 ranks" in mixed.message
    assert tags[("rank0", "rank0_heavy")].value == pytest.approx(85 / 100)
    assert tags[("indep", "no_collective_shared_writes")].value == 1.0
    assert "3000 of 3000 MPI-IO writes on shared files" in tags[("indep", "no_collective_shared_writes")].message
    assert tags[("indep_mixed", "no_collective_shared_reads")].value == 1.0
    assert "3000 of 3000 MPI-IO reads" in tags[("indep_mixed", "no_collective_shared_reads")].message
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
    assert "1500 of 2000 POSIX writes on shared files" in tags[("small_shared", "small_shared_writes")].message
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
    drishti_08 = {"S01", *(f"P{n:02d}" for n in range(1, 23) if n != 20), *(f"M{n:02d}" for n in range(1, 11))}
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
    assert jobs == {r["log_id"] for r in build().rows["jf"]}  # every job has rows; no_issue only ever alone
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
    got = {(r.log_id, r.tag): r for r in bottleneck_tags.transform(
        one, ff.where(F.col("log_id").isin(*keep)), jf.where(F.col("log_id").isin(*keep)), conf.tags, only).collect()}
    assert ("small", "small_reads") not in got and ("small", "no_issue") in got
    assert got[("misaligned", "misaligned_file")].evidence == ["/misaligned/a"]  # capped at evidence_max


def test_bottleneck_tags_every_threshold_is_named_in_base_yaml():
    import dataclasses

    import yaml

    from iolake.config import CONF_DIR, TagsConf

    listed = yaml.safe_load((CONF_DIR / "base.yaml").read_text())["tags"]
    assert set(listed) == {f.name for f in dataclasses.fields(TagsConf)}
    assert load_config("local").tags == TagsConf(**listed)  # the yaml restates the defaults


def _phase_rows(spark, ops, gap):
    from types import SimpleNamespace

    rows = [{"log_id": log, "record_id": rec, "rank": rank, "source": "DXT_POSIX", "seq": k, "op": "write",
             "offset": 0, "length": length, "start_s": s, "end_s": e}
            for k, (log, rec, rank, s, e, length) in enumerate(ops)]
    out = bottleneck_tags._phases(bronze(spark, io_ops=rows), SimpleNamespace(io_phase_gap_s=gap)).collect()
    return sorted((r.log_id, r.phase, r.t0, r.t1, r.bytes) for r in out)


def test_phases_split_only_at_idle_gaps_over_the_threshold(spark):
    """Ops of several ranks and records, listed out of order: a long op bridges later short ones; idle gaps of
    1.05 s and 1.01 s split (threshold 1 s), one of 0.95 s does not; an op whose end precedes its start (or is
    null) ends at its start. Phases, bounds and bytes worked out by hand."""
    ops = [("A", 2, 1, 6.31, 6.4, 7), ("A", 1, 0, 2.5, 2.6, 10), ("A", 1, 0, 0.0, 0.1, 1),
           ("A", 2, 0, 0.4, 3.0, 100), ("A", 1, 1, 4.05, 4.1, 1000), ("A", 1, 0, 4.3, 4.2, 20),
           ("A", 2, 1, 5.25, 5.3, 3), ("A", 1, 1, 5.26, None, 5),
           ("B", 1, 0, 0.0, 1.0, 1), ("B", 1, 0, 2.0, 2.5, 2)]
    assert _phase_rows(spark, ops, 1.0) == [
        ("A", 1, 0.0, 3.0, 111), ("A", 2, 4.05, 5.3, 1028), ("A", 3, 6.31, 6.4, 7),
        ("B", 1, 0.0, 2.5, 3)]  # B's gap is exactly 1.0 s: not over the threshold
    # no threshold: every idle gap splits, touching ops do not
    assert _phase_rows(spark, [("C", 1, 0, 0.0, 1.0, 1), ("C", 1, 1, 1.0, 2.0, 2), ("C", 1, 0, 2.5, 3.0, 4)], 0.0) == [
        ("C", 1, 0.0, 2.0, 3), ("C", 2, 2.5, 3.0, 4)]


def test_phases_traced_ops_win_over_heatmap_and_io_ops_is_read_once(spark, tmp_path):
    """A log with DXT ops and HEATMAP bins gets only its traced phases (2, not the heatmap's 3); a log with HEATMAP
    bins only gets those (bins 0 and 4 of 1 s: two phases); and io_ops, read from files, appears once in the
    plan: the traced phases are not computed a second time to find which logs have them."""
    from types import SimpleNamespace

    ops = [{"log_id": "both", "record_id": 1, "rank": 0, "source": "DXT_POSIX", "seq": k, "op": "write", "offset": 0,
            "length": n, "start_s": s, "end_s": s + 0.1} for k, (s, n) in enumerate(((0.0, 10), (5.0, 20)))]
    heat = [{"log_id": log, "record_id": 9, "module": "POSIX", "rank": 0, "bin_width_s": 1.0, "nbins": 8,
             "read_bytes": [0] * 8, "write_bytes": [b if k in bins else 0 for k in range(8)]}
            for log, bins, b in (("both", (0, 3, 6), 7), ("heat", (0, 4), 100))]
    t = bronze(spark, io_ops=ops, heatmap=heat)
    path = str(tmp_path / "segs")
    t["io_ops"].write.parquet(path)
    t["io_ops"] = spark.read.parquet(path)
    phases = bottleneck_tags._phases(t, SimpleNamespace(io_phase_gap_s=1.0))
    got = sorted((r.log_id, r.phase, r.source, r.t0, r.t1, r.bytes) for r in phases.collect())
    assert got == [("both", 1, "traced", 0.0, 0.1, 10), ("both", 2, "traced", 5.0, 5.1, 20),
                   ("heat", 1, "HEATMAP", 0.0, 1.0, 100), ("heat", 2, "HEATMAP", 4.0, 5.0, 100)]
    plan = phases._jdf.queryExecution().sparkPlan().toString()  # before exchanges (and their reuse) are planned
    assert plan.count("FileScan") == 1, plan  # the only table read from files


def test_stragglers_evidence_names_each_modules_slowest_rank_of_a_shared_file(spark):
    """A shared file's slowest rank comes from its POSIX and its STDIO record alike (one of each per file):
    the evidence lists ranks 5 (POSIX, 30 s), 7 (another file's POSIX, 25 s) and 6 (STDIO, 20 s) by time."""
    lab = Lab()
    lab.job("slow", nprocs=8, rank_time_ratio=5.0, io_time_s=20.0)
    lab.add("posix", "slow", "a", rank=-1, **seq(0, 8, POSIX_SLOWEST_RANK=5, POSIX_F_SLOWEST_RANK_TIME=30.0))
    lab.add("stdio", "slow", "a", rank=-1, STDIO_SLOWEST_RANK=6, STDIO_F_SLOWEST_RANK_TIME=20.0)
    lab.add("posix", "slow", "b", rank=-1, **seq(0, 8, POSIX_SLOWEST_RANK=7, POSIX_F_SLOWEST_RANK_TIME=25.0))
    out = {r.tag: r for r in bottleneck_tags.transform(*lab.frames(spark), TAGS, only=("stragglers",)).collect()}
    assert out["stragglers"].evidence == ["rank 5", "rank 7", "rank 6"]


def test_record_rows_are_a_hash_aggregation_with_names_joined_after(spark):
    """The per-record aggregation over every record table holds only numbers, so Spark plans a hash
    aggregation: a string (the file's name) or a list (the slowest ranks) in its buffer made it an object
    hash aggregation that sorts once past 128 keys a task (at 100,000 logs: 68 s over 4.6 M rows, 1 GiB
    spilled). The names come from bronze files by a join afterwards."""
    tables, ff, jf = build().frames(spark)
    jobs = jf.select(*bottleneck_tags.KEY, "nprocs", "io_time_s", "rank_time_ratio", "meta_time_share")
    recs = bottleneck_tags._records(tables, ff, jobs, TAGS)
    plan = recs._jdf.queryExecution().sparkPlan().toString()
    assert "HashAggregate" in plan and "ObjectHashAggregate" not in plan and "SortAggregate" not in plan, plan
    names = {r.name for r in recs.collect()}
    assert "/straggler/out.3" in names and "/indep/shared.h5" in names
