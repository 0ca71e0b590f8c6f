"""bronze/apmpi and bronze/apxc — AutoPerf's modules (argonne-lcf/autoperf, in Darshan builds at
ALCF, and the Darshan test logs of 3.3 - 3.4.7), module format version 1.

**bronze/apmpi**: per rank, every MPI operation AutoPerf counts. One row per (log, rank, MPI
operation); `op` is the MPI function (`MPI_SEND`, `MPI_ALLREDUCE`, …, 74 of them). Counters are
AutoPerf's, renamed to columns: `call_count` (`MPI_<OP>_CALL_COUNT`), `total_bytes`
(`MPI_<OP>_TOTAL_BYTES`) and the message-size histogram `msg_size_0_256` … `msg_size_1m_plus`
(`MPI_<OP>_MSG_SIZE_AGG_0_256` … `_1M_PLUS`; bins [0, 256), [256, 1K), [1K, 8K), [8K, 256K),
[256K, 1M), [1M, ∞) bytes) — null for the 28 operations that move no counted bytes (waits, tests,
probes, barriers, window synchronisation); `total_time_s`, `min_time_s`, `max_time_s`
(`MPI_<OP>_TOTAL_TIME` / `_MIN_TIME` / `_MAX_TIME`); `total_sync_time_s` (`MPI_<OP>_TOTAL_SYNC_TIME`,
the time in the barrier AutoPerf inserts before a collective when `sync_flag` is set; null for the
58 operations without it). Per rank, repeated on its rows: `node_name`, `rank_comm_time_s`
(`MPI_TOTAL_COMM_TIME`), `rank_comm_sync_time_s` (`MPI_TOTAL_COMM_SYNC_TIME`). Per log, from the
region's header record, repeated on every row: `sync_flag`, `variance_total_mpitime`,
`variance_total_mpisynctime` (variance of the ranks' MPI time, as AutoPerf's reduction computes it).
The values equal pydarshan's `report.records["APMPI"]` (`mod_read_all_apmpi_records`).

**bronze/apxc**: Cray XC Aries router counters of the routers the job's nodes sit on. One row per
(log, router record, tile); a router has 48 tiles: 40 network tiles (`tile = 'RTR'`, rows 0-4,
columns 0-7) with `flit_vc0` … `flit_vc7` (`APXC_AR_RTR_<r>_<c>_INQ_PRF_INCOMING_FLIT_VC<k>`, flits
in on each virtual channel) and `rowbus_stall` (`…_ROWBUS_STALL_CNT`), and 8 processor tiles
(`tile = 'PT'`, row 5) with `flit_vc0`, `flit_vc4`, `req_rowbus_stall`, `rsp_rowbus_stall`
(`APXC_AR_RTR_PT_5_<c>_INQ_PRF_…`); a counter a tile lacks is null. `group`, `chassis`, `blade`,
`node` place the router. Per log, from the header record: `ngroups`, `nchassis`, `nblades`,
`memory_mode` and `cluster_mode` (Intel Xeon Phi modes as pydarshan names them, bit 31 masked)
with `memory_mode_consistent` / `cluster_mode_consistent` (bit 31 clear: the same on every node),
`appid`. The values equal pydarshan's `report.records["APXC"]`.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec, key_statistics

# AutoPerf's MPI operations in the order of `APMPI_MPIOP_COUNTERS` (darshan-apmpi-log-format.h)
APMPI_OPS: tuple[str, ...] = tuple(
    "MPI_" + op
    for op in (
        "SEND SSEND RSEND BSEND RECV SENDRECV SENDRECV_REPLACE ISEND ISSEND IRSEND IBSEND IRECV "
        "PROBE IPROBE TEST TESTANY TESTALL TESTSOME WAIT WAITANY WAITALL WAITSOME BARRIER IBARRIER "
        "BCAST GATHER GATHERV SCATTER SCATTERV SCAN EXSCAN ALLGATHER ALLGATHERV REDUCE ALLREDUCE "
        "REDUCE_SCATTER ALLTOALL ALLTOALLV ALLTOALLW IBCAST IGATHER IGATHERV ISCATTER ISCATTERV "
        "ISCAN IEXSCAN IALLGATHER IALLGATHERV IREDUCE IALLREDUCE IREDUCE_SCATTER IALLTOALL "
        "IALLTOALLV IALLTOALLW PUT GET ACCUMULATE GET_ACCUMULATE FETCH_AND_OP COMPARE_AND_SWAP "
        "WIN_FENCE WIN_START WIN_COMPLETE WIN_POST WIN_WAIT WIN_TEST WIN_LOCK WIN_UNLOCK "
        "WIN_UNLOCK_ALL WIN_FLUSH WIN_FLUSH_ALL WIN_FLUSH_LOCAL WIN_FLUSH_LOCAL_ALL WIN_SYNC"
    ).split()
)
# the operations with only a call count among their integer counters (no bytes, no histogram)
APMPI_COUNT_ONLY: frozenset[str] = frozenset(
    "MPI_" + op
    for op in (
        "PROBE IPROBE TEST TESTANY TESTALL TESTSOME WAIT WAITANY WAITALL WAITSOME BARRIER IBARRIER "
        "FETCH_AND_OP COMPARE_AND_SWAP WIN_FENCE WIN_START WIN_COMPLETE WIN_POST WIN_WAIT WIN_TEST "
        "WIN_LOCK WIN_UNLOCK WIN_UNLOCK_ALL WIN_FLUSH WIN_FLUSH_ALL WIN_FLUSH_LOCAL "
        "WIN_FLUSH_LOCAL_ALL WIN_SYNC"
    ).split()
)
# the operations with a sync time, in the order of `APMPI_F_MPIOP_SYNCTIME_COUNTERS`
APMPI_SYNC_OPS: tuple[str, ...] = tuple(
    "MPI_" + op
    for op in (
        "BARRIER BCAST GATHER GATHERV SCATTER SCATTERV SCAN EXSCAN ALLGATHER ALLGATHERV REDUCE "
        "ALLREDUCE REDUCE_SCATTER ALLTOALL ALLTOALLV ALLTOALLW"
    ).split()
)
MSG_SIZE_BINS: tuple[str, ...] = ("0_256", "256_1K", "1K_8K", "8K_256K", "256K_1M", "1M_PLUS")
MSG_SIZE_COLUMNS: tuple[str, ...] = tuple("msg_size_" + b.lower() for b in MSG_SIZE_BINS)


def apmpi_counter_names() -> list[str]:
    """AutoPerf's 396 integer counter names, in record order."""
    names = []
    for op in APMPI_OPS:
        names.append(f"{op}_CALL_COUNT")
        if op not in APMPI_COUNT_ONLY:
            names.append(f"{op}_TOTAL_BYTES")
            names += [f"{op}_MSG_SIZE_AGG_{b}" for b in MSG_SIZE_BINS]
    return names


