"""Model-based what-if tuning: vary what a user can change about a file's I/O, score every
alternative with a bandwidth model, advise the best when its predicted speed-up clears a threshold.

This is the prediction-based tuning of Agarwal et al. (PrAct, PDSW'19, §"prediction-based
tuning": a bandwidth model replaces runs while searching the tunables) and one step of the PIDX
study's adaptive loop (Kumar et al. §6: sample candidate settings, predict, run the best), with
the search over the settings a user can change **without changing what the application
computes** (the same bytes, the same processes):

- `tier`             every tier the model was trained on (burst buffer, parallel file system); how a
                     user reaches each comes from the site profile (`Space.tier_hints`,
                     `features/site.py`), never from code;
- `transfer_size`    the sizes in `space.transfer_sizes`; the bytes moved per open stay the same,
                     so the operations per open (`rw_per_open`) scale by old / new size;
- `api`              POSIX, MPI-IO independent, MPI-IO collective (collective only on shared files);
- `layout`           file per process vs one shared file (only when the job has several processes).

A file-per-process file's bandwidth is one process's; the job moves `nprocs` of them at once,
so layout alternatives are compared on the job-equivalent bandwidth (`nprocs` × per-file for a
file per process, per-file for a shared file). Every other comparison is per file.

The space is small (at most 2 tiers × 7 sizes × 3 APIs × 2 layouts = 84 rows a file), so it is
searched exhaustively, in one vectorised model call for a batch of files; when a space exceeds
`space.max_calls` rows a file, coordinate descent (one dimension at a time, from the current
setting, until nothing improves) bounds the calls instead.

Pure pandas: `predict(frame) -> bandwidth per row (MiB/s)` is any model; `jobs/advise.py` runs it
on executors with the registered champion.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

KIB, MIB = 1 << 10, 1 << 20
DIMENSIONS = ("tier", "transfer_size", "api", "layout")
APIS = ("POSIX", "MPI-IO", "MPI-IO collective")
LAYOUTS = ("file per process", "shared file")


@dataclass(frozen=True)
class Space:
    """What the search may change; `dimensions` is the subset of DIMENSIONS varied."""

    tiers: tuple[str, ...] = ("bb", "pfs")
    transfer_sizes: tuple[int, ...] = (KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB, 4 * MIB)
    dimensions: tuple[str, ...] = DIMENSIONS
    max_calls: int = 256
    min_speedup: float = 1.2
    smaller_transfers: bool = False  # advise smaller requests too (off: larger only, see `options`)
    cap_per_open: bool = (
        True  # no request larger than the bytes a rank moves per open (see `options`)
    )
    tier_hints: tuple[tuple[str, str], ...] = ()  # (tier, how to move a file there): the site's

    @classmethod
    def from_conf(cls, aconf, tiers, site=None) -> Space:
        """The search of conf `advise:` over `tiers`; `site` (conf `site:`) words the tier moves."""
        from features.site import tier_hints

        return cls(
            tier_hints=tier_hints(site, [str(t) for t in tiers]) if site is not None else (),
            tiers=tuple(str(t) for t in tiers),
            transfer_sizes=tuple(int(s) for s in aconf.transfer_sizes),
            dimensions=tuple(aconf.dimensions),
            max_calls=int(aconf.max_model_calls),
            min_speedup=float(aconf.min_speedup),
            smaller_transfers=bool(aconf.smaller_transfers),
        )


def human_size(n) -> str:
    n = int(n)
    for unit, size in (("MiB", MIB), ("KiB", KIB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def api_of(row) -> str:
    if row["interface"] != "MPI-IO":
        return "POSIX"
    return "MPI-IO collective" if bool(row["collective"]) else "MPI-IO"


def layout_of(row) -> str:
    return "file per process" if bool(row["file_per_process"]) else "shared file"


def setting(row) -> dict:
    """A file's current value of every dimension."""
    return {
        "tier": str(row["tier"]),
        "transfer_size": int(row["transfer_size"] or 0),
        "api": api_of(row),
        "layout": layout_of(row),
    }


