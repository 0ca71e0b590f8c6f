"""silver/bottleneck_tags — one row per (log, tag): an I/O bottleneck a job shows, with its evidence.

Each row says which rule fired: `metric` (what was measured) and its `value`, the named
setting it crossed (`threshold_name`, a key of conf's `tags:` section, and its `threshold`),
`evidence` (the files and/or ranks that caused it, most significant first, at most
`tags.evidence_max`; a file is its path, a rank reads `rank <n>`) and a readable `message`.
`features/bottleneck_tags.py` documents each tag's rule and where it comes from (Drishti's
triggers, the keynote's common causes of poor I/O performance).

A job no rule fires on gets one `no_issue` row (severity `info`, metric `tags_fired` = 0,
no threshold): every tagged log has at least one row, so the stage's incremental check is a
plain "log_id not in bottleneck_tags yet".

`CATALOG` gives every tag a stable code (`IO01`...; `no_issue` is `IO00`), the Drishti 0.8
insight codes it stands for and its recommendation; `LEFT_OUT` names the Drishti codes with no
tag and why. The table keeps the tag name only: the code and the text are a function of it, so
rewording a recommendation rewrites no table (gold/tuning_advice and reports look them up here).
"""

from typing import NamedTuple

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec


class Tag(NamedTuple):
    """A tag's stable code (never reused or renumbered), the Drishti 0.8 insight codes it stands for
    (empty: the keynote's or iolake's own), and its recommendation (gold/tuning_advice, reports):
    `recommendation` holds for any file system; `lustre` is the clause added only when the job's
    files are on Lustre (its `lfs` commands), `gpfs` the one added when they are on GPFS (no
    per-file striping there). `recommendation(tag, fs_types)` joins them."""

    code: str
    drishti: tuple[str, ...]
    recommendation: str
    lustre: str = ""
    gpfs: str = ""


NO_ISSUE = "no_issue"  # the one row of a job no rule fires on