def apmpi_fcounter_names() -> list[str]:
    """AutoPerf's 240 double counter names, in record order: times per op, sync times, totals."""
    names = [f"{op}_{k}_TIME" for op in APMPI_OPS for k in ("TOTAL", "MIN", "MAX")]
    names += [f"{op}_TOTAL_SYNC_TIME" for op in APMPI_SYNC_OPS]
    return names + ["MPI_TOTAL_COMM_TIME", "MPI_TOTAL_COMM_SYNC_TIME"]


# Aries router tiles in record order: (kind, row, column, counters of the tile)
RTR_COUNTERS: tuple[str, ...] = tuple(f"INCOMING_FLIT_VC{k}" for k in range(8)) + (
    "ROWBUS_STALL_CNT",
)
PT_COUNTERS: tuple[str, ...] = (
    "INCOMING_FLIT_VC0",
    "INCOMING_FLIT_VC4",
    "REQ_ROWBUS_STALL_CNT",
    "RSP_ROWBUS_STALL_CNT",
)
APXC_TILES: tuple[tuple[str, int, int, tuple[str, ...]], ...] = tuple(
    ("RTR", r, c, RTR_COUNTERS) for r in range(5) for c in range(8)
) + tuple(("PT", 5, c, PT_COUNTERS) for c in range(8))
# tile counter -> bronze/apxc column
APXC_COLUMN: dict[str, str] = {
    **{f"INCOMING_FLIT_VC{k}": f"flit_vc{k}" for k in range(8)},
    "ROWBUS_STALL_CNT": "rowbus_stall",
    "REQ_ROWBUS_STALL_CNT": "req_rowbus_stall",
    "RSP_ROWBUS_STALL_CNT": "rsp_rowbus_stall",
}
# pydarshan's names of the header's modes (darshan/backend/apxc.py)
MEMORY_MODES: tuple[str, ...] = ("unknown", "flat", "equal", "split", "cache")
CLUSTER_MODES: tuple[str, ...] = ("unknown", "all2all", "quad", "hemi", "snc4", "snc2")