def options(row, space: Space) -> dict[str, list]:
    """Per dimension, the values a file may take (its own value always among them)."""
    now = setting(row)
    nprocs = int(row.get("nprocs") or row.get("n_ranks") or 1)
    opts = {d: [now[d]] for d in DIMENSIONS}
    if "tier" in space.dimensions:
        opts["tier"] = sorted(set(space.tiers) | {now["tier"]})
    if "transfer_size" in space.dimensions and now["transfer_size"] > 0:
        sizes = set(space.transfer_sizes) | {now["transfer_size"]}
        if (
            not space.smaller_transfers
        ):  # on the IOR sweep a larger request never lost > 10% (python -m bench.advice_eval)
            sizes = {v for v in sizes if v >= now["transfer_size"]}
        per_open = now["transfer_size"] * max(1.0, float(row.get("rw_per_open") or 1.0))
        if (
            space.cap_per_open
        ):  # no request beyond the bytes of an open: the same data in fewer, larger requests
            sizes = {v for v in sizes if v <= per_open} | {now["transfer_size"]}
        opts["transfer_size"] = sorted(sizes)
    if "layout" in space.dimensions and nprocs > 1:
        opts["layout"] = list(LAYOUTS)
    if "api" in space.dimensions and row["interface"] in ("POSIX", "MPI-IO"):
        opts["api"] = list(APIS)
    return opts


def apply(row, choice: dict) -> dict:
    """The feature row of `row` changed to `choice` (a value per dimension), same bytes, same processes."""
    out = dict(row)
    now = setting(row)
    nprocs = int(row.get("nprocs") or row.get("n_ranks") or 1)
    out["tier"] = choice["tier"]
    if choice["transfer_size"] != now["transfer_size"] and now["transfer_size"] > 0:
        scale = now["transfer_size"] / choice["transfer_size"]
        out["transfer_size"] = int(choice["transfer_size"])
        out["rw_per_open"] = max(1.0, float(row["rw_per_open"] or 1.0) * scale)
    layout = choice["layout"]
    out["file_per_process"] = layout == "file per process"
    if layout != now["layout"]:
        out["n_ranks"] = 1 if layout == "file per process" else nprocs
    api = choice["api"]
    out["interface"] = "POSIX" if api == "POSIX" else "MPI-IO"
    out["collective"] = api == "MPI-IO collective"
    if api == "POSIX":
        out["file_view"] = False
    return out


def _valid(choice: dict, now: dict) -> bool:
    """Collective I/O on a file per process is never advised (a file's collective calls need the
    processes sharing it); a file already doing it keeps it unless the search changes it."""
    same = choice["api"] == now["api"] and choice["layout"] == now["layout"]
    return same or not (
        choice["api"] == "MPI-IO collective" and choice["layout"] == "file per process"
    )


def _job_equivalent(bw: np.ndarray, rows: pd.DataFrame) -> np.ndarray:
    nprocs = pd.to_numeric(rows.get("nprocs"), errors="coerce").fillna(1).clip(lower=1).to_numpy()
    fpp = rows["file_per_process"].astype(bool).to_numpy()
    return np.where(fpp, bw * nprocs, bw)


@dataclass
class Result:
    """The search's answer for one file."""

    current: dict
    best: dict
    bandwidth_now: float  # predicted per-file MiB/s, current setting
    bandwidth_best: float  # predicted per-file MiB/s, best setting
    speedup: float  # on the job-equivalent bandwidth (see the module's docstring)
    calls: int
    by_dimension: dict = field(
        default_factory=dict
    )  # dimension -> (value, speed-up changing it alone)
    placement: tuple | None = None  # (tier, probability) when the placement model picked the tier

    def changes(self) -> list[str]:
        return [d for d in DIMENSIONS if self.best[d] != self.current[d]]


def _score(rows: list[dict], predict) -> tuple[np.ndarray, np.ndarray]:
    """(job-equivalent bandwidth, per-file bandwidth) of each candidate row."""
    frame = pd.DataFrame(rows)
    bw = np.asarray(predict(frame), dtype=float)
    return _job_equivalent(bw, frame), bw


