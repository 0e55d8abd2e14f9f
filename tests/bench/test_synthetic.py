import numpy as np
import pytest

from xct_estimators.bench.synthetic import COLUMNS, NOISE_STD, SINES, make_synthetic, triangle_weight


def reference_target(n_steps: int) -> np.ndarray:
    """App. D written per time step: the mean over the 16-step patches (stride 8) covering t of
    0.5 (w v1[t-8] + (1-w) v2[t-16]) + 0.5 (w v3[t-16] + (1-w) v4[t-24])."""

    def v(i, t):
        a, f, p = SINES[i]
        return a * np.sin(2 * np.pi * f * t + p)

    out = np.empty(n_steps)
    for t in range(n_steps):
        blends = []
        for k in (t // 8 - 1, t // 8):
            if k < 0 or not 8 * k <= t < 8 * k + 16:
                continue
            w = (k % 20) / 10 if k % 20 <= 10 else 2 - (k % 20) / 10
            blends.append(
                0.5 * (w * v(0, t - 8) + (1 - w) * v(1, t - 16)) + 0.5 * (w * v(2, t - 16) + (1 - w) * v(3, t - 24))
            )
        out[t] = np.mean(blends)
    return out


def test_target_is_the_documented_blend_plus_noise():
    frame = make_synthetic(n_steps=2000, seed=3)
    assert list(frame.columns) == list(COLUMNS) and frame.shape == (2000, 7)
    residual = frame["target"].to_numpy() - reference_target(2000)
    assert abs(residual.mean()) < 0.003
    assert residual.std() == pytest.approx(NOISE_STD, rel=0.1)


def test_sources_and_distractors():
    frame = make_synthetic(n_steps=10_000, seed=0)
    t = np.arange(10_000)
    for i, (a, f, p) in enumerate(SINES):
        np.testing.assert_allclose(frame[f"var_{i + 1}"], a * np.sin(2 * np.pi * f * t + p))
    for column, std in (("var_5", 0.1), ("var_6", 0.15)):
        assert np.diff(frame[column].to_numpy()).std() == pytest.approx(std, rel=0.05)
    # The distractors carry no information about the target.
    assert abs(np.corrcoef(np.diff(frame["var_5"]), np.diff(frame["target"]))[0, 1]) < 0.05


def test_deterministic_from_seed():
    assert make_synthetic(500, seed=1).equals(make_synthetic(500, seed=1))
    assert not make_synthetic(500, seed=1).equals(make_synthetic(500, seed=2))


def test_triangle_weight_cycle():
    k = np.arange(21)
    expected = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0]
    np.testing.assert_allclose(triangle_weight(k), expected, atol=1e-12)
