import numpy as np
import pytest

from models import bandwidth
from tests.models.tiny import bandwidth_frame


@pytest.mark.parametrize("name", bandwidth.REGRESSORS)
def test_build_estimator_fits_log_bandwidth(name):
    X, bw = bandwidth_frame()
    est = bandwidth.build_estimator(name, seed=1).fit(X, np.log(bw))
    m = bandwidth.metrics(bw, np.exp(est.predict(X)))
    assert m["r2_log"] > 0.5, m


def test_metrics_perfect_prediction():
    assert bandwidth.metrics([10.0, 100.0], [10.0, 100.0]) == {"mdape_pct": 0.0, "mape_pct": 0.0, "r2": 1.0,
                                                               "r2_log": 1.0, "rmse_log": 0.0}


def test_metrics_mape_and_raw_r2_by_hand():
    m = bandwidth.metrics([100.0, 200.0], [150.0, 200.0])
    assert m["mape_pct"] == pytest.approx(25.0)  # (50% + 0%) / 2
    assert m["r2"] == pytest.approx(1 - 2500.0 / 5000.0)  # SS_res 50², SS_tot 2 × 50²


def test_median_rule_is_the_training_median_of_the_tier():
    import pandas as pd

    X_train = pd.DataFrame({"tier": ["bb", "bb", "bb", "pfs"]})
    X_test = pd.DataFrame({"tier": ["bb", "pfs", "lustre"]})
    pred = bandwidth.median_rule(X_train, [1.0, 3.0, 10.0, 7.0], X_test)
    assert list(pred) == [3.0, 7.0, 5.0]  # lustre: the median of all four


def test_fit_and_evaluate_reports_the_median_rule_beside_each_model():
    from models import evaluation

    X, bw = bandwidth_frame()
    folds = evaluation.splits(np.arange(len(X)) // 3, 4, 0.25, seed=0)
    r = bandwidth.fit_and_evaluate("random_forest", X, bw, folds)
    assert {"mdape_pct_mean", "mape_pct_mean", "r2_mean", "r2_log_mean", "baseline_mdape_pct_mean"} <= set(r)
    assert r["r2_log_mean"] > r["baseline_r2_log_mean"]


def test_metrics_mdape_is_median_relative_error():
    assert bandwidth.metrics([100.0, 100.0, 100.0], [110.0, 50.0, 100.0])["mdape_pct"] == pytest.approx(10.0)


def test_closer_counts_each_metric_in_its_own_error():
    """By hand, truth 100 on every row: prediction 300 is 200% off (log 1.10), rule 10 is 90% off
    (log 2.30): closer in log terms, farther in percentage. Prediction 50 against rule 150: 50% vs
    50% (a tie in APE), |log| 0.69 vs 0.41 (rule closer). Prediction 100 against rule 90: model closer."""
    from models.bandwidth import closer

    got = closer([100.0, 100.0, 100.0], [300.0, 50.0, 100.0], [10.0, 150.0, 90.0])
    assert got == {"mdape_pct_mean": (1, 1), "r2_log_mean": (2, 1)}
