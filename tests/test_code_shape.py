"""The package's shape rules that a reader relies on: short functions, one-way imports."""

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


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (never imported at run time)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in ast.walk(child))
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(path: Path, package: str) -> set[str]:
    """The modules ``path`` imports at run time, at the top or inside a function."""
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base) if node.level else node.module or ""
            for alias in node.names:
                module = f"{target}.{alias.name}"
                found.add(module if (PACKAGE.parent / (module.replace(".", "/") + ".py")).exists() else target)
    return found


def test_the_package_has_no_import_circles():
    """Modules depend one way (a circle would hide behind a function-level import)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = {module for module in _imports(path, package) if not name.startswith(module + ".")} - {name}

    def reaches(start: str, goal: str, seen: set) -> bool:
        return any(
            nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen))
            for nxt in graph.get(start, ())
        )

    circles = sorted(name for name in graph if reaches(name, name, set()))
    assert not circles, f"these modules import themselves through others: {circles}"


def test_the_benchmark_scripts_are_short_entry_points_on_the_lab_package():
    """Shared measurement code lives in ``benchmarks.measure``; a script only parses, calls and writes,
    run as ``python -m benchmarks.<script>`` (no ``sys.path`` edits)."""
    lab = PACKAGE.parent / "benchmarks"
    scripts = sorted(lab.glob("*.py"))
    assert len(scripts) > 5 and (lab / "__init__.py").is_file() and (lab / "measure" / "__init__.py").is_file()
    long = [f"{path.name} ({n} lines)" for path in scripts if (n := len(path.read_text().splitlines())) >= 200]
    assert not long, "move shared code into benchmarks/measure/: " + ", ".join(long)
    lab_code = [*scripts, *sorted((lab / "measure").glob("*.py"))]
    assert not [path.name for path in lab_code if "sys.path" in path.read_text()]


def test_the_installed_package_stands_without_the_lab():
    """What a wheel ships imports nothing from ``benchmarks``, reads no path of the repository and
    names no record: the lab imports the package, never the other way."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
        lab_imports = {m for m in _imports(path, package) if m == "benchmarks" or m.startswith("benchmarks.")}
        found += [f"{path.relative_to(PACKAGE)} imports {m}" for m in sorted(lab_imports)]
        found += [f"{path.relative_to(PACKAGE)} names {word}" for word in ("benchmarks/results", '"benchmarks"')
                  if word in text]  # fmt: skip
    assert not found, "; ".join(found)
