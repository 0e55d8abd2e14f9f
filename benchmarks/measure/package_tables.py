"""docs tables read from the package itself (no record): estimators' parameters, the ablation
models, the covariate suite's families."""

from __future__ import annotations

from benchmarks.measure import compact_table


def ablation_models() -> str:
    """The ablation models of ``xct-bench`` and the switches each turns, read from the package."""
    from xct_estimators.bench.models import ABLATION_MODELS
    from xct_estimators.nn.hyperparameters import ABLATIONS

    rows = []
    for model, name in ABLATION_MODELS.items():
        switches = ", ".join(f"`{key}={value!r}`" for key, value in ABLATIONS[name].items())
        rows.append([f"`{model}`", f"`config.ablation({name!r})`", switches])
    return compact_table(["`--models`", "network", "changes from the preset"], rows)


def estimator_parameters() -> str:
    """Each estimator's constructor parameters and defaults, read from the signatures (Darts'
    own training parameters for ``XCTFormerModel``), so differences between them are visible."""
    import inspect

    from darts.models.forecasting.torch_forecasting_model import TorchForecastingModel

    from xct_estimators import ReconstructionEngine, XCTFormerModel, XCTFormerScorer
    from xct_estimators.sktime import XCTFormerAnomalyDetector, XCTFormerForecaster, XCTFormerImputer

    classes = (XCTFormerModel, XCTFormerForecaster, XCTFormerImputer, XCTFormerAnomalyDetector, XCTFormerScorer)
    classes += (ReconstructionEngine,)
    darts_training = ("batch_size", "n_epochs", "random_state", "pl_trainer_kwargs")

    def defaults(cls) -> dict:
        params = dict(inspect.signature(cls.__init__).parameters)
        if cls is XCTFormerModel:
            darts = inspect.signature(TorchForecastingModel.__init__).parameters
            params.update({name: darts[name] for name in darts_training})
        return {name: p.default for name, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD and name != "self"}

    table = {cls.__name__: defaults(cls) for cls in classes}
    names: list[str] = []
    for cls in (ReconstructionEngine, *classes):
        names += [name for name in table[cls.__name__] if name not in names]

    def cell(cls, name: str) -> str:
        if name not in table[cls.__name__]:
            return "-"
        value = table[cls.__name__][name]
        return "required" if value is inspect.Parameter.empty else f"`{value!r}`"

    rows = [[f"`{name}`", *(cell(cls, name) for cls in classes)] for name in names]
    return compact_table(["parameter", *(f"`{cls.__name__}`" for cls in classes)], rows)


def covariate_families() -> str:
    """The covariate suite's families and their effects, read from the package."""
    from xct_estimators.bench.covariate_suite import FAMILIES, PREFIX

    return compact_table(
        ["`--dataset`", "covariates and effect"], [[f"`{PREFIX}{n}`", f.formula] for n, f in FAMILIES.items()]
    )
