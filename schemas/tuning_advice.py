"""gold/tuning_advice — one row per piece of advice: what to change in a job, by how much it should
help, and the evidence.

Written by `jobs/advise.py` (stage `advise`), once per job per bandwidth-model version
(`advised_with`: the version of `models:/iolake-bandwidth@ALIAS` the pass used, `none` without
one): a re-run adds nothing, a newly promoted version advises every job again.

`kind`:
- `what_if`  a file (`record_id`, `file_name`): the setting the models predict fastest among the
  ones a user can change (tier, transfer size, API, file layout; `features/what_if.py`), when its
  predicted speed-up reaches `advise.min_speedup` or the placement model moves the file;
- `stripe`   the job: DCA-IO's Lustre stripe setting for this execution (`features/stripe_advice.py`:
  Procedure 1 for an application's first run, the rule and heuristic phases after);
- `tag`      a bottleneck tag of silver/bottleneck_tags (`item` = the tag) with its recommendation,
  and the predicted gain of the what-if that addresses it where one does;
- `none`     nothing to advise (so every advised job has a row).
`item` names what the row is about: the file's record id, the tag, or `job`.
`measured_speedup`: for a what-if that moves a file to another tier and nothing else, the ratio of
the lake's own mean file bandwidths of files with the same features on the two tiers, when the
lake traced both (null otherwise). The precedent columns (`features/precedents.py`; null when
the lake holds no precedent, and in rows advised before they existed): for a what-if, stripe or
tag row, the runs of the same application (the watch's key, gold/app_runs, without the parts the
advised move changes) that differ from this job in the advised dimension(s) and equal it in the
others — `precedent_speedup` the median of their throughputs over the median throughput of this
job's comparable runs (same application, same setting), `precedent_runs` how many runs,
`precedent_low` / `precedent_high` the smallest and largest of those per-run ratios (min–max),
`precedent_setting` the setting they used in words (e.g. `4 MiB transfers`). A measurement of
other runs, not a controlled experiment: the message gives it beside the prediction.
`current` / `advised` are readable settings; `model_name` /
`model_version` are set on rows a model computed (null for DCA-IO's rules and tag texts), with
the model's provenance (`models/provenance.py`): `model_alias` (the alias it was loaded by),
`trained_on` (its training run's `iolake.training_source`) and `training_origin` (`lake`: this
lake's own jobs; `benchmark`: a benchmark table given in conf; `shipped_benchmark`: a table
shipped with iolake, another machine's; `unknown`). The commands in `message` (staging a file
on a tier, setting stripes) come from the site profile, conf `site:` (`features/site.py`).
"""

from pyspark.sql import types as T

from schemas._spec import JOB_MONTH, LOG_ID, PROVENANCE, TRAINING_ORIGINS, Expectation, TableSpec

KINDS = ("what_if", "stripe", "tag", "none")

F = T.StructField
SPEC = TableSpec(
    name="tuning_advice",
    layer="gold",
    struct=T.StructType(
        [
            LOG_ID,
            JOB_MONTH,
            F("kind", T.StringType(), False),
            F("item", T.StringType(), False),
            F("record_id", T.LongType(), True),
            F("file_name", T.StringType(), True),
            F("current", T.StringType(), True),
            F("advised", T.StringType(), True),
            F("predicted_bandwidth_now_mib_s", T.DoubleType(), True),
            F("predicted_bandwidth_advised_mib_s", T.DoubleType(), True),
            F("predicted_speedup", T.DoubleType(), True),
            F(
                "measured_speedup", T.DoubleType(), True
            ),  # where the lake measured both settings (tier moves)
            F("model_name", T.StringType(), True),
            F("model_version", T.StringType(), True),
            *PROVENANCE,
            F("evidence", T.ArrayType(T.StringType()), False),
            F("message", T.StringType(), False),
            F("advised_with", T.StringType(), False),
            F("advised_at", T.TimestampType(), False),
            # precedents (features/precedents.py): appended last, so an existing table evolves
            F("precedent_speedup", T.DoubleType(), True),
            F("precedent_runs", T.LongType(), True),
            F("precedent_low", T.DoubleType(), True),
            F("precedent_high", T.DoubleType(), True),
            F("precedent_setting", T.StringType(), True),
        ]
    ),
    keys=("log_id", "kind", "item", "advised_with"),
    merge_on=("job_month", "log_id", "kind", "item", "advised_with"),
    expectations=(
        Expectation("not_null", "log_id"),
        Expectation("not_null", "message"),
        Expectation("compound_unique", ("log_id", "kind", "item", "advised_with")),
        Expectation("in_set", "kind", {"values": list(KINDS)}),
        Expectation("between", "predicted_speedup", {"min": 0}),
        Expectation("between", "precedent_speedup", {"min": 0}),
        Expectation("between", "precedent_runs", {"min": 1}),
        Expectation("in_set", "training_origin", {"values": list(TRAINING_ORIGINS)}),
    ),
    doc=__doc__,
)
