"""``benchmarks/decoder_choice.py`` and its candidates (``benchmarks/measure/decoders.py``): every
candidate takes the package decoder's place, starts from the paper's forecast, and reads what it
claims to read; the script resumes its rows."""

import json

import pytest
import torch

from xct_estimators.nn import XCTFormerConfig, XCTFormerNet

SEQ_LEN, HORIZON, CHANNELS, FUTURE = 32, 16, 3, 1


def _net(decoder_class, future: int = FUTURE) -> XCTFormerNet:
    from benchmarks.measure.decoders import with_candidate

    torch.manual_seed(0)
    config = XCTFormerConfig(
        seq_len=SEQ_LEN, out_len=HORIZON, n_channels=CHANNELS + future, patch_len=8, stride=8, d_model=8, n_heads=1,
        d_ff=16, e_layers=1, n_future_channels=future, future_len=HORIZON if future else 0,
    )  # fmt: skip
    return with_candidate(decoder_class)(config).eval()


@pytest.mark.parametrize(
    "name",
    [
        "filters",
        "tide",
        "feature_filters",
        "no_level",
        "level_gain",
        "data_units",
        "regression",
        "regression_without_gain",
        "step_gain",
        "replicated_history",
        "level_floor",
        "level_floor_without_gain",
        "window_spread",
        "feature_dropout",
        "level_floor_dropout",
    ],
)
def test_every_candidate_starts_from_the_forecast_without_covariates(name, benchmark_script):
    candidates = benchmark_script("decoder_choice").CANDIDATES
    x, future = torch.randn(2, SEQ_LEN, CHANNELS + FUTURE), torch.randn(2, HORIZON, FUTURE)
    baseline = _net(candidates[name], future=0)(x[..., :CHANNELS])
    candidate = _net(candidates[name])
    zeros, ones = torch.zeros(CHANNELS), torch.ones(CHANNELS)  # what a fit gives the lab's networks, floor and all
    candidate.set_statistics(known=(torch.zeros(FUTURE), torch.ones(FUTURE)), level=(zeros, ones), level_floor=zeros)
    torch.testing.assert_close(candidate(x, n_outputs=CHANNELS, future=future), baseline)
    assert sum(p.numel() for p in candidate.known_future.parameters()) > 0


@pytest.mark.parametrize(
    "with_gain, without",
    [("Regression", "RegressionWithoutGain"), ("LevelFloor", "LevelFloorWithoutGain"), ("package", "FeatureDropout")],
)
def test_a_candidate_without_gain_is_its_decoder_blind_to_the_level(with_gain, without):
    """``regression_without_gain`` and ``level_floor_without_gain`` are their decoders with a zero
    gain and draw their weights; ``feature_dropout`` is the package's decoder with a zero gain, and
    draws its weights but the gain's, which it lacks."""
    from benchmarks.measure import decoders
    from xct_estimators.nn.known_future import KnownFutureDecoder

    gained_class = KnownFutureDecoder if with_gain == "package" else getattr(decoders, with_gain)
    torch.manual_seed(0)
    gained = gained_class(SEQ_LEN, FUTURE, CHANNELS).eval()  # the package's drops out in training
    torch.manual_seed(0)
    candidate = getattr(decoders, without)(SEQ_LEN, FUTURE, CHANNELS).eval()
    for name, value in candidate.state_dict().items():  # the same draws, the gain's aside
        torch.testing.assert_close(value, gained.state_dict()[name])
    for parameter in gained.parameters():  # trained weights, not the zero start
        torch.nn.init.normal_(parameter, std=0.3)
    candidate.load_state_dict(
        {name: value for name, value in gained.state_dict().items() if name in candidate.state_dict()}
    )
    known, level = torch.randn(2, SEQ_LEN + HORIZON, FUTURE), torch.randn(2, 1, CHANNELS)
    with torch.no_grad():
        assert not torch.allclose(gained(known, level), gained(known, level + 5.0))  # the gain reads the level
        for layer in (gained.gain.mlp[-1], gained.gain.skip):
            torch.nn.init.zeros_(layer.weight), torch.nn.init.zeros_(layer.bias)
        torch.testing.assert_close(candidate(known, level), gained(known, level))
        torch.testing.assert_close(candidate(known, level + 5.0), gained(known, level))