def search(
    files: pd.DataFrame,
    predict: Callable[[pd.DataFrame], np.ndarray],
    space: Space,
    place: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
) -> list[Result]:
    """The best setting of each file (rows of silver/file_features) under `predict`.

    Exhaustive over `options` when the product fits `space.max_calls`, coordinate descent
    otherwise; one model call scores the exhaustive candidates of every file in the batch.

    `place` (optional; `advise.tier_from: placement`): a placement model (rows -> predicted_tier,
    probability). Then the tier is not searched with the bandwidth model: the other dimensions
    are, on the current tier, and the placement model picks the tier of the best of them; the
    speed-up is still the bandwidth model's. On the IOR sweep this picks better tiers than the
    ratio of two bandwidth predictions (python -m bench.advice_eval)."""
    if place is None or "tier" not in space.dimensions:
        return _search(files, predict, space)
    results = _search(
        files, predict, replace(space, dimensions=tuple(d for d in space.dimensions if d != "tier"))
    )
    records = files.to_dict("records")
    for res in results:  # below the threshold the other dimensions stay as they are
        if not (res.changes() and res.speedup >= space.min_speedup):
            res.best = dict(res.current)
    best_rows = pd.DataFrame([apply(r, res.best) for r, res in zip(records, results)])
    picked = place(best_rows)
    tiers, probs = (
        picked["predicted_tier"].astype(str).to_numpy(),
        picked["probability"].to_numpy(float),
    )
    moved = [dict(res.best, tier=t) for res, t in zip(results, tiers)]
    eq, raw = _score([apply(r, m) for r, m in zip(records, moved)], predict)
    eq_now, _ = _score([apply(r, res.current) for r, res in zip(records, results)], predict)
    for k, res in enumerate(results):
        res.best, res.bandwidth_best = moved[k], float(raw[k])
        res.speedup = float(eq[k] / eq_now[k]) if eq_now[k] > 0 else float("nan")
        res.placement = (str(tiers[k]), float(probs[k]))
    return results


def _search(files: pd.DataFrame, predict, space: Space) -> list[Result]:
    records = files.to_dict("records")
    exhaustive, rows, owners, grids = [], [], [], {}
    for i, r in enumerate(records):
        opts = options(r, space)
        grid = [dict(zip(DIMENSIONS, v)) for v in itertools.product(*(opts[d] for d in DIMENSIONS))]
        now = setting(r)
        grid = [c for c in grid if _valid(c, now)]
        if len(grid) <= space.max_calls:
            grids[i] = grid
            rows += [apply(r, c) for c in grid]
            owners += [i] * len(grid)
            exhaustive.append(i)
    scores, raw = _score(rows, predict) if rows else (np.array([]), np.array([]))
    owners = np.asarray(owners)
    results: list[Result | None] = [None] * len(records)
    for i in exhaustive:
        mine = owners == i
        results[i] = _result(records[i], grids[i], scores[mine], raw[mine])
    for i, r in enumerate(records):
        if results[i] is None:
            results[i] = _descend(r, predict, space)
    return results


def _result(row: dict, grid: list[dict], s: np.ndarray, raw: np.ndarray) -> Result:
    now = setting(row)
    i_now = grid.index(now) if now in grid else None
    bw_now = float(s[i_now]) if i_now is not None else float("nan")
    b = int(np.nanargmax(s)) if np.isfinite(s).any() else 0
    alone = {}
    for d in DIMENSIONS:  # the best value of each dimension changed alone, and its speed-up
        cands = [
            (c, v)
            for c, v in zip(grid, s)
            if all(c[o] == now[o] for o in DIMENSIONS if o != d) and c[d] != now[d]
        ]
        if cands:
            c, v = max(cands, key=lambda cv: cv[1])
            alone[d] = (c[d], float(v / bw_now) if bw_now > 0 else float("nan"))
    raw_now = float(raw[i_now]) if i_now is not None else float("nan")
    return Result(
        now,
        grid[b],
        raw_now,
        float(raw[b]),
        float(s[b] / bw_now) if bw_now > 0 else float("nan"),
        len(grid),
        alone,
    )


