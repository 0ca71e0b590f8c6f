"""Typed configuration: `conf/base.yaml` overlaid key by key by `conf/<env>.yaml`.

Loaded once, validated into frozen dataclasses, and passed explicitly to every stage.
Every default lives once, in `conf/base.yaml`, beside its comment: the dataclasses here give
each setting's type and no value, so a key base.yaml lacks is an error naming it.
An unknown key, a wrong type or a bad value raises `ConfigError` naming the file and the
dotted key, e.g. ``conf/local.yaml: ingest.decodr: unknown key (known: decoder, ...)``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import string
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
ENVS = ("local", "cluster")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class SparkConf:
    master: str | None
    app_name: str
    properties: dict[str, str]
    logs_per_partition: (
        int  # a stage over N new logs starts AQE's shuffles at >= N / this partitions (0: off)
    )
    batch_logs: int  # a `new_logs.by_month` stage over more new logs runs in month batches of this many (0: off)


@dataclass(frozen=True)
class LakeConf:
    """Where the lake lives and how its commits behave (`iolake/lake/`)."""

    root: str  # folder or URI holding bronze/, silver/, gold/, ops/
    commit_retries: int  # retries of a Delta commit that lost a race to a concurrent run
    retry_backoff_s: float  # first back-off of a retried commit (doubles, jittered, at most 8 s)
    lock_ttl_s: float  # S3 lake: a writer lease not renewed this long is a dead run's (lock.py)
    lock_wait_s: float  # S3 lake: how long a run waits for another writer before failing


@dataclass(frozen=True)
class IngestConf:
    decoder: str  # native | pydarshan
    isolate: bool  # decode in worker processes; pydarshan always is (it can segfault)
    task_bytes: int  # bin-packing target: trace bytes per Spark task
    task_max_logs: int
    decode_timeout_s: float
    worker_memory_mb: int
    max_file_bytes: int  # larger files are quarantined without reading
    max_nprocs: int  # header sanity: more ranks than this is garbage
    suffixes: list[str]
    commit: str = (
        "files"  # files: add the staged Parquet files as they are | merge: write the rows again
    )
    covers: bool = True  # compute each log's covering set where it is decoded (bronze/covers)
    patterns: bool = True  # and its DXT access-pattern counts (bronze/op_patterns)
    phases: bool = True  # and its traced I/O phases (bronze/phases)
    rollups: bool = (
        True  # and its file records' counters rolled up over ranks (bronze/file_rollups)
    )
    commit_threads: int = 4  # bronze tables gated and committed at once (1: one after another)
    row_group_rows: int = 131072  # rows per row group of a staged Parquet file (0: pyarrow's)
    ledger_sort_rows: int = (
        100000  # ledger rows in coarse row groups past which ingest sorts it (0: never)
    )


@dataclass(frozen=True)
class GateConf:
    enabled: bool
    sample_rows: int


@dataclass(frozen=True)
class TierRule:
    """A file is on `tier` when its path starts with `path_prefix` or its mount's fs type is `fs_type`."""

    tier: str
    path_prefix: str | None = None  # a rule names one of the two; the other stays unset
    fs_type: str | None = None


@dataclass(frozen=True)
class FeaturesConf:
    default_tier: str  # tier of a file no rule matches
    tier_rules: list[TierRule]
    random_fraction: float  # a file is "random access" above this share of non-sequential ops
    small_request_bytes: int  # DCA-IO's small requests: < 1 KiB and 1-100 KiB


@dataclass(frozen=True)
class SuspectConf:
    """Implausible counters that flag a log `suspect` (`features/suspect.py`)."""

    max_bytes_per_s_per_process: (
        int  # a rank's bytes per second of the run time above this is not believed
    )
    max_counter: int  # a byte or operation counter at or above this has wrapped or is garbage
    time_slack_s: (
        float  # clock slack of the run time against timestamps and of negative time counters
    )