# Every tag, once: codes, Drishti's equivalents and recommendations (Drishti's `recommendation`
# texts per trigger, the keynote's common fixes; every text names what to set).
CATALOG = {
    "small_reads": Tag(
        "IO01",
        ("P05",),
        "aggregate small reads into larger requests (read whole blocks and slice "
        "in memory; MPI-IO collective reads, romio_cb_read=enable; HDF5 chunk cache)",
    ),
    "small_writes": Tag(
        "IO02",
        ("P06",),
        "buffer small writes into larger requests (MPI-IO collective writes, "
        "romio_cb_write=enable; HDF5 chunking or H5Pset_alignment; a write-behind buffer)",
    ),
    "misaligned_file": Tag(
        "IO03",
        ("P08",),
        "align requests to the file system's stripe / block boundary (HDF5 H5Pset_alignment)",
        lustre="set the stripe size to a multiple of the request size (lfs setstripe -S)",
        gpfs="the block size is the file system's, not the file's (mmlsattr -L <file> shows it): "
        "align requests to it",
    ),
    "misaligned_memory": Tag(
        "IO04", ("P07",), "allocate I/O buffers aligned to the page size (posix_memalign)"
    ),
    "random_reads": Tag(
        "IO05",
        ("P11",),
        "read in offset order or collect the accesses into fewer, larger ones "
        "(MPI-IO collective reads with a file view; data sieving, romio_ds_read=enable)",
    ),
    "random_writes": Tag(
        "IO06",
        ("P13",),
        "write in offset order or through collective MPI-IO with a file view "
        "(romio_ds_write=enable)",
    ),
    "shared_file_imbalance": Tag(
        "IO07",
        ("P18",),
        "balance the bytes each rank writes to the shared file "
        "(collective buffering lets aggregators even it out: romio_cb_write=enable)",
    ),
    "stragglers": Tag(
        "IO09",
        (),
        "find the slow ranks' files (the evidence lists them) and balance the work",
        lustre="check the slow ranks' OSTs and spread the files over more OSTs (lfs setstripe -c)",
        gpfs="a file is striped over all the file system's disks (no per-file striping): look at "
        "the slow ranks' nodes and their share of the work",
    ),
    "rank0_heavy": Tag(
        "IO10",
        (),
        "do not funnel I/O through rank 0: every rank writes its part (MPI_File_write_at_all)",
    ),
    "metadata_heavy": Tag(
        "IO12",
        ("P17",),
        "cut metadata calls: open files once, avoid stat/seek storms, fewer "
        "files per directory (file per process -> a shared file or subdirectories); HDF5: "
        "collective metadata (H5Pset_coll_metadata_write, H5Pset_all_coll_metadata_ops)",
    ),
    "stdio_heavy": Tag(
        "IO13",
        ("S01",),
        "move bulk data from STDIO (fprintf/fwrite) to POSIX, MPI-IO or a parallel I/O library",
    ),
    "single_stripe_shared": Tag(
        "IO14",
        (),
        "stripe the large shared file over more OSTs (see the stripe advice for a count)",
        lustre="lfs setstripe -c <count> on the file's directory before it is created",
    ),
    "few_osts": Tag(
        "IO15",
        (),
        "spread the job's files over more OSTs (see the stripe advice for a count)",
        lustre="lfs setstripe -c <count> on the output directory",
    ),
    "many_io_phases": Tag(
        "IO16",
        (),
        "gather I/O into fewer, larger phases (buffer and write less often; asynchronous I/O)",
    ),
    "read_after_write": Tag(
        "IO17", (), "keep data you have just written in memory instead of reading it back"
    ),
    "redundant_reads": Tag(
        "IO18",
        ("P09",),
        "read each byte once: cache what is re-read (HDF5 chunk cache, an application buffer)",
    ),
    "redundant_writes": Tag(
        "IO19",
        ("P10",),
        "write each byte once: keep the data in memory until it is final "
        "(an application buffer; HDF5: write a dataset once, not per step)",
    ),
    "small_shared_reads": Tag(
        "IO20",
        ("P15",),
        "aggregate the small reads of the shared file: MPI-IO collective "
        "reads (MPI_File_read_all, romio_cb_read=enable) or a read by a few ranks and a "
        "broadcast",
    ),
    "small_shared_writes": Tag(
        "IO21",
        ("P16",),
        "aggregate the small writes to the shared file: MPI-IO collective "
        "writes (MPI_File_write_all, romio_cb_write=enable)",
    ),
    "shared_file_time_imbalance": Tag(
        "IO22",
        ("P19",),
        "even out the ranks' time on the shared file: let collective buffering spread the "
        "work (romio_cb_write=enable)",
        lustre="tune the file's striping (lfs setstripe -c / -S)",
        gpfs="no per-file striping to tune: the block size is the file system's (mmlsattr -L "
        "<file>)",
    ),
    "blocking_mpiio_reads": Tag(
        "IO23",
        ("M06",),
        "overlap reads with computation: non-blocking MPI-IO "
        "(MPI_File_iread, MPI_File_iread_at_all) or HDF5's asynchronous VOL connector",
    ),
    "blocking_mpiio_writes": Tag(
        "IO24",
        ("M07",),
        "overlap writes with computation: non-blocking MPI-IO "
        "(MPI_File_iwrite, MPI_File_iwrite_at_all) or HDF5's asynchronous VOL connector",
    ),
    "single_reader_shared": Tag(
        "IO25",
        (),
        "open the file on the rank that reads it and broadcast the data "
        "(MPI_Bcast), or let every rank read its part collectively (MPI_File_read_all)",
    ),
    "rank_read_imbalance": Tag(
        "IO26",
        ("P22",),
        "spread the bytes read evenly over ranks, or let collective MPI-IO aggregators do it "
        "(MPI_File_read_all, romio_cb_read=enable)",
    ),
    "rank_write_imbalance": Tag(
        "IO27",
        ("P21",),
        "spread the bytes written evenly over ranks, or let collective MPI-IO aggregators do it "
        "(MPI_File_write_all, romio_cb_write=enable)",
    ),
    "no_collective_shared_reads": Tag(
        "IO28",
        ("M02",),
        "read shared files with collective MPI-IO (MPI_File_read_all, MPI_File_read_at_all; "
        "romio_cb_read=enable)",
    ),
    "no_collective_shared_writes": Tag(
        "IO29",
        ("M03",),
        "write shared files with collective MPI-IO (MPI_File_write_all, MPI_File_write_at_all; "
        "romio_cb_write=enable)",
    ),
    NO_ISSUE: Tag("IO00", (), ""),
}
TAGS = tuple(CATALOG)

