import os
from pathlib import Path

import pytest
import torch

# Without a GPU, the Triton kernels' tests run under Triton's interpreter, which must be chosen
# before anything (torch.compile among them) imports Triton.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# On 2 cores, intra-op threads oversubscribe with pytest and sktime's checks (15x slower).
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


#: The benchmark data: wherever XCT_DATA_DIR points, else the repository's sibling ../shared/data.
SHARED_DATA = Path(os.environ.get("XCT_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture
def shared_data() -> Path:
    """The benchmark data folder; the test is skipped, with the reason, where it is absent."""
    if not (SHARED_DATA / "ETT-small").is_dir():
        pytest.skip(f"benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def benchmark_script():
    """Imports ``benchmarks.<name>`` afresh (a test's changes to a module stay with that test)."""
    import importlib

    def load(name: str):
        return importlib.reload(importlib.import_module(f"benchmarks.{name}"))

    return load
