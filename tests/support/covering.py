"""Independent oracles for covering sets: the union of intervals, and a log's DXT ops read with
pydarshan (not the project's decoder). Used by tests/jobs/test_covering.py,
tests/features/test_covering_sets.py and bench.sweep_checks.
"""

from __future__ import annotations

STREAMS = {"<STDIN>", "<STDOUT>", "<STDERR>"}


def union(ivs) -> list[tuple[float, float]]:
    """The union of closed intervals as sorted disjoint components; touching intervals join."""
    out: list[list[float]] = []
    for a, b in sorted(ivs):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def dxt_union_s(path: str) -> float | None:
    """The measure of the union of a log's DXT read and write segments, read with pydarshan (not
    the project's decoder), standard streams left out; None when the log has no DXT segment."""
    import darshan

    report = darshan.DarshanReport(path, read_all=True)
    ivs = []
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        if module not in report.records:
            continue
        for rec in report.records[module].to_df():
            if report.name_records.get(rec["id"]) in STREAMS:
                continue
            for kind in ("read_segments", "write_segments"):
                seg = rec[kind]
                if len(seg):  # an empty frame has no columns
                    ivs += list(zip(seg["start_time"], seg["end_time"]))
    return sum(b - a for a, b in union(ivs)) if ivs else None
