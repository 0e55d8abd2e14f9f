"""The ``xct-bench`` option reference (docs/xct-bench-options.md), built from the parser itself."""

from __future__ import annotations

import argparse

from benchmarks.measure import compact_table
from xct_estimators.bench.parser import build_parser


def _option_names(action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.metavar or action.dest}`"
    if action.choices and not isinstance(action.choices, dict):
        names += " {" + ",".join(map(str, action.choices)) + "}"
    return names


def option_reference() -> str:
    """Every subcommand and option with its help, as Markdown (the benchmarks guide's reference)."""
    (subcommands,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subcommands._choices_actions}
    parts = []
    for name, sub in subcommands.choices.items():
        formatter = sub._get_formatter()
        rows = [
            [_option_names(action), formatter._expand_help(action).replace("|", "\\|").replace("\n", " ")]
            for action in sub._actions
            if not isinstance(action, argparse._HelpAction)
        ]
        models = f"\n```\n{sub.epilog}\n```\n" if sub.epilog else ""
        table = compact_table(["option", "meaning"], rows)
        parts.append(f"#### `xct-bench {name}`\n\n{helps[name]}.\n\n{table}{models}")
    return "\n".join(parts)