@dataclass(frozen=True)
class TagsConf:
    """Thresholds of the bottleneck tags (`features/bottleneck_tags.py`).

    Names and defaults follow Drishti's `thresholds` (drishti/includes/config.py) where it has
    the rule; the rest are iolake's own and say so in conf/base.yaml.
    """

    small_bytes: int  # Drishti: a request below this is small (Darshan size bins)
    small_requests: float  # Drishti: share of reads (writes) that are small
    small_requests_absolute: int  # Drishti: and more small reads (writes) than this
    misaligned_requests: float  # Drishti: share of requests not aligned (file / memory)
    random_operations: float  # Drishti: share of reads (writes) neither consecutive nor sequential
    random_operations_absolute: int  # Drishti
    imbalance_stragglers: float  # Drishti: |slowest - fastest rank bytes| / bytes of a shared file
    imbalance_size: float  # Drishti: (max - min) / max bytes read (written) over the ranks
    interface_stdio: float  # Drishti: share of bytes through STDIO
    metadata_time_rank: float  # Drishti: seconds of metadata time on one rank
    collective_operations: float  # Drishti: independent share of shared-file MPI-IO reads (writes)
    collective_operations_absolute: int  # Drishti: and more independent reads (writes) than this
    metadata_time_share: float  # own: metadata share of the job's I/O time
    straggler_time_ratio: float  # own: slowest / fastest rank I/O time
    rank0_bytes_share: float  # own: rank 0's share of the job's bytes
    single_stripe_min_bytes: int  # own: a shared one-stripe Lustre file moving more
    ost_coverage: float  # own: distinct OSTs / OSTs the stripes could have spread over
    ost_count: int  # own: OSTs of the site's file system; 0: the job's highest OST index + 1
    io_phase_gap_s: float  # own: an idle gap longer than this starts a new I/O phase
    io_phases: int  # own: more phases than this is frequent
    read_after_write_share: float  # own: share of bytes on files read after written
    redundant_read_ratio: float  # Drishti P09: bytes read / (highest offset read + 1)
    redundant_write_ratio: float  # Drishti P10: bytes written / (highest offset written + 1)
    redundant_min_bytes: int  # own: bytes read (written) again must exceed this for P09/P10 ...
    redundant_min_share: float  # own: ... and this share of the job's POSIX bytes
    blocking_operations_absolute: (
        int  # Drishti M06/M07: blocking MPI-IO reads (writes) above this, none non-blocking
    )
    min_io_time_s: float  # own: time-share rules ignore jobs with less I/O time
    single_reader_share: (
        float  # own (keynote): one rank's share of a read-only file every rank opened
    )
    evidence_max: int  # Drishti DETAILS_MAX_SIZE: files / ranks listed per tag


@dataclass(frozen=True)
class MlflowConf:
    tracking_uri: str | None  # default: sqlite:///<lake>/mlflow.db
    artifact_root: str | None  # default: <lake>/mlruns


@dataclass(frozen=True)
class ModelsConf:
    """Placement labels, training and scoring (`jobs/labels.py`, `jobs/train.py`, `jobs/score.py`)."""

    label_min_margin: float  # drop a label group when (best - other) / other tier bandwidth <= this
    label_formats: list[str]  # trace formats whose bandwidths label
    benchmark_table: (
        str | None
    )  # CSV or Delta path: features + per-tier bandwidth; replaces lake labels
    default_benchmark: str | None  # the table to train on when the lake has too few two-tier labels
    ground_truth: (
        str | None
    )  # labels.csv of a sweep: agreement of lake labels is reported against it
    splits: int  # grouped train/test splits per classifier / regressor (models/evaluation.py)
    test_fraction: float
    seed: int
    max_train_rows: (
        int  # lake rows a bandwidth model trains on at most (whole feature groups sampled past it)
    )
    cv_jobs: int  # a bandwidth model's grouped splits fitted at once, in threads (0: one per core)
    lake_min_jobs: int  # plausible single-tier lake jobs with a throughput the lake's own bandwidth
    lake_min_apps: int  # models need (from at least this many applications), else the benchmark
    retrain_growth: float  # lake-trained bandwidth models retrain once the lake grew by this share
    classifiers: list[str]
    regressors: list[str]
    placement_model: str  # registered model names
    bandwidth_model: str
    job_bandwidth_model: str
    alias: str  # the alias `train` promotes a winning version to, and `score` / `predict` load