def test_the_lab_s_spread_is_the_std_of_the_observed_window():
    """:class:`PackageNetwork` gives ``window_spread`` the targets' window std over observed points,
    as the package reads their mean; bad input is refused before."""
    from benchmarks.measure.decoders import WindowSpread

    net = _net(WindowSpread)
    x, future = torch.randn(2, SEQ_LEN, CHANNELS + FUTURE) * 3.0, torch.randn(2, HORIZON, FUTURE)
    mask = torch.rand(2, SEQ_LEN, CHANNELS + FUTURE) > 0.3
    mask[..., CHANNELS:] = True
    with torch.no_grad():
        net(torch.where(mask, x, torch.nan), mask=mask, n_outputs=2, future=future)
    for b in range(2):
        for c in range(2):
            values = x[b, mask[b, :, c], c]
            torch.testing.assert_close(net.known_future.spread[b, 0, c], values.var(unbiased=False).add(1e-5).sqrt())
    with pytest.raises(ValueError):
        net(x[..., :2], future=future)


def test_the_tide_candidate_reads_every_step_of_window_and_horizon():
    from benchmarks.measure.decoders import Tide

    torch.manual_seed(0)
    decoder = Tide(2, 8, SEQ_LEN, FUTURE, HORIZON, HORIZON, CHANNELS).eval()
    for parameter in decoder.parameters():  # trained weights, not the zero start
        torch.nn.init.normal_(parameter, std=0.3)
    channels, known = torch.randn(1, CHANNELS, 16), torch.randn(1, SEQ_LEN + HORIZON, FUTURE)
    mean, std = torch.zeros(1, 1, CHANNELS), torch.ones(1, 1, CHANNELS)
    for step in (0, SEQ_LEN - 1, SEQ_LEN + HORIZON - 1):
        changed = known.clone()
        changed[0, step] += 1.0
        with torch.no_grad():
            difference = (decoder(channels, changed, mean, std) - decoder(channels, known, mean, std)).abs()
        assert (difference.sum(dim=(0, 2)) > 0).all()  # a lag anywhere reaches every horizon step


def test_an_unknown_candidate_or_family_is_refused_with_the_choices(benchmark_script, capsys, tmp_path):
    script = benchmark_script("decoder_choice")
    with pytest.raises(SystemExit):
        script.main(["--candidates", "filters,attention", "--output", str(tmp_path)])
    assert "unknown attention; choose from filters, tide, feature_filters" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--families", "lagged,cubic", "--output", str(tmp_path)])
    assert "unknown cubic; choose from lagged" in capsys.readouterr().err


def _fake_run(calls: list):
    def fake_run(candidate, family, seed, horizon):
        calls.append((candidate, family, seed, horizon))
        row = {"decoder": candidate, "family": family, "horizon": horizon, "seed": seed, "parameters": 1}
        floor = None if family == "ETTh1" else 0.05
        return {**row, "noise_floor": floor, "mse": 0.1 + seed % 10 / 100, "fit_seconds": 1.0,
                "device": {"cpu": "test CPU"}, "git_commit": "abcdef1234"}  # fmt: skip

    return fake_run


def test_a_candidate_runs_on_real_data_with_the_calendar_at_each_horizon(benchmark_script, monkeypatch, tmp_path):
    script = benchmark_script("decoder_choice")
    calls = []
    monkeypatch.setattr(script, "run", _fake_run(calls))
    monkeypatch.setattr(script, "ProcessPoolExecutor", _InProcess)
    args = ["--candidates", "regression", "--families", "ETTh1", "--horizons", "96,336", "--output", str(tmp_path)]
    script.main(args)
    assert sorted(calls) == sorted(("regression", "ETTh1", s, h) for s in script.SEEDS for h in (96, 336))
    script.main(args)  # every (horizon, seed) is done: nothing runs again
    assert len(calls) == 6


