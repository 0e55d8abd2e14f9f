"""Tiny saves written by the code before the one-home refactor (commit cc9a89d); run from the
repository root: python tests/data/before_refactor/make.py. tests/test_saved_before_refactor.py loads them."""

import pickle

import numpy as np
import pandas as pd
from darts import TimeSeries

from xct_estimators import XCTFormerForecaster, XCTFormerImputer, XCTFormerModel

out = "tests/data/before_refactor/"
t = np.arange(200, dtype=np.float32)
values = np.stack([np.sin(t / 6), np.cos(t / 9), np.sin(t / 4) * 0.5], axis=1).astype(np.float32)
series = TimeSeries.from_values(values, columns=["a", "b", "c"])
model = XCTFormerModel(
    input_chunk_length=24,
    output_chunk_length=8,
    patch_len=8,
    stride=4,
    d_model=8,
    n_heads=1,
    d_ff=16,
    e_layers=1,
    n_epochs=1,
    batch_size=16,
    random_state=0,
    pl_trainer_kwargs={"enable_progress_bar": False, "logger": False, "accelerator": "cpu"},
)
model.fit(series)
model.save(out + "xctformer_model.pt")
np.save(out + "xctformer_model_forecast.npy", model.predict(8, series=series).values())

frame = pd.DataFrame(values.astype(np.float64), columns=["a", "b", "c"])
holes = frame.copy()
holes.iloc[::7, 0] = np.nan
holes.iloc[3::11, 2] = np.nan
imputer = XCTFormerImputer(
    window_length=16,
    patch_len=4,
    stride=2,
    d_model=8,
    n_heads=1,
    d_ff=16,
    e_layers=1,
    n_epochs=1,
    batch_size=16,
    random_state=0,
    accelerator="cpu",
).fit(holes)
pickle.dump(imputer, open(out + "xctformer_imputer.pkl", "wb"))
np.save(out + "xctformer_imputer_transform.npy", imputer.transform(holes).to_numpy())

forecaster = XCTFormerForecaster(
    input_chunk_length=24,
    patch_len=8,
    stride=4,
    d_model=8,
    n_heads=1,
    d_ff=16,
    e_layers=1,
    n_epochs=1,
    batch_size=16,
    random_state=0,
    pl_trainer_kwargs={"accelerator": "cpu"},
).fit(frame, fh=[1, 2, 3])
pickle.dump(forecaster, open(out + "xctformer_forecaster.pkl", "wb"))
np.save(out + "xctformer_forecaster_predict.npy", forecaster.predict().to_numpy())
print("ok")