@dataclass(frozen=True)
class MaintainConf:
    """`iolake maintain` (iolake/maintain.py): OPTIMIZE + Z-ORDER, VACUUM, table stats."""

    vacuum_retention_hours: float  # VACUUM deletes unreferenced files older than this
    # Delta's safety limit is the table's delta.deletedFileRetentionDuration (default 7 days = 168 h):
    # a shorter retention is a configuration error unless this is true (then the check is lifted
    # for that VACUUM only, and the run says so). Readers or writers older than it may fail.
    allow_short_retention: bool


@dataclass(frozen=True)
class WatchMetric:
    name: str  # a gold/app_runs (or --history) column
    worse: str  # lower | higher: which way is a regression


@dataclass(frozen=True)
class SmaConf:
    drop: float  # alarm when the short mean is this share below the baseline mean


@dataclass(frozen=True)
class RobustZConf:
    z: float  # alarm when the short median's z against the baseline is <= -z ...
    min_drop: float  # ... and the medians differ by at least this share
    scale_floor: float  # lowest scale (log units) of a baseline


@dataclass(frozen=True)
class CusumConf:
    k: float  # allowance per run, in baseline sds
    h: float  # alarm when the cumulative sum reaches -h
    clip: float  # a run's z counts at most this much
    scale_floor: float  # lowest scale (log units) of a baseline


@dataclass(frozen=True)
class GlrConf:
    h: float  # alarm when the best window's sum of z / sqrt(its length) reaches -h
    clip: float  # a run's z counts at most this much
    scale_floor: float  # lowest scale (log units) of a baseline


@dataclass(frozen=True)
class WatchConf:
    """Regression watch (`jobs/watch.py`, `features/regressions.py`, `iolake watch`)."""

    key_parts: list[str]  # application key parts, in order
    nprocs_buckets: list[int]  # lower edges of the process-count buckets
    metrics: list[WatchMetric]
    rules: list[str]  # detectors that flag, in order
    short_window: int
    long_window: int
    min_history: int  # no alarm before the baseline holds this many runs
    recover: float  # re-armed when the short median is back within this share of the held baseline
    rebase_rise: float  # a short median this share above the baseline restarts it (0: never)
    further_drop: bool  # while regressed, a further drop against the regressed runs alarms again
    sma: SmaConf
    robust_z: RobustZConf
    cusum: CusumConf
    glr: GlrConf
    weather_window_h: float
    weather_drop: float
    weather_share: float
    weather_min_peers: int


@dataclass(frozen=True)
class AdviseConf:
    """Tuning advice (`jobs/advise.py`, `features/what_if.py`, `features/stripe_advice.py`, `iolake advise`)."""

    dimensions: list[str]  # what the what-if search may change
    transfer_sizes: list[int]  # request sizes tried, bytes
    smaller_transfers: bool  # advise smaller requests too
    tier_from: str  # placement | bandwidth: which model picks the tier
    min_speedup: float  # advise a what-if when the predicted speed-up reaches this
    max_model_calls: int  # candidates scored per file; above it, coordinate descent
    stripe_key: list[str]  # the application key of DCA-IO's run history (job_features columns)
    stripe_growth: str  # double | linear: the heuristic phase's stripe-count growth
    lustre_osts: int  # OSTs of the site's Lustre file system (0: not capped below Lustre's maximum)
    readvise_months: int  # a new champion re-advises the newest N months' jobs (0: every job)


@dataclass(frozen=True)
class SiteTier:
    """One storage tier of the centre (`site.tiers`): what the lake calls it, what it is, where it is
    mounted and how a user reaches it. Only `name` and `kind` are required."""

    name: str  # the lake's tier label (features.tier_rules' `tier`; the tiers the models know)
    kind: str  # burst_buffer | parallel_fs | node_local
    label: str | None = None  # how the advice names it; null: from `kind`
    mounts: list[str] = field(default_factory=list)  # path prefixes on this tier (tier rules first)
    stage: str | None = None  # how a user puts a file there: a template of {file} {name} {mount}
    stripe: str | None = None  # the stripe-setting command: a template of {count} {size} {dir}


