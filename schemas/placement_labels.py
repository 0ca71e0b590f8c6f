"""gold/placement_labels — one row per group of data files with identical I/O features seen on both tiers.

The label is the tier with the better mean file bandwidth (PrismIO §V); `margin` is
(best - other) / other. Groups whose margin is at most `models.label_min_margin` are dropped.
`label_source` is `lake` (silver/file_features) or `benchmark` (a table given in conf).
The whole table is rewritten when its input changes: labels are aggregates over every log.
"""

from pyspark.sql import types as T

from schemas._spec import Expectation, TableSpec

F = T.StructField
# The placement model's inputs: I/O characteristics only, never tier, paths, mounts, times or bandwidths.
FEATURE_FIELDS = [
    F("interface", T.StringType(), False),
    F("collective", T.BooleanType(), False),
    F("fsync", T.BooleanType(), False),
    F("fsync_per_write", T.BooleanType(), False),
    F("preallocate", T.BooleanType(), False),
    F("file_view", T.BooleanType(), False),
    F("transfer_size", T.LongType(), True),
    F("rw_per_open", T.DoubleType(), True),
    F("io_type", T.StringType(), False),
    F("random_access", T.BooleanType(), False),
    F("file_per_process", T.BooleanType(), False),
    F("unique_dir", T.BooleanType(), False),
    F("n_ranks", T.LongType(), False),
    F("nprocs", T.LongType(), True),
]
FEATURES = tuple(f.name for f in FEATURE_FIELDS)

SPEC = TableSpec(
    name="placement_labels",
    layer="gold",
    struct=T.StructType(
        [
            F("group_id", T.StringType(), False),  # sha1 of the feature values
            *FEATURE_FIELDS,
            F("best_tier", T.StringType(), False),
            F("files_bb", T.LongType(), False),
            F("files_pfs", T.LongType(), False),
            F(
                "bandwidth_mib_s_bb", T.DoubleType(), False
            ),  # mean over the group's files on the tier
            F("bandwidth_mib_s_pfs", T.DoubleType(), False),
            F("bandwidth_std_bb", T.DoubleType(), True),
            F("bandwidth_std_pfs", T.DoubleType(), True),
            F("margin", T.DoubleType(), False),
            F("label_margin_gt_std", T.BooleanType(), True),  # |bb - pfs| > max(std_bb, std_pfs)
            F("label_source", T.StringType(), False),
            F("source_version", T.LongType(), True),  # Delta version of silver/file_features read
        ]
    ),
    keys=("label_source", "group_id"),
    partition_by=(),
    expectations=(
        Expectation("compound_unique", ("label_source", "group_id")),
        Expectation("in_set", "best_tier", {"values": ["bb", "pfs"]}),
        Expectation("between", "margin", {"min": 0}),
    ),
    doc=__doc__,
)
