"""bronze/<module> — one table per Darshan module that carries I/O counters.

Each row is one Darshan record: `log_id, job_month, record_id, rank` and then every counter of
the module as its own column, named exactly as Darshan names it (`POSIX_BYTES_READ`,
`POSIX_F_READ_TIME`, ...). Integer counters are int64, floating-point counters double.
`rank = -1` marks a record Darshan reduced across all ranks (a shared file).
A counter the log's module version does not carry is null, never 0.
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, Expectation, TableSpec, key_statistics
from schemas.darshan_counters import LUSTRE_COMPONENT_COUNTERS, MODULE_COUNTERS

KEY_FIELDS = [
    LOG_ID,
    JOB_MONTH,
    T.StructField("record_id", T.LongType(), False),
    T.StructField("rank", T.LongType(), False),
]

_KEY_EXPECTATIONS = (
    Expectation("not_null", "log_id"),
    Expectation("not_null", "record_id"),
    Expectation("between", "rank", {"min": -1}),
)


def _module_spec(table: str) -> TableSpec:
    module, counters, fcounters = MODULE_COUNTERS[table]
    fields = list(KEY_FIELDS)
    fields += [T.StructField(c, T.LongType(), True) for c in counters]
    fields += [T.StructField(c, T.DoubleType(), True) for c in fcounters]
    return TableSpec(
        name=table,
        layer="bronze",
        struct=T.StructType(fields),
        keys=("log_id", "record_id", "rank"),
        properties=key_statistics("log_id", "record_id", "rank"),
        expectations=_KEY_EXPECTATIONS
        + (Expectation("compound_unique", ("log_id", "record_id", "rank")),),
        doc=f"bronze/{table}: Darshan {module} records, one row per (record, rank).",
    )


MODULE_SPECS: dict[str, TableSpec] = {t: _module_spec(t) for t in MODULE_COUNTERS}

# Darshan module name (as in the log's region map) -> bronze table
DARSHAN_MODULE_TABLE = {m: t for t, (m, _, _) in MODULE_COUNTERS.items()}
DARSHAN_MODULE_TABLE["LUSTRE"] = "lustre"

LUSTRE_SPEC = TableSpec(
    name="lustre",
    layer="bronze",
    struct=T.StructType(
        KEY_FIELDS
        + [T.StructField("component", T.IntegerType(), False)]
        + [T.StructField(c, T.LongType(), True) for c in LUSTRE_COMPONENT_COUNTERS]
        + [
            T.StructField("LUSTRE_POOL_NAME", T.StringType(), True),
            T.StructField("LUSTRE_OST_IDS", T.ArrayType(T.LongType()), True),
        ]
    ),
    keys=("log_id", "record_id", "rank", "component"),
    properties=key_statistics("log_id", "record_id", "rank", "component"),
    expectations=_KEY_EXPECTATIONS
    + (Expectation("compound_unique", ("log_id", "record_id", "rank", "component")),),
    doc="bronze/lustre: Lustre layout per file, one row per (record, rank, layout component); "
    "LUSTRE_OST_IDS lists the OSTs of the component's stripes.",
)