@dataclass(frozen=True)
class SiteConf:
    """The centre's storage tiers and how a user reaches each (`features/site.py`): the advice's
    staging and stripe commands come from here, never from code."""

    name: str  # the profile's name, shown beside the advice
    tiers: list[SiteTier]


# Delta's default delta.deletedFileRetentionDuration ("interval 1 week")
DELTA_RETENTION_SAFETY_HOURS = 168.0


@dataclass(frozen=True)
class Config:
    env: str
    lake: LakeConf
    spark: SparkConf
    ingest: IngestConf
    gates: GateConf
    features: FeaturesConf
    suspect: SuspectConf
    tags: TagsConf
    mlflow: MlflowConf
    models: ModelsConf
    maintain: MaintainConf
    watch: WatchConf
    advise: AdviseConf
    site: SiteConf

    def digest(self) -> str:
        """Every setting: stamped on commits and runs (what exactly ran)."""
        return _digest(dataclasses.asdict(self))

    def model_digest(self) -> str:
        """The settings that shape what a model learns (MODEL_SECTIONS less MODEL_DIGEST_SKIPS,
        and MODEL_DIGEST_PARTS): `train` keeps a model trained under the same ones, so a change of
        heap, paths, ingest or the watch's detectors does not retrain every model and make `score`
        predict the lake again."""
        conf = dataclasses.asdict(self)
        kept = {name: conf[name] for name in MODEL_SECTIONS}
        for section, key in MODEL_DIGEST_SKIPS:
            kept[section].pop(key)
        for section, key in MODEL_DIGEST_PARTS:
            kept[f"{section}.{key}"] = conf[section][key]
        return _digest(kept)

    def with_overrides(self, **changes) -> Config:
        return dataclasses.replace(self, **changes)


# what a model sees (feature and tier rules, which logs are suspect, the site's tiers) and how it is
# trained, labelled and registered
MODEL_SECTIONS = ("features", "suspect", "models", "site")
# models settings that change how fast or when it trains, not what it learns
MODEL_DIGEST_SKIPS = (("models", "cv_jobs"), ("models", "retrain_growth"))
# settings of other sections a model depends on: the application key groups its splits
MODEL_DIGEST_PARTS = (("watch", "key_parts"), ("watch", "nprocs_buckets"))


def _digest(settings: dict) -> str:
    blob = json.dumps(settings, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


CHOICES = {
    ("ingest", "decoder"): ("pydarshan", "native"),
    ("ingest", "commit"): ("files", "merge"),
    ("env",): ENVS,
}


def _merge(base: dict, overlay: dict, origin: dict, src: str, prefix: str = "") -> None:
    for k, v in overlay.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and isinstance(base.get(k), dict) and k != "properties":
            _merge(base[k], v, origin, src, key + ".")
        elif isinstance(v, dict) and isinstance(base.get(k), dict):
            base[k].update(v)
            for kk in v:
                origin[f"{key}.{kk}"] = src
        else:
            base[k] = v
            _mark(origin, key, v, src)
        origin[key] = src


def _mark(origin: dict, key: str, value, src: str) -> None:
    """Record `src` as the origin of every key nested in `value` (a section set wholesale)."""
    if isinstance(value, dict):
        for k, v in value.items():
            origin[f"{key}.{k}"] = src
            _mark(origin, f"{key}.{k}", v, src)


def _check(value, tp, key: str, origin: dict, item: bool = False):
    """`value` as type `tp`; `item`: an element of a list (its file is the one that set the list)."""
    src = origin.get(key, origin.get("", "conf/base.yaml"))
    org = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{src}: {key}: expected a mapping, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        known = {f.name for f in dataclasses.fields(tp)}
        for k in value:
            if k not in known:
                where = origin.get(f"{key}.{k}" if key else k, src)
                raise ConfigError(
                    f"{where}: {key + '.' if key else ''}{k}: unknown key (known: {', '.join(sorted(known))})"
                )
        required = [
            f.name
            for f in dataclasses.fields(tp)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        absent = [k for k in required if k not in value]
        if absent and item:  # a list is set whole: the file that set it lacks the item's key
            names = ", ".join(f"{key}.{k}" for k in absent)
            raise ConfigError(f"{src}: {names}: missing (every item of {key} needs it)")
        if absent:
            names = ", ".join(f"{key}.{k}" if key else k for k in absent)
            raise ConfigError(
                f"{origin.get('', 'conf/base.yaml')}: {names}: missing (base.yaml sets every key; "
                "an overlay may only change them)"
            )
        kwargs = {
            k: _check(v, hints[k], f"{key}.{k}" if key else k, origin) for k, v in value.items()
        }
        return tp(**kwargs)
    if org in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)][0]
        return _check(value, inner, key, origin)
    if org is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{src}: {key}: expected a mapping, got {type(value).__name__}")
        return {str(k): str(v) for k, v in value.items()}
    if org is list:
        if not isinstance(value, list):
            raise ConfigError(f"{src}: {key}: expected a list, got {type(value).__name__}")
        (inner,) = typing.get_args(tp)
        return [_check(v, inner, key, origin, item=True) for v in value]
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{src}: {key}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{src}: {key}: expected an integer, got {value!r}")
        if value < 0:
            raise ConfigError(f"{src}: {key}: must be >= 0, got {value}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{src}: {key}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{src}: {key}: expected a string, got {value!r}")
        choices = CHOICES.get(tuple(key.split(".")))
        if choices and value not in choices:
            raise ConfigError(f"{src}: {key}: must be one of {', '.join(choices)}, got {value!r}")
        return value
    raise ConfigError(f"{src}: {key}: unsupported type {tp}")