def test_a_rerun_resumes_and_the_table_reads_the_rows(benchmark_script, monkeypatch, tmp_path):
    script = benchmark_script("decoder_choice")

    calls = []
    monkeypatch.setattr(script, "run", _fake_run(calls))
    monkeypatch.setattr(script, "ProcessPoolExecutor", _InProcess)
    output = tmp_path / "results" / "cpu" / "decoder-choice" / "suite"
    args = ["--candidates", "filters,tide", "--families", "lagged", "--output", str(output)]
    script.main(args)
    assert len(calls) == 6
    (output / "rows.jsonl").write_text("\n".join((output / "rows.jsonl").read_text().splitlines()[:4]) + "\n")
    script.main(args)  # two rows lost: only they run again
    assert len(calls) == 8 and len((output / "rows.jsonl").read_text().splitlines()) == 6
    rows = [json.loads(line) for line in (output / "rows.jsonl").read_text().splitlines()]
    assert sorted((r["decoder"], r["seed"]) for r in rows) == sorted(
        (d, s) for d in ("filters", "tide") for s in script.SEEDS
    )
    from benchmarks.measure.covariate_tables import table

    table = table(tmp_path / "results", tmp_path)
    assert "| `known-lagged` | 0.120 ± 0.010 | 0.120 ± 0.010 | 0.050 |" in table
    assert "filters, tide at commit abcdef1 on test CPU;" in table


class _InProcess:
    """``ProcessPoolExecutor`` in this process (the test's stand-in for ``run`` cannot be pickled)."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, function, *iterables):
        return map(function, *iterables)


def test_feature_filters_is_the_earlier_package_decoder_weight_for_weight():
    """Made in that decoder's order, a seed draws its weights: its committed rows can be rerun."""
    from benchmarks.measure.decoders import FeatureFilters

    torch.manual_seed(0)
    module = FeatureFilters(4, 8, SEQ_LEN, FUTURE, HORIZON, HORIZON, CHANNELS)
    assert module.decode.mlp[0].in_features == 16 + 8 + 16 + 2  # its filters, features, context, level, spread
    assert not hasattr(module, "gain") and not hasattr(module, "offset")  # no modules the earlier one lacked
    torch.manual_seed(0)
    first = torch.nn.Linear(FUTURE, 32).weight  # the first draw of its feature MLP
    torch.testing.assert_close(module.features.mlp[0].weight, first)


def test_the_calendar_table_says_whether_a_change_is_beyond_the_spread(tmp_path):
    from benchmarks.measure.covariate_tables import calendar_table

    def record(horizon, covariates, mse, dataset="ETTh1"):
        run = {"horizon": horizon, "covariates": covariates}
        return {"dataset": dataset, "horizon": horizon, "run": run, "mse": mse, "git_commit": "abcdef1234", "seed": 1,
                "command": f"xct-bench forecast --covariates {covariates}", "device": {"cpu": "test CPU"}}  # fmt: skip

    rows = [record(96, None, m) for m in (0.40, 0.41)] + [record(96, "calendar", m) for m in (0.40, 0.42)]
    rows += [record(192, None, m) for m in (0.40, 0.40)] + [record(192, "calendar", m) for m in (0.50, 0.50)]
    rows += [record(336, None, m) for m in (0.40, 0.40)] + [record(336, "calendar", 0.6)]
    rows += [record(96, None, 0.3, dataset="ETTm1")]  # no calendar run: no row
    path = tmp_path / "results" / "cpu" / "covariates-calendar" / "results.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = calendar_table(tmp_path / "results", tmp_path)
    assert "| ETTh1 | 96 | 2, 2 | 0.405 ± 0.007 | 0.410 ± 0.014 | +1.2% | within the spread |" in table
    assert "| ETTh1 | 192 | 2, 2 | 0.400 ± 0.000 | 0.500 ± 0.000 | +25.0% | worse |" in table
    assert "| ETTh1 | 336 | 2, 1 | 0.400 ± 0.000 | 0.600 | +50.0% | one seed: no spread |" in table
    assert "ETTm1" not in table and "commits abcdef1 on test CPU;" in table and "(of 1)" in table


