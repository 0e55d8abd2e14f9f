"""The package's shape rules that a reader relies on: short functions."""

import ast
from pathlib import Path

import xct_estimators

PACKAGE = Path(xct_estimators.__file__).parent
LONGEST_FUNCTION = 60


def _body_lines(function: ast.FunctionDef) -> int:
    """Lines of ``function`` from its first statement after the docstring to its end."""
    body = function.body
    first = (
        body[1]
        if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        else body[0]
    )
    return function.end_lineno - first.lineno + 1


def test_no_function_is_longer_than_sixty_lines_docstrings_aside():
    long = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({_body_lines(node)} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > LONGEST_FUNCTION
    ]
    assert not long, "split these functions: " + "; ".join(long)