def safe_load(text: str):
    """`yaml.safe_load` through libyaml's C parser where PyYAML was built with it (the same
    constructors, far faster on conf/ and pipeline.yaml, which every command reads at start-up:
    docs/benchmarks.md, layout_cost), else the pure-Python one."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _read_yaml(path: Path) -> dict:
    try:
        data = safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


def load_config(
    env: str = "local", conf_dir: Path | str | None = None, overrides: dict | None = None
) -> Config:
    """base.yaml, then <env>.yaml, then `overrides` (from the CLI), merged key by key."""
    conf_dir = Path(conf_dir) if conf_dir else CONF_DIR
    if env not in ENVS:
        raise ConfigError(f"--env: must be one of {', '.join(ENVS)}, got {env!r}")
    merged: dict = {}
    origin: dict = {}
    for name in ("base.yaml", f"{env}.yaml"):
        path = conf_dir / name
        if path.exists():
            _merge(merged, _read_yaml(path), origin, str(path))
            origin.setdefault("", str(path))  # where a missing key should have been
        elif name == "base.yaml":
            raise ConfigError(f"{path}: missing (the base configuration is required)")
    merged["env"] = env
    origin["env"] = "--env"
    if overrides:
        _merge(merged, overrides, origin, "command line")
    conf = _check(merged, Config, "", origin)
    _check_maintain(conf.maintain, origin)
    if conf.models.alias == "challenger":  # models/registry.py gives a losing version that alias
        raise ConfigError(
            f"{origin.get('models.alias', origin.get('', 'conf/base.yaml'))}: models.alias: 'challenger' "
            "is the alias a version that lost gets; choose another (e.g. champion)"
        )
    _check_watch(conf.watch, origin)
    _check_lake_models(conf.models, origin)
    _check_advise(conf.advise, origin)
    _check_suspect(conf.suspect, origin)
    _check_site(conf.site, origin)
    return _with_site_tier_rules(conf)


def _check_maintain(m: MaintainConf, origin: dict) -> None:
    """A VACUUM retention below Delta's safety limit needs `maintain.allow_short_retention: true`."""
    if m.vacuum_retention_hours < 0:
        src = origin.get("maintain.vacuum_retention_hours", "defaults")
        raise ConfigError(
            f"{src}: maintain.vacuum_retention_hours: must be >= 0, got {m.vacuum_retention_hours:g}"
        )
    if m.vacuum_retention_hours < DELTA_RETENTION_SAFETY_HOURS and not m.allow_short_retention:
        src = origin.get("maintain.vacuum_retention_hours", "defaults")
        raise ConfigError(
            f"{src}: maintain.vacuum_retention_hours: {m.vacuum_retention_hours:g} h is below Delta's safety "
            f"limit of {DELTA_RETENTION_SAFETY_HOURS:g} h (delta.deletedFileRetentionDuration): VACUUM could delete "
            "files a running reader or writer still needs; set maintain.allow_short_retention: true to allow it"
        )


