"""What Adam's fused implementation and the hashed activation dropout save per training step.

Four variants of each network's training step, interleaved in one run (so machine noise hits
them alike): the plain or the fused CRAB attention, each with the library's training parts
(fused Adam, hashed dropout: ``xct_estimators/_optim.py``, ``xct_estimators/nn/dropout.py``) or
with torch's defaults (for-loop Adam, torch's Bernoulli dropout), the library before it took
them. Medians in ms, and the fused/plain ratio under each; first, the parts alone: one Adam
update of the ETTh1 imputation network (fused, foreach, for-loop) and one dropout on 917,504
entries (hashed, torch's). A benchmark that prints numbers.

    python -m benchmarks.training_parts [--networks ETTh1-impute,ETTh1] [--attention plain,fused]
                                        [--repeats 12] [--threads 2]
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.measure import cpu_steps
from xct_estimators.nn import dropout as hashed


def with_torch_dropout(step):
    """``step`` with every activation dropout on torch's kernel."""
    return cpu_steps.with_attribute(step, hashed, "hashed_dropout_applies", lambda x: False)


def parts_alone(repeats: int) -> dict:
    """Milliseconds for one Adam update of the ETTh1 imputation network per implementation, and
    for one dropout on its FFN activations (8 x 896 tokens x 128) hashed and torch's."""
    from xct_estimators.nn import XCTFormerNet, get_preset

    torch.manual_seed(0)
    net = XCTFormerNet(get_preset("ETTh1", "impute").config())
    for p in net.parameters():
        p.grad = torch.randn_like(p)
    kinds = {"fused": {"fused": True}, "foreach": {"foreach": True}, "for-loop": {"foreach": False}}
    steps = {f"Adam {k}": torch.optim.Adam(net.parameters(), lr=1e-3, **kw).step for k, kw in kinds.items()}
    x = torch.randn(8 * 896 * 128)
    steps["dropout hashed"] = lambda: hashed.dropout(x, 0.1, True)
    steps["dropout torch"] = with_torch_dropout(lambda: hashed.dropout(x, 0.1, True))
    return cpu_steps.interleaved_ms(steps, repeats)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="ETTh1-impute,ETTh1")
    parser.add_argument("--attention", default="plain,fused", help="which attention paths to time")
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    protocol = "median ms of training steps (forward, backward, Adam), variants interleaved in one process"
    settings = {"torch": torch.__version__, "threads": args.threads, "repeats": args.repeats, "protocol": protocol}
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats}, variants interleaved")
    alone = parts_alone(max(args.repeats, 5))
    print("parts alone (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in alone.items()))
    print(f"{'network':<13} {'attention':<9} {'library parts':>13} {'torch parts':>11} {'saved':>6}")
    attentions = args.attention.split(",")
    rows = []
    for name in args.networks.split(","):
        steps = {}
        for attention in attentions:
            fused = attention == "fused"
            _, batch, steps[(attention, "library")], _ = cpu_steps.build(name, fused, adam="library")
            steps[(attention, "torch")] = with_torch_dropout(cpu_steps.build(name, fused, adam="for-loop")[2])
        ms = cpu_steps.interleaved_ms(steps, args.repeats)
        for attention in attentions:
            library, torch_parts = ms[(attention, "library")], ms[(attention, "torch")]
            print(f"{name:<13} {attention:<9} {library:>13.1f} {torch_parts:>11.1f} {torch_parts - library:>6.1f}")
        ratios = {}
        if set(attentions) == {"plain", "fused"}:
            ratios = {parts: ms[("fused", parts)] / ms[("plain", parts)] for parts in ("library", "torch")}
            print(f"{'':<13} fused / plain: {ratios['library']:.3f} (library's parts), {ratios['torch']:.3f} (torch's)")
        ms = {f"{a} {p}": v for (a, p), v in ms.items()}
        rows.append({**settings, "network": name, "batch": batch, "ms": ms, "ratio": ratios})
    return [{**settings, "parts_alone": alone}, *rows]


if __name__ == "__main__":
    main()
