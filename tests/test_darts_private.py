"""The private Darts names the package relies on (``xct_estimators._darts_private``), checked on
the installed Darts: a release that renames or reshapes one fails here, naming it."""

import importlib
import inspect
import re
from pathlib import Path

import darts
import pytest
from darts.models.forecasting.torch_forecasting_model import TorchForecastingModel

from xct_estimators import XCTFormerModel, _darts_private

PACKAGE = Path(_darts_private.__file__).parent


def _parameters(function) -> set[str]:
    return set(inspect.signature(function).parameters)


@pytest.mark.parametrize("name, passed", _darts_private.OVERRIDDEN_HOOKS.items(), ids=str)
def test_each_overridden_hook_is_still_darts(name, passed):
    hook = inspect.getattr_static(TorchForecastingModel, name, None)
    assert hook is not None, f"Darts {darts.__version__} has no TorchForecastingModel.{name}"
    if passed is None:
        assert isinstance(hook, property), f"TorchForecastingModel.{name} is no longer a property"
    else:
        missing = set(passed) - _parameters(getattr(TorchForecastingModel, name))
        assert not missing, f"TorchForecastingModel.{name} no longer takes {sorted(missing)}"


@pytest.mark.parametrize("where, passed", _darts_private.CALLED.items(), ids=lambda v: str(v)[:40])
def test_each_called_function_is_still_darts(where, passed):
    module, name = where
    function = getattr(importlib.import_module(module), name, None)
    assert function is not None, f"Darts {darts.__version__} has no {module}.{name}"
    missing = set(passed) - _parameters(function)
    assert not missing, f"{module}.{name} no longer takes {sorted(missing)}"


def test_a_saved_constructor_argument_is_what_untrained_model_rebuilds_from():
    model = XCTFormerModel(input_chunk_length=32, output_chunk_length=4, n_epochs=1)
    _darts_private.set_saved_param(model, "n_epochs", 3)
    assert model.model_params["n_epochs"] == 3 and model.untrained_model().n_epochs == 3


def test_darts_still_names_the_hash_of_its_dataset_files():
    import darts.datasets

    assert re.fullmatch(r"[0-9a-f]{32}", _darts_private.expected_md5(darts.datasets.ETTh1Dataset()))


def test_darts_still_names_the_folder_it_downloads_into():
    import darts.datasets

    assert _darts_private.download_folder(darts.datasets.ETTh1Dataset()).name == "datasets"


def test_no_other_module_uses_a_private_darts_name():
    """Outside the adapter, the package names no private Darts function, module or attribute
    (the overridden hooks are defined, not reached into)."""
    private = re.compile(
        r"from darts[\w.]* import _|darts\.[\w.]*\._\w|\._(model_params|init_trainer|metadata|root_path)\b"
    )
    found = [
        f"{path.relative_to(PACKAGE)}: {match.group(0)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "_darts_private.py"
        for match in private.finditer(path.read_text())
    ]
    assert not found, "move these into xct_estimators/_darts_private.py: " + "; ".join(found)
