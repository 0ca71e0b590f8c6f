"""The report's placement plan when only one of the two models scored a job (a placement model held
back, or a bandwidth model never trained): the page still renders, and says which model is missing."""

from __future__ import annotations

from apps.report import Report, placement_plan, render


def _place(record_id: int, tier: str, predicted: str, version: str = "1") -> dict:
    return {
        "record_id": record_id,
        "file_name": f"/scratch/f{record_id}",
        "tier": tier,
        "predicted_tier": predicted,
        "probability": 0.8,
        "model_name": "iolake-placement",
        "model_version": version,
    }


def _bw(record_id: int, tier: str, by_tier: dict, version: str = "2") -> dict:
    best = max(by_tier, key=by_tier.get)
    return {
        "record_id": record_id,
        "file_name": f"/scratch/f{record_id}",
        "tier": tier,
        "bandwidth_mib_s": 100.0,
        "predicted_bandwidth_mib_s": by_tier[tier],
        "bandwidth_by_tier": list(by_tier.items()),
        "speedup": by_tier[best] / by_tier[tier],
        "best_tier": best,
        "model_name": "iolake-bandwidth",
        "model_version": version,
    }


def _page(plan, models, tiers) -> str:
    return render(
        Report(
            log_id="L",
            title="t",
            summary=[],
            metadata=[],
            tags=None,
            covering=None,
            timeline_png=None,
            timeline_note="",
            plan=plan,
            plan_models=models,
            plan_tiers=tiers,
        )
    )


def test_plan_with_bandwidth_predictions_only_renders_and_names_the_missing_model():
    plan, models, tiers = placement_plan(
        [], [_bw(1, "pfs", {"bb": 900.0, "pfs": 300.0}), _bw(2, "bb", {"bb": 500.0, "pfs": 250.0})]
    )
    assert models == ["iolake-bandwidth v2"] and tiers == ["bb", "pfs"]
    assert [(p["file_name"], p["predicted_tier"], p["move"], p["best_bw_tier"]) for p in plan] == [
        ("/scratch/f1", None, False, "bb"),
        ("/scratch/f2", None, False, "bb"),
    ]
    html = _page(plan, models, tiers)
    assert "no placement model scored this job" in html and "3× (bb)" in html
    assert "would run faster on another tier" not in html


def test_plan_with_placement_predictions_only_renders_without_bandwidth_columns():
    plan, models, tiers = placement_plan(
        [_place(1, "pfs", "bb"), _place(2, "bb", "bb"), _place(1, "pfs", "pfs", version="0")], []
    )
    assert models == ["iolake-placement v1"] and tiers == []  # only the newest version's rows
    assert [(p["predicted_tier"], p["move"], p["speedup"]) for p in plan] == [
        ("bb", True, None),
        ("bb", False, None),
    ]
    html = _page(plan, models, tiers)
    assert (
        "1 of\n2 files would run faster on another tier" in html
        and "no placement model" not in html
    )


def test_no_predictions_at_all_is_no_plan():
    assert placement_plan([], []) == (None, [], [])
    assert 'id="no-predictions"' in _page(None, [], [])
