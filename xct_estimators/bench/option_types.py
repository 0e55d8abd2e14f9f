"""Value types of ``xct-bench``'s options: each parses one option's text or says, in argparse's
words, what it expected."""

from __future__ import annotations

import argparse

from ..nn.hyperparameters import ARCHITECTURE_PARAMS, architecture_type


def csv(kind):
    def parse(text: str):
        try:
            return [kind(item.strip()) for item in text.split(",") if item.strip()]
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}") from error

    return parse


def positive(kind, what: str):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive {what}, got {text!r}")
        return value

    return parse


def csv_of(choices):
    def parse(text: str):
        items = csv(str)(text)
        unknown = [item for item in items if item not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(choices)}, got {text!r}")
        return items

    return parse


#: Network settings ``--arch`` may override, with their types.
ARCH_KEYS = {name: architecture_type(name) for name in ARCHITECTURE_PARAMS}


def arch(text: str) -> dict:
    out = {}
    for item in csv(str)(text):
        key, _, value = item.partition("=")
        if key not in ARCH_KEYS or not value:
            raise argparse.ArgumentTypeError(
                f"expected KEY=VALUE pairs with KEY one of {', '.join(ARCH_KEYS)}, got {item!r}"
            )
        try:
            out[key] = ARCH_KEYS[key](value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{key} expects a number, got {value!r}") from None
    return out


positive_int = positive(int, "integer")


def csv_ints(text: str) -> list[int]:
    try:
        items = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        items = []
    if not items:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    return items


def csv_positive_ints(text: str) -> list[int]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return [positive_int(item) for item in items]


positive_float = positive(float, "number")
