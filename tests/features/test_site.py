"""features/site.py: the words and commands of a tier move and a stripe setting come from the site
profile; a tier or command the profile does not name gets words, never another system's syntax."""

from __future__ import annotations

from features import site
from iolake.config import SiteConf, SiteTier, load_config

# a Lustre scratch and a burst buffer staged with DataWarp's syntax, as a centre's profile names them
CENTRE = SiteConf(
    name="lustre+bb",
    tiers=[
        SiteTier(
            name="bb",
            kind="burst_buffer",
            label="the DataWarp burst buffer",
            mounts=["/var/opt/cray/dws/"],
            stage="#DW stage_in source={file} destination=$DW_JOB_STRIPED/{name} type=file",
        ),
        SiteTier(
            name="pfs",
            kind="parallel_fs",
            mounts=["/lus/scratch/"],
            stripe="lfs setstripe --stripe-count {count} --stripe-size {size} {dir}",
        ),
        SiteTier(
            name="nvme", kind="node_local", mounts=["/mnt/bb/"], stage="sbcast {file} {mount}{name}"
        ),
        SiteTier(
            name="gpfs", kind="parallel_fs", stripe="stripetool --count {count} --unit {size} {dir}"
        ),
    ],
)


def test_tier_hint_renders_the_profile_s_command_and_label():
    assert site.tier_hint(CENTRE, "bb") == (
        "move the file to the DataWarp burst buffer: #DW stage_in source=<file> "
        "destination=$DW_JOB_STRIPED/<name> type=file"
    )
    # {mount} is the tier's first mount; no label: the kind's words
    assert (
        site.tier_hint(CENTRE, "nvme")
        == "move the file to node-local storage: sbcast <file> /mnt/bb/<name>"
    )
    # no staging command: the label and where it is mounted
    assert (
        site.tier_hint(CENTRE, "pfs")
        == "move the file to the parallel file system (under /lus/scratch/)"
    )
    # a tier the profile does not name: its name, and where to name it
    hint = site.tier_hint(CENTRE, "ssd")
    assert (
        hint.startswith("move the file to tier ssd")
        and "'lustre+bb'" in hint
        and "site.tiers" in hint
    )
    assert site.tier_hints(CENTRE, ["bb", "pfs"]) == (
        ("bb", site.tier_hint(CENTRE, "bb")),
        ("pfs", site.tier_hint(CENTRE, "pfs")),
    )


def test_shipped_profile_hints_name_no_system():
    conf = load_config("local")
    for t in ("bb", "pfs", "other"):
        hint = site.tier_hint(conf.site, t)
        assert "#DW" not in hint and "jobdw" not in hint and "$DW" not in hint
    assert site.tier_hint(conf.site, "bb") == "move the file to a burst buffer or other fast tier"
    assert site.stripe_command(conf.site, 8, "4M", ["pfs"]) == "lfs setstripe -c 8 -S 4M <dir>"


def test_stripe_command_is_the_job_tier_s_template():
    # the job's files on gpfs: its template; on pfs: pfs's; on neither: the first tier that has one
    assert site.stripe_command(CENTRE, 4, "1M", ["gpfs"]) == "stripetool --count 4 --unit 1M <dir>"
    assert site.stripe_command(CENTRE, 4, "1M", ["bb", "pfs"]) == (
        "lfs setstripe --stripe-count 4 --stripe-size 1M <dir>"
    )
    assert site.stripe_command(CENTRE, 16, "4M", []) == (
        "lfs setstripe --stripe-count 16 --stripe-size 4M <dir>"
    )
    assert site.stripe_command(CENTRE, 2, "1M", ["pfs"], path="/lus/scratch/run") == (
        "lfs setstripe --stripe-count 2 --stripe-size 1M /lus/scratch/run"
    )
    no_stripes = SiteConf(name="bb only", tiers=[CENTRE.tiers[0]])
    assert site.stripe_command(no_stripes, 4, "1M", ["bb"]) is None
    assert site.label(no_stripes, "pfs") == "tier pfs"