def _descend(row: dict, predict, space: Space) -> Result:
    """Coordinate descent from the current setting: each round tries every value of one dimension
    at a time, keeps the best, stops when a round changes nothing or the call budget is spent."""
    opts, now = options(row, space), setting(row)
    cur = dict(now)
    eq, raw = _score([apply(row, now)], predict)
    bw_now, raw_now = float(eq[0]), float(raw[0])
    best_bw, best_raw, calls, changed = bw_now, raw_now, 1, True
    while changed and calls < space.max_calls:
        changed = False
        for d in DIMENSIONS:
            cands = [dict(cur, **{d: v}) for v in opts[d] if v != cur[d]]
            cands = [c for c in cands if _valid(c, now)][: max(0, space.max_calls - calls)]
            if not cands:
                continue
            s, r = _score([apply(row, c) for c in cands], predict)
            calls += len(cands)
            k = int(np.argmax(s))
            if s[k] > best_bw:
                cur, best_bw, best_raw, changed = cands[k], float(s[k]), float(r[k]), True
    return Result(
        now, cur, raw_now, best_raw, best_bw / bw_now if bw_now > 0 else float("nan"), calls, {}
    )


def advised(result: Result, min_speedup: float) -> bool:
    """Worth saying: something changes, and the bandwidth model predicts at least `min_speedup`,
    or the placement model moved the file to another tier."""
    if not result.changes():
        return False
    if result.placement is not None and result.best["tier"] != result.current["tier"]:
        return True
    return bool(np.isfinite(result.speedup) and result.speedup >= min_speedup)


def change(result: Result) -> str:
    """The changed dimensions and their new values, e.g. `tier=bb; transfer_size=1 MiB` ('' if none)."""
    return "; ".join(
        f"{d}={human_size(result.best[d]) if d == 'transfer_size' else result.best[d]}"
        for d in result.changes()
    )


def describe(s: dict) -> str:
    return f"{s['api']}, {s['layout']}, {human_size(s['transfer_size'])} transfers, on {s['tier']}"


HINTS_SHORT = {"tier": "tier", "transfer_size": "transfer size", "api": "API", "layout": "layout"}
HINTS = {
    "tier": lambda v: f"move the file to tier {v}",  # the site's words: `message(..., tier_hints)`
    "transfer_size": lambda v: (
        f"issue {human_size(v)} requests (aggregate small writes in a buffer; MPI-IO: "
        f"romio_cb_buffer_size={int(v)}; HDF5: chunks of {human_size(v)})"
    ),
    "api": lambda v: {
        "POSIX": "use plain POSIX read/write for this file",
        "MPI-IO": "use MPI-IO independent calls (MPI_File_write_at / MPI_File_read_at)",
        "MPI-IO collective": "use collective MPI-IO (MPI_File_write_all / MPI_File_read_all; "
        "romio_cb_write=enable, romio_cb_read=enable)",
    }[v],
    "layout": lambda v: {
        "file per process": "write one file per process instead of a shared file",
        "shared file": "write one shared file instead of one file per process "
        "(MPI-IO collective or HDF5 parallel)",
    }[v],
}


def verdict(result: Result) -> str:
    """What the models say of the advised setting, without contradicting each other: "predicted
    1.90x faster (a -> b MiB/s)" when the bandwidth model predicts a gain; when the placement model
    moved the file to a tier on which the bandwidth model predicts no gain (`advised` tells it
    anyway: `search`'s `place`), which model advises the move and that the bandwidth model predicts
    it slower (or no faster)."""
    rates = f"{result.bandwidth_now:,.1f} -> {result.bandwidth_best:,.1f} MiB/s"
    moved = result.placement is not None and result.best["tier"] != result.current["tier"]
    s = result.speedup
    if not moved or (np.isfinite(s) and s > 1):
        return f"predicted {s:.2f}x faster ({rates})"
    tier, prob = result.placement
    pick = f"the placement model advises tier {tier} (probability {prob:.2f})"
    if not np.isfinite(s):
        return f"{pick}; the bandwidth model gives no speed-up for it"
    how = "slower" if s < 1 else "no faster"
    return f"{pick}; the bandwidth model predicts {s:.2f}x ({how}: {rates})"


def message(result: Result, tier_hints=()) -> str:
    """What to set, in the user's terms, with what the models predict (`verdict`); `tier_hints`
    ((tier, text) pairs: `Space.tier_hints`, from the site profile) say how to move a file to each
    tier."""
    hints = dict(tier_hints)

    def hint(d: str, v) -> str:
        return hints.get(v, HINTS[d](v)) if d == "tier" else HINTS[d](v)

    steps = "; ".join(hint(d, result.best[d]) for d in result.changes())
    return f"{verdict(result)}: {steps}"
