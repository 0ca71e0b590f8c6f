"""A tag's recommendation names the commands of the file systems the job's files are on
(schemas/bottleneck_tags.py `recommendation`): Lustre's `lfs` only for files on Lustre."""

from schemas.bottleneck_tags import CATALOG, recommendation


def test_misaligned_file_speaks_lustre_only_on_lustre_and_gpfs_on_gpfs():
    base = "align requests to the file system's stripe / block boundary (HDF5 H5Pset_alignment)"
    assert recommendation("misaligned_file", ["gpfs", "ext4"]) == (
        base + "; GPFS: the block size is the file system's, not the file's (mmlsattr -L <file> "
        "shows it): align requests to it"
    )
    assert recommendation("misaligned_file", ["lustre"]) == (
        base + "; Lustre: set the stripe size to a multiple of the request size (lfs setstripe -S)"
    )
    assert recommendation("misaligned_file", None) == base  # file systems unknown: neutral words
    assert recommendation("misaligned_file", ["LUSTRE", "gpfs"]).count("; ") == 2


def test_no_tag_tells_a_gpfs_or_unknown_job_to_run_lfs():
    for tag in CATALOG:
        for fs in (["gpfs"], ["xfs", "nfs"], [], None):
            assert "lfs " not in recommendation(tag, fs), (tag, fs)
    # the tags the issue named get Lustre's command on Lustre
    for tag in ("stragglers", "shared_file_time_imbalance", "misaligned_file"):
        assert "lfs setstripe" in recommendation(tag, ["lustre", "tmpfs"]), tag
    assert recommendation("no_such_tag", ["lustre"]) == ""
