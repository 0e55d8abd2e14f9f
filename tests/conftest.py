import pytest
import torch

# On 2 cores, intra-op threads oversubscribe with pytest and sktime's checks (15x slower).
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