def _check_lake_models(m: ModelsConf, origin: dict) -> None:
    """`models.lake_min_jobs` / `lake_min_apps`: grouped splits by application need two
    applications at least (one held out, one to learn from), and a job per application."""
    bad = _section_error("models", origin)
    if m.lake_min_apps < 2:
        raise bad(
            "lake_min_apps", f"must be >= 2 (splits hold applications out), got {m.lake_min_apps}"
        )
    if m.lake_min_jobs < m.lake_min_apps:
        raise bad(
            "lake_min_jobs",
            f"must be >= models.lake_min_apps ({m.lake_min_apps}), got {m.lake_min_jobs}",
        )
    if not m.retrain_growth >= 0:
        raise bad(
            "retrain_growth",
            f"must be >= 0 (a share of the rows; 0 retrains on every change), got {m.retrain_growth}",
        )


ADVISE_DIMENSIONS = ("tier", "transfer_size", "api", "layout")


def _section_error(section: str, origin: dict):
    """bad(key, msg) -> a ConfigError naming the file that set `section.key` (or the base) and the key."""

    def bad(key: str, msg: str) -> ConfigError:
        dotted = f"{section}.{key}"
        return ConfigError(
            f"{origin.get(dotted, origin.get('', 'conf/base.yaml'))}: {dotted}: {msg}"
        )

    return bad


def _check_advise(a: AdviseConf, origin: dict) -> None:
    """Known dimensions and choices; positive sizes and thresholds."""
    bad = _section_error("advise", origin)

    for d in a.dimensions:
        if d not in ADVISE_DIMENSIONS:
            raise bad(
                "dimensions", f"unknown dimension {d!r} (known: {', '.join(ADVISE_DIMENSIONS)})"
            )
    if a.tier_from not in ("placement", "bandwidth"):
        raise bad("tier_from", f"must be placement or bandwidth, got {a.tier_from!r}")
    if a.stripe_growth not in ("double", "linear"):
        raise bad("stripe_growth", f"must be double or linear, got {a.stripe_growth!r}")
    if not a.transfer_sizes or min(a.transfer_sizes) < 1:
        raise bad("transfer_sizes", "needs at least one positive size in bytes")
    if a.min_speedup <= 0 or a.max_model_calls < 1 or a.lustre_osts < 0:
        raise bad("min_speedup", "needs min_speedup > 0, max_model_calls >= 1 and lustre_osts >= 0")


def _check_suspect(s: SuspectConf, origin: dict) -> None:
    """Positive limits: a zero limit would flag every log that moved a byte."""
    bad = _section_error("suspect", origin)
    for key in ("max_bytes_per_s_per_process", "max_counter"):
        if getattr(s, key) < 1:
            raise bad(key, f"must be >= 1, got {getattr(s, key)}")
    if s.time_slack_s < 0:
        raise bad("time_slack_s", f"must be >= 0, got {s.time_slack_s:g}")


SITE_KINDS = ("burst_buffer", "parallel_fs", "node_local")
SITE_PLACEHOLDERS = {"stage": ("file", "name", "mount"), "stripe": ("count", "size", "dir")}


