"""bronze/heatmap — Darshan's HEATMAP module (Darshan 3.4 and later, on by default): for each
instrumented module and rank, the bytes read and written in each time bin since the job's start.

It is what production logs without DXT carry about time: pydarshan's job summary draws its
activity-over-time figures from it. One row per (log, module, rank); `module` is the module the
record is about (`POSIX`, `MPIIO`, `STDIO`, `DFS`, `DAOS`: Darshan's name record `heatmap:<MODULE>`,
else the record id as text). Bin `i` covers [i * bin_width_s, (i + 1) * bin_width_s) seconds after
the job's start; `read_bytes[i]` / `write_bytes[i]` are the bytes moved in it. Records whose bin
count is off by one from the log's first (Darshan 3.4.0 - 3.4.3) are corrected as darshan-util
corrects them, so the rows equal pydarshan's `report.heatmaps[module]`.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec

SPEC = TableSpec(
    name="heatmap",
    layer="bronze",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            T.StructField("record_id", T.LongType(), False),
            T.StructField("module", T.StringType(), False),
            T.StructField("rank", T.LongType(), False),
            T.StructField("bin_width_s", T.DoubleType(), False),
            T.StructField("nbins", T.LongType(), False),
            T.StructField("read_bytes", T.ArrayType(T.LongType()), False),
            T.StructField("write_bytes", T.ArrayType(T.LongType()), False),
        ]
    ),
    keys=("log_id", "record_id", "rank"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("compound_unique", ("log_id", "record_id", "rank")),
        Expectation("between", "nbins", {"min": 0}),
    ),
    doc=__doc__,
)
