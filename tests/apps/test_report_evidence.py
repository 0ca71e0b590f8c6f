"""A job page's advice shows what this lake measured within the evidence items it shows: a what-if
row whose model facts alone fill the shown items still shows its measured gain and precedent."""

from __future__ import annotations

from apps.report import EVIDENCE_SHOWN, advice_groups


def test_lake_measurements_are_among_the_shown_evidence():
    model = [f"model fact {i}" for i in range(EVIDENCE_SHOWN + 1)]
    measured = "measured in this lake: 120.0 MiB/s on the advised tier (4 files) vs 100.0 MiB/s"
    precedent = "precedent: 2 runs of this application with tier pfs ran at a median 1.20x"
    row = {
        "kind": "what_if",
        "item": "/scratch/a",
        "file_name": "/scratch/a",
        "current": "POSIX, on bb",
        "advised": "POSIX, on pfs",
        "evidence": [*model, measured, precedent],
    }
    (group,) = advice_groups([row])
    assert group["evidence_shown"][:2] == [measured, precedent]
    assert group["evidence_shown"][2:] == model[: EVIDENCE_SHOWN - 2]
    assert group["evidence_more"] == len(model) - (EVIDENCE_SHOWN - 2)
