"""``xct-bench explain``: train (or load) a forecasting model and draw its dependency map."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from ..explain import channel_dependencies, dependency_map, lag_dependencies, plot_dependency_map
from .datasets import dataset_fingerprint, load_forecast_dataset
from .forecast.protocol import build_model, fit_model, model_settings, prepare
from .forecast_plots import dataset_part
from .runs import write_atomically
from .settings import EXPLAIN_EPOCHS, ExplainSettings

MODELS_DIR = "models"


def model_identity(run: dict) -> str:
    """A saved model's name: what it was trained on and how (dataset and its content, look-back,
    horizon, features, epochs, seed, every network setting), so another run never loads it."""
    digest = hashlib.sha256(json.dumps(run, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"xctformer_{dataset_part(run['dataset'], run['data_sha256'])}_{run['horizon']}_{run['seed']}_{digest}"


def run_explain(args: ExplainSettings) -> int:
    from ..forecasting import XCTFormerModel

    output = Path(args.output)
    horizons = args.horizons or [96]
    fingerprints = {d: dataset_fingerprint(d, args.data_dir) for d in args.dataset}
    data = {d: load_forecast_dataset(d, args.data_dir, seed=args.seed) for d in args.dataset}  # all checked first
    for dataset in args.dataset:
        features = args.features or ("MS" if dataset == "synthetic" else "M")
        prepared = prepare(data[dataset], args.seq_len, features)
        for horizon in horizons:
            training = dict(seq_len=args.seq_len, epochs=args.epochs or EXPLAIN_EPOCHS, seed=args.seed)
            where = dict(accelerator=args.accelerator, devices=args.devices, work_dir=output / "darts_logs")
            model = build_model("xctformer", dataset, horizon, **training, **where, progress=not args.no_progress)
            run = dict(dataset=dataset, data_sha256=fingerprints[dataset], horizon=horizon, features=features)
            run.update(training, settings=model_settings(model))
            saved = output / MODELS_DIR / f"{model_identity(run)}.pt"
            if saved.is_file():
                try:
                    model = XCTFormerModel.load(str(saved))
                except ValueError as error:
                    raise ValueError(
                        f"{saved} is a saved model this command cannot read ({error}). Delete {saved} (and "
                        f"{saved}.ckpt) and rerun: the model is trained and saved again."
                    ) from None
                print(f"loaded {saved}")
            else:
                seconds = fit_model(model, prepared)
                write_atomically(saved, lambda path, model=model: model.save(str(path)), companions=(".ckpt",))
                print(f"trained in {seconds:.0f} s, saved {saved}")
            dmap = dependency_map(model)
            stem = output / f"dependency_{dataset_part(dataset, fingerprints[dataset])}_{horizon}"
            picture = stem.with_name(stem.name + ".png")
            title = f"XCTFormer {dataset}, horizon {horizon}: learned CRAB mask"
            write_atomically(picture, functools.partial(plot_dependency_map, dmap, title=title))
            channels = channel_dependencies(dmap)
            write_atomically(stem.with_name(stem.name + "_channels.csv"), channels.to_csv)
            write_atomically(stem.with_name(stem.name + "_lags.csv"), lag_dependencies(dmap).to_csv)
            pairs = channels.stack().sort_values(ascending=False)
            top = ", ".join(f"{q} <- {k} {v:.3f}" for (q, k), v in pairs.head(5).items())
            print(f"{dataset} H={horizon}: strongest channel pairs (query <- key, mean |mask|): {top}")
            print(f"wrote {picture}")
    return 0