LUSTRE, GPFS = (
    "lustre",
    "gpfs",
)  # bronze/files `fs_type` (the log's mount table) of those file systems


def recommendation(tag: str, fs_types=None) -> str:
    """Tag `tag`'s recommendation for a job whose files are on `fs_types` (bronze/files `fs_type`
    values, any case; None or empty: unknown): the catalogue's text, plus its Lustre clause only when
    one of them is Lustre and its GPFS clause when one is GPFS, each named ("...; Lustre: lfs ...").
    '' for a tag the catalogue does not know."""
    t = CATALOG.get(tag)
    if t is None:
        return ""
    kinds = {str(f).lower() for f in fs_types or () if f}
    text = t.recommendation
    if t.lustre and LUSTRE in kinds:
        text += f"; Lustre: {t.lustre}"
    if t.gpfs and GPFS in kinds:
        text += f"; GPFS: {t.gpfs}"
    return text


# Codes no rule writes: never given to another tag. A lake tagged with them keeps those rows
# (reports show them without a code); the tags that replace them name one direction each.
RETIRED = {
    "IO08": "rank_size_imbalance, reads and writes together: rank_read_imbalance (IO26), "
    "rank_write_imbalance (IO27)",
    "IO11": "no_collective_shared, reads and writes together: no_collective_shared_reads "
    "(IO28), no_collective_shared_writes (IO29)",
}

# Drishti 0.8 insight codes with no tag, and why (python -m bench.drishti_agreement prints them beside
# Drishti's counts; docs/tags.md has the table)
LEFT_OUT = {
    "P01": "write-intensive by operation count (Drishti: INFO): a description, not a fault; job_features has "
    "read_requests / write_requests",
    "P02": "read-intensive by operation count (INFO): likewise",
    "P03": "write-intensive by bytes (INFO): likewise; job_features has bytes_read / bytes_written",
    "P04": "read-intensive by bytes (INFO): likewise",
    "P12": "mostly sequential reads (Drishti: OK): a good pattern, nothing to advise",
    "P14": "mostly sequential writes (OK): likewise",
    "M01": "no MPI-IO module in the log: not a fault by itself (file-per-process POSIX, a serial job); iolake "
    "tags what the interface costs (small_*, no_collective_shared_*, rank0_heavy, stdio_heavy)",
    "M04": "collective MPI-IO reads used (OK): a good pattern",
    "M05": "collective MPI-IO writes used (OK): a good pattern",
    "M08": "intra-node aggregators (OK) — and see M09",
    "M09": "inter-node aggregators: the only hints a Darshan log holds (metadata `h`) are the ones Darshan used "
    "to write its own log (DARSHAN_LOGHINTS, default romio_no_indep_rw=true;cb_nodes=4), not the "
    "application's, and the node count is not in the log (Drishti asks SLURM's sacct)",
    "M10": "one aggregator per node (OK) — and see M09",
}

SEVERITIES = ("info", "warn", "high")

F = T.StructField
SPEC = TableSpec(
    name="bottleneck_tags",
    layer="silver",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("tag", T.StringType(), False),
            F("severity", T.StringType(), False),
            F("metric", T.StringType(), False),  # e.g. small_read_share
            F("value", T.DoubleType(), True),
            F(
                "threshold_name", T.StringType(), True
            ),  # e.g. tags.small_requests; null for no_issue
            F("threshold", T.DoubleType(), True),
            F("evidence", T.ArrayType(T.StringType()), False),
            F("message", T.StringType(), False),
        ]
    ),
    keys=("log_id", "tag"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("not_null", "job_month"),
        Expectation("not_null", "tag"),
        Expectation("not_null", "metric"),
        Expectation("not_null", "message"),
        Expectation("compound_unique", ("log_id", "tag")),
        Expectation("in_set", "tag", {"values": list(TAGS)}),
        Expectation("in_set", "severity", {"values": list(SEVERITIES)}),
    ),
    doc=__doc__,
)
