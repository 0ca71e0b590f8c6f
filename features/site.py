"""How a user reaches each storage tier at this site, from the site profile (conf `site:`,
`iolake.config.SiteConf`): the text of a what-if's tier move and of DCA-IO's stripe setting.

No command is written in code: a tier's `stage` template (how a user puts a file there) and
`stripe` template (the stripe-setting command) come from the profile; a tier the profile does not
name, or one without a template, gets words, never another system's syntax.

A `stage` template's `{file}` and `{name}` (the file's path and base name) are not known where the
what-if runs (once per distinct model input, for many files alike): they render as FILE and NAME,
which `features/advice.py` replaces with the advice row's example file. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence

KIND_LABELS = {
    "burst_buffer": "the burst buffer",
    "parallel_fs": "the parallel file system",
    "node_local": "node-local storage",
}
FILE, NAME = "<file>", "<name>"  # a stage template's {file} / {name}, filled per advice row
DIR = "<dir>"  # a stripe template's {dir}: the directory the job writes its files to


def tier(site, name: str):
    """The profile's tier called `name`, or None."""
    return next((t for t in site.tiers if t.name == name), None) if site is not None else None


def label(site, name: str) -> str:
    """How advice names tier `name`: the profile's label, else its kind's, else `tier NAME`."""
    t = tier(site, name)
    if t is None:
        return f"tier {name}"
    return t.label or KIND_LABELS.get(t.kind, f"tier {name}")


def stage_command(t) -> str | None:
    """A tier's staging command with {mount} filled and {file} / {name} as FILE / NAME."""
    if not t.stage:
        return None
    return t.stage.format(file=FILE, name=NAME, mount=t.mounts[0] if t.mounts else "")


def tier_hint(site, name: str) -> str:
    """What to do to move a file to tier `name`, in the site's words and with its command."""
    t = tier(site, name)
    if t is None:
        profile = f" {site.name!r}" if site is not None else ""
        return (
            f"move the file to tier {name} (the site profile{profile} does not name this tier: "
            "conf site.tiers)"
        )
    command = stage_command(t)
    if command:
        return f"move the file to {label(site, name)}: {command}"
    where = f" (under {', '.join(t.mounts)})" if t.mounts else ""
    return f"move the file to {label(site, name)}{where}"


def tier_hints(site, names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(tier, hint) of each tier in `names`: what the what-if search carries to the executors."""
    return tuple((n, tier_hint(site, n)) for n in names)


def stripe_tier(site, job_tiers: Sequence[str] = ()):
    """The tier whose stripe command applies to a job: the first of the profile's tiers with a
    `stripe` template among the job's tiers, else the first with one; None when none has one."""
    striped = [t for t in (site.tiers if site is not None else []) if t.stripe]
    mine = [t for t in striped if t.name in set(job_tiers or ())]
    return (mine or striped or [None])[0]


def stripe_command(site, count: int, size: str, job_tiers: Sequence[str] = (), path: str = DIR):
    """The site's command setting `count` stripes of `size` (e.g. `4M`) on `path`, or None when the
    profile names no stripe command."""
    t = stripe_tier(site, job_tiers)
    if t is None:
        return None
    return t.stripe.format(count=count, size=size, dir=path)
