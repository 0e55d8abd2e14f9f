"""``benchmarks/decoder_choice.py``: every candidate takes the package decoder's place, starts from
the paper's forecast, and reads what it claims to read."""

import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet, known_future, model

SEQ_LEN, HORIZON, CHANNELS, FUTURE = 32, 16, 3, 1


def _net(decoder_class, monkeypatch, future: int = FUTURE) -> XCTFormerNet:
    monkeypatch.setattr(model, "KnownFutureDecoder", decoder_class)
    torch.manual_seed(0)
    config = XCTFormerConfig(
        seq_len=SEQ_LEN, out_len=HORIZON, n_channels=CHANNELS + future, patch_len=8, stride=8, d_model=8, n_heads=1,
        d_ff=16, e_layers=1, n_future_channels=future, future_len=HORIZON if future else 0,
    )  # fmt: skip
    return XCTFormerNet(config).eval()


@pytest.mark.parametrize("name", ["per_step", "filters_no_drop", "filters"])
def test_every_candidate_starts_from_the_forecast_without_covariates(name, monkeypatch, benchmark_script):
    candidates = benchmark_script("decoder_choice").CANDIDATES
    x, future = torch.randn(2, SEQ_LEN, CHANNELS + FUTURE), torch.randn(2, HORIZON, FUTURE)
    baseline = _net(candidates[name], monkeypatch, future=0)(x[..., :CHANNELS])
    candidate = _net(candidates[name], monkeypatch)
    torch.testing.assert_close(candidate(x, n_outputs=CHANNELS, future=future), baseline)
    assert sum(p.numel() for p in candidate.known_future.parameters()) > 0
    if name != "per_step":
        assert candidate.known_future.drop == (known_future.DROP if name == "filters" else 0.0)


def test_the_per_step_decoder_reads_each_step_s_covariates_only(benchmark_script):
    torch.manual_seed(0)
    decoder = benchmark_script("decoder_choice").PerStep(2, 8, SEQ_LEN, FUTURE, HORIZON, HORIZON)
    for parameter in decoder.parameters():  # trained weights, not the zero start
        torch.nn.init.normal_(parameter)
    channels, known = torch.randn(1, CHANNELS, 16), torch.randn(1, SEQ_LEN + HORIZON, FUTURE)
    changed = known.clone()
    changed[0, SEQ_LEN + 5] += 1.0  # horizon step 5's covariate
    changed[0, :SEQ_LEN] += 1.0  # the window's: not read
    difference = (decoder(channels, changed) - decoder(channels, known)).abs().sum(dim=(0, 2))
    assert difference.nonzero().flatten().tolist() == [5]


def test_an_unknown_candidate_is_refused_with_the_choices(benchmark_script, capsys):
    with pytest.raises(SystemExit):
        benchmark_script("decoder_choice").main(["--candidates", "filters,attention"])
    assert "unknown attention; choose from per_step, filters_no_drop, filters" in capsys.readouterr().err
