"""``xct-bench explain``: train (or load) a forecasting model and draw its dependency map."""

from __future__ import annotations

from pathlib import Path

from ..explain import channel_dependencies, dependency_map, lag_dependencies, plot_dependency_map
from .datasets import load_forecast_dataset
from .forecast import build_model, fit_model, prepare
from .report import file_name
from .settings import EXPLAIN_EPOCHS, ExplainSettings

MODELS_DIR = "models"


def run_explain(args: ExplainSettings) -> int:
    from ..forecasting import XCTFormerModel

    output = Path(args.output)
    horizons = args.horizons or [96]
    data = {d: load_forecast_dataset(d, args.data_dir, seed=args.seed) for d in args.dataset}  # all checked first
    for dataset in args.dataset:
        features = args.features or ("MS" if dataset == "synthetic" else "M")
        prepared = prepare(data[dataset], args.seq_len, features)
        for horizon in horizons:
            stem = f"xctformer_{file_name(dataset)}_{horizon}_{args.seed}"
            saved = output / MODELS_DIR / f"{stem}.pt"
            if saved.is_file():
                model = XCTFormerModel.load(str(saved))
                print(f"loaded {saved}")
            else:
                run = dict(seq_len=args.seq_len, epochs=args.epochs or EXPLAIN_EPOCHS, seed=args.seed)
                where = dict(accelerator=args.accelerator, devices=args.devices, work_dir=output / "darts_logs")
                model = build_model("xctformer", dataset, horizon, **run, **where, progress=not args.no_progress)
                seconds = fit_model(model, prepared)
                saved.parent.mkdir(parents=True, exist_ok=True)
                model.save(str(saved))
                print(f"trained in {seconds:.0f} s, saved {saved}")
            dmap = dependency_map(model)
            picture = output / f"dependency_{file_name(dataset)}_{horizon}.png"
            plot_dependency_map(dmap, picture, title=f"XCTFormer {dataset}, horizon {horizon}: learned CRAB mask")
            channels = channel_dependencies(dmap)
            channels.to_csv(output / f"dependency_{file_name(dataset)}_{horizon}_channels.csv")
            lag_dependencies(dmap).to_csv(output / f"dependency_{file_name(dataset)}_{horizon}_lags.csv")
            pairs = channels.stack().sort_values(ascending=False)
            top = ", ".join(f"{q} <- {k} {v:.3f}" for (q, k), v in pairs.head(5).items())
            print(f"{dataset} H={horizon}: strongest channel pairs (query <- key, mean |mask|): {top}")
            print(f"wrote {picture}")
    return 0
