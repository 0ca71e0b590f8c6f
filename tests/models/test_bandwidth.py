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
    assert bandwidth.metrics([10.0, 100.0], [10.0, 100.0]) == {"mdape_pct": 0.0, "r2_log": 1.0, "rmse_log": 0.0}


def test_metrics_mdape_is_median_relative_error():
    assert bandwidth.metrics([100.0, 100.0, 100.0], [110.0, 50.0, 100.0])["mdape_pct"] == pytest.approx(10.0)