def apxc_counter_names() -> list[str]:
    """APXC's 392 counter names, in record order."""
    out = []
    for kind, r, c, counters in APXC_TILES:
        pre = "APXC_AR_RTR_" + ("PT_" if kind == "PT" else "")
        out += [f"{pre}{r}_{c}_INQ_PRF_{k}" for k in counters]
    return out


def _long(name: str, nullable: bool = True) -> T.StructField:
    return T.StructField(name, T.LongType(), nullable)


def _double(name: str, nullable: bool = True) -> T.StructField:
    return T.StructField(name, T.DoubleType(), nullable)


APMPI_SPEC = TableSpec(
    name="apmpi",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            _long("record_id", False),
            _long("rank", False),
            T.StructField("node_name", T.StringType(), True),
            T.StructField("op", T.StringType(), False),
            _long("call_count", False),
            _long("total_bytes"),
            *[_long(c) for c in MSG_SIZE_COLUMNS],
            _double("total_time_s", False),
            _double("min_time_s", False),
            _double("max_time_s", False),
            _double("total_sync_time_s"),
            _double("rank_comm_time_s", False),
            _double("rank_comm_sync_time_s", False),
            T.StructField("sync_flag", T.IntegerType(), True),
            _double("variance_total_mpitime"),
            _double("variance_total_mpisynctime"),
        ]
    ),
    keys=("log_id", "record_id", "rank", "op"),
    properties=key_statistics("log_id", "record_id", "rank", "op"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("compound_unique", ("log_id", "record_id", "rank", "op")),
        Expectation("in_set", "op", {"values": list(APMPI_OPS)}),
    ),
    doc=__doc__,
)

APXC_SPEC = TableSpec(
    name="apxc",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            _long("record_id", False),
            _long("rank", False),
            _long("group", False),
            _long("chassis", False),
            _long("blade", False),
            _long("node", False),
            T.StructField("tile", T.StringType(), False),
            T.StructField("tile_row", T.IntegerType(), False),
            T.StructField("tile_col", T.IntegerType(), False),
            *[_long(f"flit_vc{k}") for k in range(8)],
            _long("rowbus_stall"),
            _long("req_rowbus_stall"),
            _long("rsp_rowbus_stall"),
            _long("ngroups"),
            _long("nchassis"),
            _long("nblades"),
            T.StructField("memory_mode", T.StringType(), True),
            T.StructField("memory_mode_consistent", T.BooleanType(), True),
            T.StructField("cluster_mode", T.StringType(), True),
            T.StructField("cluster_mode_consistent", T.BooleanType(), True),
            _long("appid"),
        ]
    ),
    keys=("log_id", "record_id", "rank", "tile_row", "tile_col"),
    properties=key_statistics("log_id", "record_id", "rank", "tile_row", "tile_col"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("compound_unique", ("log_id", "record_id", "rank", "tile_row", "tile_col")),
        Expectation("in_set", "tile", {"values": ["RTR", "PT"]}),
    ),
    doc=__doc__,
)
