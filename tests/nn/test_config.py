import pytest

from xct_estimators.nn import (
    DEFAULT_MAX_ATTENTION_BYTES,
    XCTFormerConfig,
    auto_decop_k,
    get_preset,
    list_presets,
)


def test_memory_guard_rejects_traffic_without_decop_and_suggests_decop_k():
    with pytest.raises(ValueError) as info:
        get_preset("Traffic").config(out_len=96, decop_k=None)
    message = str(info.value)
    assert "N = 10344 tokens" in message
    assert "862 channels x 12 patches" in message
    assert "GB" in message and "decop_k" in message


def test_memory_guard_bound_is_configurable():
    config = dict(seq_len=96, n_channels=50, out_len=96, d_model=8)
    assert XCTFormerConfig(**config).n_tokens == 600
    with pytest.raises(ValueError, match="Too many tokens for full CRAB"):
        XCTFormerConfig(**config, max_attention_bytes=1_000_000)
    XCTFormerConfig(**config, max_attention_bytes=None)  # guard off
    XCTFormerConfig(**config, max_attention_bytes=1_000_000, decop_k=32)  # DeCoP: no N x N


@pytest.mark.parametrize("preset", list_presets(), ids=lambda p: f"{p.task}-{p.dataset}")
def test_default_bound_admits_every_paper_config_at_its_batch_size(preset):
    fused = preset.config(out_len=720 if preset.task == "forecast" else None)
    for config in (fused, fused.replace(fused_attention=False)):  # either path, in fp32 or mixed precision
        assert config.attention_memory_bytes(preset.batch_size) <= DEFAULT_MAX_ATTENTION_BYTES
        config.check_attention_memory(preset.batch_size)


def test_batch_guard_names_the_batch_that_fits():
    config = XCTFormerConfig(
        seq_len=96, n_channels=200, out_len=96, d_model=8, n_heads=2, e_layers=1, fused_attention=False
    )
    config.check_attention_memory(16)  # the plain path: 0.23 GB a sample
    with pytest.raises(ValueError, match=r"batch of 64 windows needs about 14.9 GB.*Lower batch_size to 42 or less"):
        config.replace(max_attention_bytes=10**10).check_attention_memory(64)


def test_the_fused_path_keeps_no_score_tensor_for_the_batch():
    """2400 tokens, 2 heads, 1 layer: the plain path keeps 5 score tensors a sample and layer,
    the fused path only the mask's 4 copies a layer and four working buffers (one 2400 x 2400
    matrix each), under mixed precision too; the softmax variant runs the plain path."""
    config = XCTFormerConfig(96, 200, 96, d_model=8, n_heads=2, e_layers=1, max_attention_bytes=10**10)
    assert config.fused_path and config.n_tokens == 2400 and config.e_layers == 1
    square = 2 * 2400**2
    fused = (4 * square + 4 * 2400**2) * 4
    assert config.attention_memory_bytes(1) == config.attention_memory_bytes(64) == fused
    plain = config.replace(activation="softmax")
    assert plain.attention_memory_bytes(64) == (4 * square + 64 * 5 * square) * 4
    config.check_attention_memory(64)  # 0.28 GB however large the batch
    with pytest.raises(ValueError, match=r"batch of 64 windows needs about 14.9 GB for full CRAB attention "
                                         r"\(N = 2400 tokens.*Lower batch_size to 42"):  # fmt: skip
        plain.check_attention_memory(64)
    assert not config.replace(activation="softmax").fused_path and not config.replace(decop_k=8).fused_path


def test_largest_full_crab_config_is_weather_imputation():
    config = get_preset("weather", "impute").config()
    assert config.n_tokens == 2688 and config.decop_k is None


def test_auto_decop_k_follows_the_paper_rule():
    assert auto_decop_k(7) is None
    assert auto_decop_k(60) is None
    assert auto_decop_k(61) == 64
    assert auto_decop_k(862, k=192) == 192


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"d_model": 10, "n_heads": 4}, "not divisible by n_heads"),
        ({"patch_len": 200}, "longer than seq_len"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\)"),
        ({"decop_k": 0}, "decop_k must be None"),
        ({"mixing": "both"}, "mixing must be one of"),
        ({"activation": "relu"}, "activation must be one of"),
        ({"seq_len": 0}, "seq_len must be a positive integer"),
        ({"decop_k": 8, "use_mask": False}, "use_mask=False has no effect with DeCoP"),
    ],
)
def test_invalid_config_raises_clear_error(changes, match):
    fields = dict(seq_len=96, n_channels=7, out_len=96)
    fields.update(changes)
    with pytest.raises(ValueError, match=match):
        XCTFormerConfig(**fields)


def test_presets_cover_the_paper_table():
    assert len(list_presets("forecast")) == 7
    assert len(list_presets("impute")) == 6
    assert len(list_presets("anomaly")) == 5
    etth1 = get_preset("etth1", "forecast")
    assert (etth1.batch_size, etth1.learning_rate, etth1.epochs) == (32, 0.001, 10)
    assert get_preset("Electricity", "impute").decop_k == 128
    assert get_preset("ECL").dataset == "ECL"


def test_unknown_preset_errors_name_the_choices():
    with pytest.raises(ValueError, match="Unknown dataset 'foo'.*ETTh1"):
        get_preset("foo")
    with pytest.raises(ValueError, match="no 'impute' preset for Traffic"):
        get_preset("Traffic", "impute")
    with pytest.raises(ValueError, match="Unknown task"):
        get_preset("ETTh1", "classify")
    with pytest.raises(ValueError, match="needs out_len"):
        get_preset("ETTh1").config()


def test_ablation_names():
    base = XCTFormerConfig(seq_len=96, n_channels=7, out_len=96)
    assert base.ablation("vanilla").use_mask is False
    assert base.ablation("vanilla").activation == "softmax"
    assert base.ablation("time").attention_len == base.patch_num
    with pytest.raises(ValueError, match="Unknown ablation"):
        base.ablation("nope")