def test_the_suite_table_gives_each_model_its_ratio_and_each_run_its_machine(tmp_path):
    from benchmarks.measure.covariate_tables import SUITE_FOLDERS, suite_table

    def record(dataset, model, mse, cpu, covariates="all"):
        return {"dataset": dataset, "horizon": 96, "model": model, "mse": mse, "run": {"covariates": covariates},
                "noise_floor": 0.05, "git_commit": "abcdef1234", "command": f"xct-bench forecast --models {model}",
                "device": {"cpu": cpu}}  # fmt: skip

    models = ("xctformer", "tide", "tsmixer")
    lagged = [
        record("known-lagged", m, v, cpu)
        for m, v, cpu in zip(models, (0.1, 0.2, 0.25), ("CPU A", "CPU B", "CPU B"), strict=True)
    ]
    lagged.append(record("known-lagged", "tide", 0.01, "CPU B", covariates="none"))  # not this comparison
    rows = {
        SUITE_FOLDERS[0]: lagged,
        SUITE_FOLDERS[1]: [
            record("known-weather", m, v, "CPU A") for m, v in zip(models, (0.3, 0.2, 0.4), strict=True)
        ],
        SUITE_FOLDERS[2]: [record("control", m, 0.2, "CPU A", covariates="future") for m in models],
    }
    for folder, records in rows.items():
        path = tmp_path / "results" / "cpu" / folder / "results.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    table = suite_table(tmp_path / "results", tmp_path)
    assert "| `known-lagged` | chosen on | 96 | 0.100 | 0.200 | 0.250 | 0.050 | 0.50 |" in table
    assert "| `known-weather` | held out | 96 | 0.300 | 0.200 | 0.400 | 0.050 | 1.50 |" in table
    assert "no worse in 2 of 3 cells; the geometric mean of the ratio is 0.91" in table
    assert "xctformer at commit abcdef1 on CPU A" in table and "tide at commit abcdef1 on CPU B" in table


def test_the_choice_table_refuses_rows_at_another_horizon(tmp_path):
    from benchmarks.measure.covariate_tables import table

    suite = tmp_path / "results" / "cpu" / "decoder-choice" / "suite"
    suite.mkdir(parents=True)
    row = {"decoder": "regression", "family": "lagged", "horizon": 336, "seed": 2021, "mse": 0.1, "noise_floor": 0.05}
    (suite / "rows.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=r"horizon\(s\) \[336\]"):
        table(tmp_path / "results", tmp_path)


def test_feature_dropout_drops_out_in_training_and_has_no_gain_modules():
    """As its rows ran: the package's dropout, and none of the gain's modules (its parameter count)."""
    from benchmarks.measure.decoders import FeatureDropout

    torch.manual_seed(0)
    module = FeatureDropout(SEQ_LEN, FUTURE, CHANNELS)
    assert not {"gain", "offset", "level_floor"} & {*module._modules, *module._parameters, *module._buffers}
    for parameter in module.parameters():  # trained weights, not the zero start
        torch.nn.init.normal_(parameter, std=0.3)
    known, level = torch.randn(2, SEQ_LEN + HORIZON, FUTURE), torch.ones(2, 1, CHANNELS)
    with torch.no_grad():
        assert not torch.allclose(module.train()(known, level), module.eval()(known, level))


@pytest.mark.parametrize("name", ["level_floor", "level_floor_without_gain", "window_spread"])
def test_the_candidates_recorded_before_the_package_s_dropout_have_none(name):
    """Their rows ran without dropout: a training forward gives the evaluation's effects."""
    from benchmarks.measure.decoders import CANDIDATES

    torch.manual_seed(0)
    module = CANDIDATES[name](SEQ_LEN, FUTURE, CHANNELS)
    for parameter in module.parameters():  # trained weights, not the zero start
        torch.nn.init.normal_(parameter, std=0.3)
    level = module.spread = torch.ones(2, 1, CHANNELS)
    known = torch.randn(2, SEQ_LEN + HORIZON, FUTURE)
    with torch.no_grad():
        torch.testing.assert_close(module.train()(known, level), module.eval()(known, level))


def test_level_floor_dropout_is_the_package_s_decoder_and_level_floor_in_eval():
    from benchmarks.measure.decoders import CANDIDATES, LevelFloor
    from xct_estimators.nn.known_future import KnownFutureDecoder

    assert CANDIDATES["level_floor_dropout"] is KnownFutureDecoder
    torch.manual_seed(0)
    plain = LevelFloor(SEQ_LEN, FUTURE, CHANNELS)
    torch.manual_seed(0)
    dropped = KnownFutureDecoder(SEQ_LEN, FUTURE, CHANNELS)
    for parameter in plain.parameters():  # trained weights: the zero start hides the decoding
        torch.nn.init.normal_(parameter, std=0.3)
    dropped.load_state_dict(plain.state_dict())
    known, level = torch.randn(2, SEQ_LEN + HORIZON, FUTURE), torch.randn(2, 1, CHANNELS)
    with torch.no_grad():
        torch.testing.assert_close(dropped.eval()(known, level), plain.eval()(known, level))
        assert not torch.allclose(dropped.train()(known, level), plain.train()(known, level))