def _placeholders(template: str) -> list[str]:
    """The `{names}` a `str.format` template uses (ValueError when its braces do not parse)."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]


def _check_site(s: SiteConf, origin: dict) -> None:
    """Tiers named once, of a known kind, mounts as absolute path prefixes, templates that use only
    their placeholders (and a `{mount}` only where the tier has one). Errors name the tier's key,
    e.g. `site.tiers[1].stage`, and the file that set the tiers."""
    src = origin.get("site.tiers", origin.get("site", origin.get("", "conf/base.yaml")))

    def bad(key: str, msg: str) -> ConfigError:
        return ConfigError(f"{src}: site.{key}: {msg}")

    if not s.tiers:
        raise bad("tiers", "needs at least one tier")
    seen: set[str] = set()
    for i, t in enumerate(s.tiers):
        at = f"tiers[{i}]"
        if not t.name.strip():
            raise bad(f"{at}.name", "must not be empty")
        if t.name in seen:
            raise bad(f"{at}.name", f"tier {t.name!r} is named twice")
        seen.add(t.name)
        if t.kind not in SITE_KINDS:
            raise bad(f"{at}.kind", f"must be one of {', '.join(SITE_KINDS)}, got {t.kind!r}")
        for m in t.mounts:
            if not m.startswith("/"):
                raise bad(f"{at}.mounts", f"{m!r} is not an absolute path prefix (starts with /)")
        for key, allowed in SITE_PLACEHOLDERS.items():
            template = getattr(t, key)
            if template is None:
                continue
            try:
                used = _placeholders(template)
            except ValueError as e:
                raise bad(
                    f"{at}.{key}", f"not a template ({e}; write a literal brace as {{{{ or }}}})"
                ) from None
            for name in used:
                if name not in allowed:
                    raise bad(
                        f"{at}.{key}",
                        f"unknown placeholder {{{name}}} (known: {', '.join('{' + a + '}' for a in allowed)})",
                    )
            if "mount" in used and not t.mounts:
                raise bad(f"{at}.{key}", "uses {mount} but the tier has no mounts")
            if key == "stripe" and "count" not in used:
                raise bad(f"{at}.{key}", "must use {count} (the stripe count the advice sets)")


def _with_site_tier_rules(conf: Config) -> Config:
    """The site's mounts become path-prefix tier rules, checked before `features.tier_rules`."""
    rules = [TierRule(tier=t.name, path_prefix=m) for t in conf.site.tiers for m in t.mounts]
    if not rules:
        return conf
    features = dataclasses.replace(conf.features, tier_rules=[*rules, *conf.features.tier_rules])
    return dataclasses.replace(conf, features=features)


WATCH_KEY_PARTS = ("exe", "uid", "nprocs_bucket", "fs", "direction", "layout")
WATCH_RULES = ("sma", "robust_z", "cusum", "glr")


def _check_watch(w: WatchConf, origin: dict) -> None:
    """Known key parts, rules and directions; windows that can hold a baseline."""
    bad = _section_error("watch", origin)

    for part in w.key_parts:
        if part not in WATCH_KEY_PARTS:
            raise bad("key_parts", f"unknown part {part!r} (known: {', '.join(WATCH_KEY_PARTS)})")
    if not w.key_parts:
        raise bad("key_parts", "needs at least one part")
    for r in w.rules:
        if r not in WATCH_RULES:
            raise bad("rules", f"unknown rule {r!r} (known: {', '.join(WATCH_RULES)})")
    for m in w.metrics:
        if m.worse not in ("lower", "higher"):
            raise bad("metrics", f"{m.name}: worse must be lower or higher, got {m.worse!r}")
    if (
        not w.nprocs_buckets
        or w.nprocs_buckets != sorted(set(w.nprocs_buckets))
        or w.nprocs_buckets[0] > 1
    ):
        raise bad("nprocs_buckets", "must be increasing lower edges starting at 1 (or 0)")
    if w.short_window < 1 or w.min_history < 1 or w.long_window < w.min_history:
        raise bad(
            "long_window",
            "needs short_window >= 1, min_history >= 1 and long_window >= min_history",
        )
    for key in ("h", "clip"):
        if getattr(w.glr, key) <= 0:
            raise bad(f"glr.{key}", "must be > 0")
    reach = w.glr.clip * w.short_window**0.5  # a full short window of z = -clip
    if reach <= w.glr.h:
        raise bad(
            "glr.h",
            f"glr can never alarm: a full short window of z = -clip gives {reach:.2f} "
            f"(clip * sqrt(short_window)), not beyond h = {w.glr.h}",
        )
