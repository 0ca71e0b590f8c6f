"""The tags "lab": literal bronze and silver rows of a batch of jobs, one per bottleneck rule's
case and near miss, so every rule can fire (or stay quiet) in one `transform`. Used by
tests/features/test_bottleneck_tags.py and `python -m bench.transform_ab --stage tags --lab`.
"""

from __future__ import annotations

from tests.support.frames import bronze, frame

MiB = 1024**2
GiB = 1024**3


class Lab:
    """Rows of a batch of jobs; `file(log, name)` registers a file record and returns its id."""

    def __init__(self):
        self.rows = {
            t: []
            for t in ("posix", "mpiio", "stdio", "lustre", "heatmap", "io_ops", "files", "ff", "jf")
        }
        self.ids: dict[tuple[str, str], int] = {}

    def job(self, log, **jf):
        row = {
            "log_id": log,
            "nprocs": 4,
            "io_time_s": 10.0,
            "rank_time_ratio": 1.0,
            "meta_time_share": 0.1,
            "file_count": 1,
            "shared_file_count": 0,
            "read_requests": 0,
            "write_requests": 0,
            "bytes_read": 0,
            "bytes_written": 0,
        }
        self.rows["jf"].append({**row, **jf})

    def file(self, log, name) -> int:
        if (log, name) not in self.ids:
            self.ids[(log, name)] = rid = len(self.ids) + 1
            self.rows["files"].append({"log_id": log, "record_id": rid, "name": f"/{log}/{name}"})
        return self.ids[(log, name)]

    def add(self, table, log, name, rank=0, **c):
        self.rows[table].append(
            {"log_id": log, "record_id": self.file(log, name), "rank": rank, **c}
        )

    def ff(self, log, name, **c):
        row = {
            "log_id": log,
            "record_id": self.file(log, name),
            "file_name": f"/{log}/{name}",
            "tier": "pfs",
            "interface": "POSIX",
            "n_ranks": 1,
            "file_per_process": True,
            "unique_dir": False,
            "collective": False,
            "file_view": False,
            "fsync": False,
            "fsync_per_write": False,
            "preallocate": False,
            "opens": 1,
            "reads": 0,
            "writes": 0,
            "io_type": "WO",
            "io_type_source": "counters",
            "random_access": False,
            "bytes_read": 0,
            "bytes_written": 0,
        }
        self.rows["ff"].append({**row, **c})

    def frames(self, spark):
        r = self.rows
        tables = bronze(
            spark,
            **{
                t: r[t] for t in ("posix", "mpiio", "stdio", "lustre", "heatmap", "io_ops", "files")
            },
        )
        return tables, frame(spark, "file_features", r["ff"]), frame(spark, "job_features", r["jf"])


def seq(n_reads=0, n_writes=0, **c):
    """POSIX counters of n sequential, aligned, 1-4 MiB requests (nothing any rule flags)."""
    return {
        "POSIX_READS": n_reads,
        "POSIX_WRITES": n_writes,
        "POSIX_SEQ_READS": n_reads,
        "POSIX_SEQ_WRITES": n_writes,
        "POSIX_SIZE_READ_1M_4M": n_reads,
        "POSIX_SIZE_WRITE_1M_4M": n_writes,
        "POSIX_FILE_NOT_ALIGNED": 0,
        "POSIX_MEM_NOT_ALIGNED": 0,
        "POSIX_BYTES_READ": n_reads * 2 * MiB,
        "POSIX_BYTES_WRITTEN": n_writes * 2 * MiB,
        "POSIX_MAX_BYTE_READ": n_reads * 2 * MiB - 1,
        "POSIX_MAX_BYTE_WRITTEN": n_writes * 2 * MiB - 1,
        **c,
    }


