"""gold/tuning_advice's tag rows (features/advice.py `tag_rows`, `fs_flags`) word each
recommendation for the job's file systems: a GPFS job gets no `lfs` command, a Lustre job gets it."""

from __future__ import annotations

from features import advice
from tests.support.frames import frame

TAG = {
    "tag": "stragglers",
    "severity": "warn",
    "metric": "slowest_rank_ratio",
    "value": 3.0,
    "threshold_name": "tags.straggler_ratio",
    "threshold": 2.0,
    "evidence": ["rank 7"],
    "message": "rank 7 is 3x the median",
}


def test_tag_advice_names_lfs_for_the_lustre_job_only(spark):
    tags = (
        frame(spark, "bottleneck_tags", [TAG], log_id="GPFS")
        .unionByName(frame(spark, "bottleneck_tags", [TAG], log_id="LUSTRE"))
        .unionByName(frame(spark, "bottleneck_tags", [TAG], log_id="STRIPED"))
    )
    # silver/file_features' two columns fs_flags reads: the GPFS job has a file on local disk too
    ff = spark.createDataFrame(
        [
            ("GPFS", "gpfs"),
            ("GPFS", "ext4"),
            ("LUSTRE", "lustre"),
            ("LUSTRE", None),
            ("STRIPED", "overlay"),  # a symlinked project directory: the mount table says `/`
        ],
        "log_id string, fs_type string",
    )
    what_ifs = spark.createDataFrame([], advice.WHAT_IF_SCHEMA)
    # silver/job_features' stripe layout (Darshan's LUSTRE module): STRIPED's file is on Lustre
    jobs = spark.createDataFrame(
        [("STRIPED", 4), ("GPFS", None)], "log_id string, stripe_count long"
    )
    flags = advice.fs_flags(ff, jobs)
    rows = {r.log_id: r.message for r in advice.tag_rows(tags, what_ifs, flags).collect()}
    assert rows["LUSTRE"] == (
        "stragglers: rank 7 is 3x the median -> find the slow ranks' files (the evidence lists "
        "them) and balance the work; Lustre: check the slow ranks' OSTs and spread the files over "
        "more OSTs (lfs setstripe -c)"
    )
    assert rows["STRIPED"] == rows["LUSTRE"]
    assert "lfs" not in rows["GPFS"] and "no per-file striping" in rows["GPFS"]
    # without the file systems (a caller that does not know them): neutral words for both
    plain = {r.log_id: r.message for r in advice.tag_rows(tags, what_ifs).collect()}
    neutral = (
        "stragglers: rank 7 is 3x the median -> find the slow ranks' files (the evidence lists "
        "them) and balance the work"
    )
    assert plain == {"GPFS": neutral, "LUSTRE": neutral, "STRIPED": neutral}