def build() -> Lab:
    lab = Lab()
    for log in (
        "quiet small small_few misaligned misaligned_mem random random_w shared_imb shared_bal rank_imb "
        "rank_bal rank0 rank0_single indep coll meta_rank meta_shared meta_share meta_share_short stdio "
        "stdio_low stripe1 stripe1_small osts osts_spread phases phases_few heat_phases heat_phases_few "
        "raw raw_small reread rewrite small_shared time_imb time_bal mpi_reads nb one_reader two_readers "
        "rank_mixed indep_mixed rewrite_tiny rewrite_big rewrite_share reread_small"
    ).split():
        lab.job(log)
    lab.job("straggler", rank_time_ratio=5.0, io_time_s=20.0)
    lab.job("straggler_short", rank_time_ratio=5.0, io_time_s=0.5)
    lab.add("posix", "quiet", "data", rank=-1, **seq(10, 10))
    lab.ff("quiet", "data", io_type="WAR", bytes_read=20 * MiB, bytes_written=20 * MiB)

    # small requests: 1500 of 2050 reads < 1 MiB (file c's 50 are too few to name); writes 1500 of 20000
    lab.add(
        "posix",
        "small",
        "a",
        **seq(
            1500,
            20000,
            POSIX_SIZE_READ_1M_4M=0,
            POSIX_SIZE_READ_100K_1M=1500,
            POSIX_SIZE_WRITE_0_100=1500,
            POSIX_SIZE_WRITE_1M_4M=18500,
        ),
    )
    lab.add("posix", "small", "b", **seq(500))
    lab.add("posix", "small", "c", **seq(50, POSIX_SIZE_READ_1M_4M=0, POSIX_SIZE_READ_1K_10K=50))
    lab.add(
        "posix",
        "small_few",
        "a",
        **seq(
            900,
            1200,
            POSIX_SIZE_READ_1M_4M=0,
            POSIX_SIZE_READ_0_100=900,
            POSIX_SIZE_WRITE_1M_4M=0,
            POSIX_SIZE_WRITE_10K_100K=1200,
        ),
    )
    # misaligned: 160 of 300 file offsets; memory 5 of 300; and the other way round
    lab.add(
        "posix",
        "misaligned",
        "a",
        **seq(
            100, 100, POSIX_FILE_NOT_ALIGNED=150, POSIX_MEM_NOT_ALIGNED=5, POSIX_FILE_ALIGNMENT=4096
        ),
    )
    lab.add("posix", "misaligned", "b", **seq(0, 100, POSIX_FILE_NOT_ALIGNED=10))
    lab.add(
        "posix",
        "misaligned_mem",
        "a",
        **seq(100, 100, POSIX_FILE_NOT_ALIGNED=10, POSIX_MEM_NOT_ALIGNED=50),
    )
    # random: 4000 of 5000 reads; 500 of 5000 writes
    lab.add("posix", "random", "a", **seq(5000, 5000, POSIX_SEQ_READS=1000, POSIX_SEQ_WRITES=4500))
    lab.add("posix", "random_w", "a", **seq(3000, 3000, POSIX_SEQ_READS=2500, POSIX_SEQ_WRITES=0))
    # shared-file imbalance: slowest rank 600 MiB vs fastest 100 MiB of 1000 MiB; a balanced file beside it
    for log, slow, fast in (("shared_imb", 600, 100), ("shared_bal", 260, 240)):
        lab.add(
            "posix",
            log,
            "ckpt",
            rank=-1,
            **seq(
                0,
                500,
                POSIX_SLOWEST_RANK_BYTES=slow * MiB,
                POSIX_FASTEST_RANK_BYTES=fast * MiB,
                POSIX_BYTES_WRITTEN=1000 * MiB,
            ),
        )
    lab.add(
        "posix",
        "shared_imb",
        "even",
        rank=-1,
        **seq(
            0,
            500,
            POSIX_SLOWEST_RANK_BYTES=260 * MiB,
            POSIX_FASTEST_RANK_BYTES=240 * MiB,
            POSIX_BYTES_WRITTEN=1000 * MiB,
        ),
    )
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
    lab.add(
        "posix",
        "rank0",
        "shared",
        rank=-1,
        **seq(
            0,
            5,
            POSIX_SLOWEST_RANK=0,
            POSIX_SLOWEST_RANK_BYTES=5 * MiB,
            POSIX_FASTEST_RANK=2,
            POSIX_FASTEST_RANK_BYTES=1 * MiB,
        ),
    )
    lab.rows["jf"] = [
        dict(r, nprocs=1) if r["log_id"] == "rank0_single" else r for r in lab.rows["jf"]
    ]
    lab.add("posix", "rank0_single", "r0", rank=0, **seq(0, 40))
    # stragglers: rank 3 spends 15 s, the others 3 s
    for log in ("straggler", "straggler_short"):
        for r in range(4):
            lab.add(
                "posix",
                log,
                f"out.{r}",
                rank=r,
                **seq(0, 10, POSIX_F_WRITE_TIME=15.0 if r == 3 else 3.0),
            )
    # MPI-IO: 3000 independent writes on a shared file (5000 more on a rank's own file do not count)
    lab.add("mpiio", "indep", "shared.h5", rank=-1, MPIIO_INDEP_WRITES=3000, MPIIO_COLL_WRITES=0)
    lab.add("mpiio", "indep", "own.h5", rank=0, MPIIO_INDEP_WRITES=5000)
    lab.add("mpiio", "coll", "shared.h5", rank=-1, MPIIO_INDEP_WRITES=1500, MPIIO_COLL_WRITES=3000)
    # 3000 independent reads and 4000 collective writes on a shared file: all reads are independent
    # (reads and writes together, 3000 of 7000, would stay under the 0.5 share)
    lab.add(
        "mpiio",
        "indep_mixed",
        "shared.h5",
        rank=-1,
        MPIIO_INDEP_READS=3000,
        MPIIO_COLL_READS=0,
        MPIIO_INDEP_WRITES=0,
        MPIIO_COLL_WRITES=4000,
    )
    # metadata: rank 1 spends 40 s; 200 s over a shared file of 4 ranks (50 s each); a 80% share of 10 s
    lab.add("posix", "meta_rank", "a", rank=0, **seq(0, 10, POSIX_F_META_TIME=5.0))
    lab.add("posix", "meta_rank", "b", rank=1, **seq(0, 10, POSIX_F_META_TIME=40.0))
    lab.add("posix", "meta_shared", "a", rank=-1, **seq(0, 10, POSIX_F_META_TIME=200.0))
    lab.ff("meta_shared", "a", n_ranks=4, meta_time_s=200.0)
    for log, t in (("meta_share", 10.0), ("meta_share_short", 0.5)):
        lab.rows["jf"] = [
            dict(r, meta_time_share=0.8, io_time_s=t) if r["log_id"] == log else r
            for r in lab.rows["jf"]
        ]
        lab.add("posix", log, "a", rank=0, **seq(0, 10, POSIX_F_META_TIME=2.0))
        lab.ff(log, "a", meta_time_s=8.0)
        lab.ff(log, "b", meta_time_s=0.5)
    # STDIO: 50 MiB of 150 MiB; 5 MiB of 105 MiB
    for log, mib in (("stdio", 50), ("stdio_low", 5)):
        lab.add("posix", log, "data", **seq(0, 50))
        lab.add("stdio", log, "log.txt", STDIO_BYTES_WRITTEN=mib * MiB, STDIO_BYTES_READ=0)
    # Lustre: a 2 GiB shared file on one stripe (not: a per-process one, an 8-stripe one, a small one)
    for log, name, n_ranks, size, stripes in (
        ("stripe1", "big", 4, 2 * GiB, 1),
        ("stripe1", "fpp", 1, 2 * GiB, 1),
        ("stripe1", "wide", 4, 3 * GiB, 8),
        ("stripe1_small", "big", 4, 100 * MiB, 1),
    ):
        lab.ff(log, name, n_ranks=n_ranks, bytes_written=size)
        lab.add(
            "lustre",
            log,
            name,
            rank=-1,
            component=0,
            LUSTRE_COMP_STRIPE_COUNT=stripes,
            LUSTRE_OST_IDS=list(range(stripes)),
        )
    # OSTs: 8 one-stripe files on OSTs 3 (x6) and 40 (x2) vs 4 files on 4 OSTs
    for k, ost in enumerate((3, 3, 3, 40, 3, 3, 40, 3)):
        lab.add(
            "lustre",
            "osts",
            f"f{k}",
            rank=-1,
            component=0,
            LUSTRE_COMP_STRIPE_COUNT=1,
            LUSTRE_OST_IDS=[ost],
        )
    for k in range(4):
        lab.add(
            "lustre",
            "osts_spread",
            f"f{k}",
            rank=k,
            component=0,
            LUSTRE_COMP_STRIPE_COUNT=1,
            LUSTRE_OST_IDS=[k],
        )
    # DXT: 12 bursts 2 s apart (the 6th is the largest) vs 12 ops 0.5 s apart
    for log, step in (("phases", 2.0), ("phases_few", 0.5)):
        for k in range(12):
            lab.add(
                "io_ops",
                log,
                "trace",
                source="DXT_POSIX",
                seq=k,
                op="write",
                offset=k * MiB,
                length=(8 if k == 5 else 1) * MiB,
                start_s=k * step,
                end_s=k * step + 0.1,
            )
    # no DXT, HEATMAP only (1 s bins, 2 ranks): 12 bursts 3 s apart vs 12 bursts 2 s apart (1 s idle,
    # not over io_phase_gap_s); an MPI-IO heatmap with other bins (its bytes reach POSIX) is not counted
    for log, step in (("heat_phases", 3), ("heat_phases_few", 2)):
        bins = [MiB if k % step == 0 and k // step < 12 else 0 for k in range(40)]
        for rank in (0, 1):
            lab.rows["heatmap"].append(
                {
                    "log_id": log,
                    "record_id": 99,
                    "module": "POSIX",
                    "rank": rank,
                    "bin_width_s": 1.0,
                    "nbins": 40,
                    "read_bytes": [0] * 40,
                    "write_bytes": bins,
                }
            )
        lab.rows["heatmap"].append(
            {
                "log_id": log,
                "record_id": 98,
                "module": "MPIIO",
                "rank": 0,
                "bin_width_s": 1.0,
                "nbins": 40,
                "read_bytes": [MiB if k % 2 else 0 for k in range(40)],
                "write_bytes": [0] * 40,
            }
        )
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
    lab.add(
        "posix",
        "rewrite_tiny",
        "index",
        rank=-1,
        **seq(0, 1, POSIX_BYTES_WRITTEN=770, POSIX_MAX_BYTE_WRITTEN=768),
    )
    lab.add(
        "posix",
        "rewrite_tiny",
        "data",
        rank=-1,
        **seq(0, 20, POSIX_BYTES_WRITTEN=39_000_000, POSIX_MAX_BYTE_WRITTEN=38_999_999),
    )
    # the same job size with a 4 MiB checkpoint written 4 times (12 MiB again, of 16 + 23 = 39 MiB)
    lab.add(
        "posix", "rewrite_big", "ckpt", rank=-1, **seq(0, 8, POSIX_MAX_BYTE_WRITTEN=4 * MiB - 1)
    )
    lab.add(
        "posix",
        "rewrite_big",
        "data",
        rank=-1,
        **seq(0, 8, POSIX_BYTES_WRITTEN=23 * MiB, POSIX_MAX_BYTE_WRITTEN=23 * MiB - 1),
    )
    # 32 MiB written again (64 MiB to a 32 MiB extent) beside 4 GiB of data, 32 / 4160 = 0.77%: over
    # redundant_min_bytes, not over the share
    lab.add(
        "posix", "rewrite_share", "ckpt", rank=-1, **seq(0, 32, POSIX_MAX_BYTE_WRITTEN=32 * MiB - 1)
    )
    lab.add("posix", "rewrite_share", "data", rank=-1, **seq(0, 2048))
    # a 2 MiB input read 4 times, the job's only I/O: 6 MiB again, all of the share, not the bytes
    lab.add("posix", "reread_small", "input", rank=-1, **seq(4, POSIX_MAX_BYTE_READ=2 * MiB - 1))
    # small requests on a shared file: 1200 of 1600 reads and 1500 of 2000 writes; the job's 20000 large
    # writes to a rank's own file keep small_writes quiet (1500 of 22000 = 6.8%)
    lab.add(
        "posix",
        "small_shared",
        "ckpt",
        rank=-1,
        **seq(
            1600,
            2000,
            POSIX_SIZE_READ_1M_4M=400,
            POSIX_SIZE_READ_0_100=1200,
            POSIX_SIZE_WRITE_1M_4M=500,
            POSIX_SIZE_WRITE_10K_100K=1500,
        ),
    )
    lab.add("posix", "small_shared", "own", rank=0, **seq(0, 20000))
    # time imbalance on a shared file: 12 s of I/O over ranks, slowest 5 s vs fastest 1 s; 3.2 vs 2.0 s
    for log, slow, fast in (("time_imb", 5.0, 1.0), ("time_bal", 3.2, 2.0)):
        lab.add(
            "posix",
            log,
            "ckpt",
            rank=-1,
            **seq(
                0,
                10,
                POSIX_F_WRITE_TIME=10.0,
                POSIX_F_META_TIME=2.0,
                POSIX_F_SLOWEST_RANK_TIME=slow,
                POSIX_F_FASTEST_RANK_TIME=fast,
            ),
        )
    # MPI-IO: 64 blocking collective reads; blocking ops beside a non-blocking (split-collective) one
    lab.add("mpiio", "mpi_reads", "in.h5", rank=-1, MPIIO_COLL_READS=64, MPIIO_INDEP_READS=0)
    lab.add(
        "mpiio",
        "nb",
        "out.h5",
        rank=-1,
        MPIIO_INDEP_WRITES=100,
        MPIIO_NB_WRITES=1,
        MPIIO_COLL_READS=10,
        MPIIO_SPLIT_READS=2,
    )
    # all 4 ranks open a 16 MiB input, one reads it (neither slowest nor fastest: only the variance of the
    # ranks' bytes tells, at its maximum B^2 (n - 1) / n^2 = (16 MiB)^2 * 3 / 16); two ranks reading 8 MiB each
    lab.add(
        "posix",
        "one_reader",
        "input.nml",
        rank=-1,
        **seq(
            8,
            POSIX_SLOWEST_RANK_BYTES=0,
            POSIX_FASTEST_RANK_BYTES=0,
            POSIX_F_VARIANCE_RANK_BYTES=5.2776558133248e13,
        ),
    )
    lab.add(
        "posix",
        "two_readers",
        "input.nml",
        rank=-1,
        **seq(
            8,
            POSIX_SLOWEST_RANK_BYTES=8 * MiB,
            POSIX_FASTEST_RANK_BYTES=0,
            POSIX_F_VARIANCE_RANK_BYTES=1.7592186044416e13,
        ),
    )
    # all-zero records (seen in real logs: opened, never read or written) must not divide by zero
    lab.job("zeros", io_time_s=0.0)
    lab.add(
        "posix",
        "zeros",
        "opened",
        rank=-1,
        **{
            c: 0
            for c in (
                "POSIX_OPENS",
                "POSIX_READS",
                "POSIX_WRITES",
                "POSIX_BYTES_READ",
                "POSIX_BYTES_WRITTEN",
                "POSIX_SLOWEST_RANK_BYTES",
                "POSIX_FASTEST_RANK_BYTES",
                "POSIX_SEQ_READS",
                "POSIX_SEQ_WRITES",
            )
        },
        POSIX_MAX_BYTE_READ=-1,
        POSIX_MAX_BYTE_WRITTEN=-1,
    )
    lab.add("mpiio", "zeros", "opened", rank=-1, MPIIO_INDEP_READS=0, MPIIO_COLL_READS=0)
    return lab
