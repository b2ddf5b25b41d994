"""The package's architecture, checked from its source (docs/ARCHITECTURE.md).

Every ``.py`` file under ``fermion/`` is parsed with :mod:`ast` (nothing is imported), and
every import statement counts wherever it sits: at the top, inside a function (a lazy
import) or under ``if TYPE_CHECKING:``. A type-only import is still a dependency of the
design, so it may not close a cycle either. ``importlib.import_module("...")`` and
``__import__("...")`` with a literal name count as imports too.

The rules:

1. **No import cycles** between modules under ``fermion/``. ``from fermion.a import b``
   depends on the module ``fermion.a.b`` when that is a module, else on ``fermion.a``
   (its ``__init__``); importing a submodule does not count as importing its parent
   package's ``__init__``.
2. **Layers point one way**: ``fermion.errors``, ``fermion.version``, ``fermion.extras``
   and ``fermion.deprecation`` (0) < ``fermion.io`` (1) < ``fermion.format`` (2) <
   ``fermion.table`` (3) < ``fermion.spark`` and ``fermion.quality`` (4) < the entry
   points ``fermion`` (the package ``__init__``), ``fermion.cli``, ``fermion.demo`` (5).
   A module may import its own layer and the layers below, never one above. A module with
   no layer fails the test: add it to ``LAYERS``.
3. **Third-party boundaries**: only ``fermion.spark`` imports ``pyspark``; nothing under
   ``fermion/`` imports ``jobs`` or ``airflow_dags``.
4. **No reading another module's private attributes.** A private name starts with ``_``
   and is not a dunder (``__x__``). Flagged:

   - ``from fermion.x import _name`` (a private function, class or constant of ``x``);
   - importing a private module (``fermion.table._datafile``) from outside the package
     that holds it (siblings and their subpackages may: it is package-private);
   - ``obj._name`` where ``obj`` is not ``self``/``cls`` and ``_name`` is a private name
     that some *other* fermion module defines (as ``self._name = ...``, a class-body
     name, or a module-level name) and the accessing module does not define itself.

   Private names that no fermion module defines belong to other libraries' objects
   (``np._NoValue``, ``schema._export_to_c``, a namedtuple's ``_replace``) and are out of
   scope, as is any attribute of a name bound by a non-fermion import (``sys._getframe``).
   A module reading its own objects' private state (``other._x`` in ``__eq__``) is fine.
   A name defined privately by two modules cannot be told apart statically: such an
   access is allowed (rare; the test errs on the side of no false alarms).

5. **The file format's stages point one way** (docs/ARCHITECTURE.md, "fermion/format"):
   the shared top-level modules of ``fermion.format`` (options, pools, Arrow streams,
   CRC-32, the compiled kernels) (0) < ``fermion.format.metadata`` (1) < ``fermion.format.encoding``
   (2) < ``fermion.format.read`` and ``fermion.format.write`` (3) <
   ``fermion.format.convert`` (4) < the package ``__init__`` ``fermion.format`` (5). A
   module may import its own subpackage and the stages below. **Read and write never
   import each other**: they share a stage, and an import between two parts of one stage
   fails like one against the order. So neither depends on the other even indirectly.
   And the map of ``fermion/format/`` in docs/ARCHITECTURE.md lists exactly its files.

6. **Beside the package**: ``benchmarks/`` has no import cycle either (rule 1 applied to its
   modules), and ``airflow_dags/`` touches no private attribute (``x._name``) at all: the
   Airflow provider's private state can change in any release.

7. **Encodings are dispatched through the registry**: an encoding id is compared with an
   ``Encoding`` member (``==``, ``!=``, ``is``, ``is not``, or ``in`` / ``not in`` a
   literal tuple, list or set of them) only in the registry module
   (``fermion.format.encoding.registry``); every other module looks the id up in
   ``ENCODINGS`` and asks its entry.

8. **One way to open a table**: only modules under ``fermion.table`` call
   ``TableStorage(...)``; everyone else opens a table through its
   :class:`~fermion.table.ref.TableRef` (``ref.open()``), which carries the filesystem
   options and the manifest store to any process (docs/ARCHITECTURE.md, "The table handle").

9. **The wire format stays in the table's codec**: only the modules in
   ``PROTO_ALLOWED`` (each with its reason) import the generated protobuf modules
   ``fermion.table.proto.*``; everyone else works with the domain model
   (:mod:`fermion.table.domain`: ``Fragment``, ``DataFile``) and converts through
   :mod:`fermion.table.codec` (docs/ARCHITECTURE.md, "Domain model and wire format").
   ``PROTO_NOT_YET_MOVED`` lists the modules that still read manifest messages directly;
   it may only shrink: a module listed there that no longer imports the protobuf modules
   fails the test until it is taken off the list.

10. **Modules stay small**: a Python module under ``fermion/`` (not generated) has at
    most ``MAX_MODULE_LINES`` lines (about 800) unless ``LONG_MODULES`` names it with the
    reason, and
    docs/ARCHITECTURE.md ("Long modules") names the same modules. The list may only
    shrink: a listed module that is short again fails the test until it is unlisted.

Rules 9 and 10 are the only ones with an allowlist; every other rule holds for the whole
package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "fermion"
BENCHMARKS_DIR = PACKAGE_DIR.parent / "benchmarks"
DAGS_DIR = PACKAGE_DIR.parent / "airflow_dags"
GENERATED_SUFFIX = "_pb2.py"  # protobuf output: imports checked, attribute rule skipped

LAYERS: dict[str, int] = {
    "fermion.errors": 0,
    "fermion.version": 0,
    "fermion.extras": 0,
    "fermion.deprecation": 0,
    "fermion.io": 1,
    "fermion.format": 2,
    "fermion.table": 3,
    "fermion.spark": 4,
    "fermion.quality": 4,
    "fermion": 5,
    "fermion.cli": 5,
    "fermion.demo": 5,
}
FORMAT = "fermion.format"
FORMAT_STAGES: dict[str, int] = {  # rule 5; any other module of fermion.format is shared
    "metadata": 1,
    "encoding": 2,
    "read": 3,
    "write": 3,
    "convert": 4,
}
ENCODING_REGISTRY = ("fermion.format.encoding.registry",)  # rule 7
PYSPARK_ALLOWED = "fermion.spark"
FORBIDDEN_TOP_LEVEL = ("jobs", "airflow_dags")


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool
    imports: list[tuple[str, int]] = field(default_factory=list)  # (target, line)
    defined_private: set[str] = field(default_factory=set)
    external_names: set[str] = field(default_factory=set)  # bound by non-fermion imports


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve_relative(module: Module, level: int, target: str | None) -> str:
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{target}" if target else package


def _defined_private_names(tree: ast.Module) -> set[str]:
    """Private names a module defines: module level, class bodies, ``self._x = ...``."""
    out: set[str] = set()

    def add_target(target: ast.expr) -> None:
        if isinstance(target, ast.Name) and _is_private(target.id):
            out.add(target.id)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                add_target(elt)

    def scan_body(body: list[ast.stmt]) -> None:  # module or class body
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if _is_private(stmt.name):
                    out.add(stmt.name)
                if isinstance(stmt, ast.ClassDef):
                    scan_body(stmt.body)
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    add_target(t)
            elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
                add_target(stmt.target)
            elif isinstance(stmt, ast.If | ast.Try):
                scan_body(stmt.body)
                scan_body(stmt.orelse)

    scan_body(tree.body)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
            and _is_private(node.attr)
        ):
            out.add(node.attr)
    return out


def _load_modules(package_dir: Path = PACKAGE_DIR) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted(package_dir.rglob("*.py")):
        name, is_package = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        modules[name] = Module(name, path, tree, is_package)
    for path in sorted(package_dir.rglob("*.c")):  # compiled extension modules (setup.py):
        name = ".".join(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        modules[name] = Module(name, path, ast.parse(""), False)  # leaves: no fermion imports
    for module in modules.values():
        _collect_imports(module, modules)
        module.defined_private = _defined_private_names(module.tree)
    return modules


def _internal(target: str, modules: dict[str, Module]) -> str | None:
    """The fermion module a dotted import target lands on (longest known prefix)."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = ".".join(parts[:cut])
        if candidate in modules:
            return candidate
    return None


def _collect_imports(module: Module, modules: dict[str, Module]) -> None:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module.imports.append((alias.name, node.lineno))
                if not alias.name.startswith("fermion"):
                    module.external_names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                module.imports.append((sub if sub in modules else base, node.lineno))
                if not (base == "fermion" or base.startswith("fermion.")):
                    module.external_names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Call):
            func = node.func
            dynamic = (isinstance(func, ast.Name) and func.id == "__import__") or (
                isinstance(func, ast.Attribute)
                and func.attr == "import_module"
                and isinstance(func.value, ast.Name)
                and func.value.id == "importlib"
            )
            if (
                dynamic
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                module.imports.append((node.args[0].value, node.lineno))


MODULES = _load_modules()


def _graph(modules: dict[str, Module] | None = None) -> dict[str, set[str]]:
    modules = MODULES if modules is None else modules
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for target, _ in module.imports:
            dep = _internal(target, modules)
            if dep is not None and dep != module.name:
                graph[module.name].add(dep)
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def _cycle_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete cycle through the component's first module (for the message)."""
    members = set(component)
    start = component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(parents[chain[-1]])
                    return [*reversed(chain), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return component


def _layer(name: str) -> int | None:
    """The layer of a module: its own entry or its closest package's (the root package
    ``fermion`` counts only for its ``__init__``, so a new subpackage needs an entry)."""
    parts = name.split(".")
    for cut in range(len(parts), 1 if len(parts) > 1 else 0, -1):
        layer = LAYERS.get(".".join(parts[:cut]))
        if layer is not None:
            return layer
    return None


def _private_accesses(module: Module) -> Iterator[tuple[str, int]]:
    """(private name, line) of every access to another module's private attribute."""
    defined_elsewhere: set[str] = set()
    for other in MODULES.values():
        if other.name != module.name:
            defined_elsewhere |= other.defined_private
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, node.level, node.module)
                if node.level
                else node.module or ""
            )
            if _internal(base, MODULES) is None:
                continue
            for alias in node.names:
                if _is_private(alias.name) and f"{base}.{alias.name}" not in MODULES:
                    yield alias.name, node.lineno
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            root = node.value
            if isinstance(root, ast.Name) and root.id in ("self", "cls"):
                continue
            while isinstance(root, ast.Attribute | ast.Call | ast.Subscript):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id in module.external_names:
                continue
            if node.attr in module.defined_private or node.attr not in defined_elsewhere:
                continue
            yield node.attr, node.lineno


def _private_module_imports(module: Module) -> Iterator[tuple[str, int]]:
    """Imports of a private module from outside the package that holds it."""
    for target, line in module.imports:
        dep = _internal(target, MODULES)
        if dep is None:
            continue
        parts = dep.split(".")
        for k, part in enumerate(parts):
            if _is_private(part):
                package = ".".join(parts[:k])
                if not (module.name == package or module.name.startswith(package + ".")):
                    yield dep, line
                break


def _where(module: Module, line: int) -> str:
    return f"{module.path.relative_to(PACKAGE_DIR.parent)}:{line}"


def test_modules_found() -> None:
    assert "fermion.format.read.reader" in MODULES
    assert "fermion.table.dataset" in MODULES
    assert sum(len(m.imports) for m in MODULES.values()) > 100


def test_no_import_cycles() -> None:
    graph = _graph()
    messages = [
        " -> ".join(_cycle_path(graph, c)) + f"  (modules in the cycle: {', '.join(c)})"
        for c in _strongly_connected(graph)
    ]
    assert not messages, "import cycles:\n" + "\n".join(messages)


def test_no_import_cycles_in_benchmarks() -> None:
    """The same rule for ``benchmarks/`` (``make bench``): its modules, lazy imports
    included, form no cycle either (run -> worker -> spark_bench -> run was one)."""
    modules = _load_modules(BENCHMARKS_DIR)
    assert "benchmarks.run" in modules and "benchmarks.spark_bench" in modules
    graph = _graph(modules)
    messages = [" -> ".join(_cycle_path(graph, c)) for c in _strongly_connected(graph)]
    assert not messages, "import cycles in benchmarks/:\n" + "\n".join(messages)


def test_the_dags_touch_no_private_attribute() -> None:
    """``airflow_dags/`` uses its providers through their public API only: no ``x._name``
    anywhere (an Airflow provider may change its private state in any release)."""
    bad = []
    for path in sorted(DAGS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                bad.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not bad, "private attributes in airflow_dags/:\n" + "\n".join(bad)


def test_every_module_has_a_layer() -> None:
    missing = sorted(name for name in MODULES if _layer(name) is None)
    assert not missing, f"modules with no layer (add them to LAYERS): {missing}"


def _layer_violations(module: Module) -> Iterator[str]:
    mine = _layer(module.name)
    for target, line in module.imports:
        dep = _internal(target, MODULES)
        theirs = None if dep is None else _layer(dep)
        if mine is not None and theirs is not None and theirs > mine:
            where = _where(module, line)
            yield f"{where}: {module.name} (layer {mine}) imports {dep} (layer {theirs})"


def _format_part(name: str) -> tuple[str, int] | None:
    """The part of ``fermion.format`` a module belongs to and its stage (rule 5), None
    outside the package: a subpackage of :data:`FORMAT_STAGES`, the shared top-level
    modules (stage 0) or the package ``__init__`` (stage 5)."""
    if name == FORMAT:
        return FORMAT, 5
    if not name.startswith(FORMAT + "."):
        return None
    sub = name.split(".")[2]
    if sub in FORMAT_STAGES:
        return f"{FORMAT}.{sub}", FORMAT_STAGES[sub]
    return f"{FORMAT} (shared)", 0


def _format_stage_violations(module: Module) -> Iterator[str]:
    mine = _format_part(module.name)
    if mine is None:
        return
    for target, line in module.imports:
        dep = _internal(target, MODULES)
        theirs = None if dep is None else _format_part(dep)
        if theirs is None or theirs[0] == mine[0]:
            continue
        if theirs[1] > mine[1]:
            yield (
                f"{_where(module, line)}: {module.name} ({mine[0]}, stage {mine[1]}) imports "
                f"{dep} ({theirs[0]}, stage {theirs[1]})"
            )
        elif theirs[1] == mine[1]:
            yield (
                f"{_where(module, line)}: {module.name} imports {dep}: {mine[0]} and "
                f"{theirs[0]} never import each other"
            )


def _boundary_violations(module: Module) -> Iterator[str]:
    in_spark = module.name == PYSPARK_ALLOWED or module.name.startswith(PYSPARK_ALLOWED + ".")
    for target, line in module.imports:
        top = target.split(".")[0]
        if top == "pyspark" and not in_spark:
            yield f"{_where(module, line)}: imports pyspark outside {PYSPARK_ALLOWED}"
        if top in FORBIDDEN_TOP_LEVEL:
            yield f"{_where(module, line)}: imports {target}"


def test_layers_point_one_way() -> None:
    bad = [msg for module in MODULES.values() for msg in _layer_violations(module)]
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_format_stages_point_one_way_and_read_write_apart() -> None:
    assert {_format_part(n) for n in MODULES if n.startswith(FORMAT + ".read.")} == {
        (f"{FORMAT}.read", 3)
    }
    bad = [msg for module in MODULES.values() for msg in _format_stage_violations(module)]
    assert not bad, "imports against the format's stages:\n" + "\n".join(bad)


ARCHITECTURE_DOC = PACKAGE_DIR.parent / "docs" / "ARCHITECTURE.md"


def _documented_format_files() -> set[str]:
    """The files the map of ``fermion/format/`` in docs/ARCHITECTURE.md lists (its first
    code block starting ``fermion/format/``; two spaces of indent per folder level)."""
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    block = text.split("```\nfermion/format/\n", 1)[1].split("```", 1)[0]
    folders: list[str] = ["fermion/format"]
    out: set[str] = set()
    for line in block.splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        del folders[depth:]
        if name.endswith("/"):
            folders.append(folders[-1] + "/" + name.rstrip("/"))
        else:
            out.add(folders[-1] + "/" + name)
    return out


def test_the_documented_format_map_matches_the_tree() -> None:
    format_dir = PACKAGE_DIR / "format"
    actual = {
        str(p.relative_to(PACKAGE_DIR.parent))
        for p in [*format_dir.rglob("*.py"), *format_dir.rglob("*.c")]
    }
    documented = _documented_format_files()
    assert documented == actual, (
        f"docs/ARCHITECTURE.md's map of fermion/format/ lists {sorted(documented - actual)} "
        f"that do not exist and misses {sorted(actual - documented)}"
    )


def test_third_party_boundaries() -> None:
    bad = [msg for module in MODULES.values() for msg in _boundary_violations(module)]
    assert not bad, "\n".join(bad)


def test_no_private_access_across_modules() -> None:
    bad = []
    for module in MODULES.values():
        if module.path.name.endswith(GENERATED_SUFFIX):
            continue
        for name, line in _private_accesses(module):
            bad.append(f"{_where(module, line)}: reads another module's {name}")
        for dep, line in _private_module_imports(module):
            bad.append(f"{_where(module, line)}: imports private module {dep}")
    assert not bad, "private attributes used across modules:\n" + "\n".join(bad)


# -- the checker itself, on small sources --------------------------------------------------


def _scratch(tmp_sources: dict[str, str]) -> dict[str, Module]:
    out: dict[str, Module] = {}
    for name, source in tmp_sources.items():
        path = PACKAGE_DIR.parent / (name.replace(".", "/") + ".py")
        out[name] = Module(name, path, ast.parse(source), is_package=False)
    return out


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from fermion.x import reader\nreader._cache\n", ["_cache"]),
        ("def f(r):\n    return r._cache.get(1)\n", ["_cache"]),
        ("def f(r):\n    return r.meta._cache\n", ["_cache"]),
        ("class A:\n    def f(self):\n        return self._cache\n", []),
        ("class A:\n    def f(self):\n        return self._inner._cache\n", ["_cache"]),
        ("import numpy as np\nnp._cache\n", []),  # another library's object
        ("def f(t):\n    return t._replace(a=1)\n", []),  # defined by no fermion module
        ("_cache = {}\ndef f(o):\n    return o._cache\n", []),  # the module's own name
        ("from fermion.x import _helper\n", ["_helper"]),
        ("x = a.__class__\n", []),  # dunder
    ],
)
def test_private_rule(source: str, expected: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _scratch(
        {
            "fermion.x": "class R:\n    def __init__(self):\n        self._cache = {}\n"
            "def _helper():\n    pass\n",
            "fermion.y": source,
        }
    )
    for module in fake.values():
        module.defined_private = _defined_private_names(module.tree)
    for module in fake.values():
        _collect_imports(module, fake)
    monkeypatch.setattr(f"{__name__}.MODULES", fake)
    assert [name for name, _ in _private_accesses(fake["fermion.y"])] == expected


def _is_encoding_member(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Encoding"
    )


def _encoding_dispatch(tree: ast.Module) -> list[int]:
    """Lines comparing a value with an ``Encoding`` member (rule 7)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                if _is_encoding_member(right) or _is_encoding_member(node.left):
                    lines.append(node.lineno)
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(
                right, ast.Tuple | ast.List | ast.Set
            ):
                if any(_is_encoding_member(e) for e in right.elts):
                    lines.append(node.lineno)
    return lines


def test_encodings_are_dispatched_through_the_registry() -> None:
    bad = [
        f"{_where(module, line)}: compares an encoding id; ask ENCODINGS[...] instead"
        for name, module in sorted(MODULES.items())
        if name not in ENCODING_REGISTRY
        for line in _encoding_dispatch(module.tree)
    ]
    assert not bad, "\n".join(bad)
    assert all(name in MODULES for name in ENCODING_REGISTRY)


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("if enc == Encoding.FOR:\n    pass\n", True),
        ("x = Encoding.PLAIN != enc\n", True),
        ("x = enc is Encoding.DELTA\n", True),
        ("x = enc not in (Encoding.PLAIN, Encoding.DERIVED)\n", True),
        ("x = ENCODINGS[enc].plain\n", False),
        ("x = {Encoding.FOR: 1}[enc]\n", False),
        ("x = enc == Compression.ZSTD\n", False),
    ],
)
def test_encoding_dispatch_rule(source: str, flagged: bool) -> None:
    assert bool(_encoding_dispatch(ast.parse(source))) == flagged


def test_cycle_detection_and_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    components = _strongly_connected(graph)
    assert components == [["a", "b", "c"]]
    assert _cycle_path(graph, components[0]) == ["a", "b", "c", "a"]


def test_lazy_and_type_checking_imports_count() -> None:
    fake = _scratch(
        {
            "fermion.p": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from fermion.q import Q\n",
            "fermion.q": "def f():\n    from fermion.p import g\n    import importlib\n"
            "    importlib.import_module('pyspark.sql')\n",
        }
    )
    for module in fake.values():
        _collect_imports(module, fake)
    assert ("fermion.q", 3) in fake["fermion.p"].imports
    assert [t for t, _ in fake["fermion.q"].imports] == ["fermion.p", "importlib", "pyspark.sql"]


def test_layer_and_boundary_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _scratch(
        {
            "fermion.io.low": "from fermion.table.high import x\nimport pyspark\n",
            "fermion.table.high": "from fermion.io.low import y\nimport jobs.ingest\n",
            "fermion.table._hidden": "",
            "fermion.spark.ds": "from pyspark.sql import SparkSession\n"
            "from fermion.table import _hidden\n",
        }
    )
    for module in fake.values():
        _collect_imports(module, fake)
    monkeypatch.setattr(f"{__name__}.MODULES", fake)
    assert [m.split(": ", 1)[1] for m in _layer_violations(fake["fermion.io.low"])] == [
        "fermion.io.low (layer 1) imports fermion.table.high (layer 3)"
    ]
    assert list(_layer_violations(fake["fermion.table.high"])) == []
    assert [m.split(": ", 1)[1] for m in _boundary_violations(fake["fermion.io.low"])] == [
        "imports pyspark outside fermion.spark"
    ]
    assert [m.split(": ", 1)[1] for m in _boundary_violations(fake["fermion.table.high"])] == [
        "imports jobs.ingest"
    ]
    assert list(_boundary_violations(fake["fermion.spark.ds"])) == []
    assert (_layer("fermion"), _layer("fermion.cli.app"), _layer("fermion.newpkg.x")) == (
        5,
        5,
        None,
    )
    assert list(_private_module_imports(fake["fermion.spark.ds"])) == [("fermion.table._hidden", 2)]
    assert _strongly_connected(_graph()) == [["fermion.io.low", "fermion.table.high"]]


def test_format_stage_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _scratch(
        {
            "fermion.format.read.r": "from fermion.format.write.w import x\n"
            "from fermion.format.encoding.e import y\nfrom fermion.format.read.p import z\n",
            "fermion.format.read.p": "",
            "fermion.format.write.w": "from fermion.format.metadata.m import y\n"
            "from fermion.format import options\n",
            "fermion.format.encoding.e": "from fermion.format.read import p\n",
            "fermion.format.metadata.m": "from fermion.format.encoding.e import y\n",
            "fermion.format.options": "from fermion.format.metadata.m import y\n",
            "fermion.format.convert.c": "from fermion.format.read.r import a\n"
            "from fermion.format.write.w import b\n",
        }
    )
    for module in fake.values():
        _collect_imports(module, fake)
    monkeypatch.setattr(f"{__name__}.MODULES", fake)
    found = {
        name: [m.split(": ", 1)[1] for m in _format_stage_violations(module)]
        for name, module in fake.items()
    }
    assert found == {
        "fermion.format.read.r": [
            "fermion.format.read.r imports fermion.format.write.w: fermion.format.read and "
            "fermion.format.write never import each other"
        ],
        "fermion.format.read.p": [],
        "fermion.format.write.w": [],
        "fermion.format.encoding.e": [
            "fermion.format.encoding.e (fermion.format.encoding, stage 2) imports "
            "fermion.format.read.p (fermion.format.read, stage 3)"
        ],
        "fermion.format.metadata.m": [
            "fermion.format.metadata.m (fermion.format.metadata, stage 1) imports "
            "fermion.format.encoding.e (fermion.format.encoding, stage 2)"
        ],
        "fermion.format.options": [
            "fermion.format.options (fermion.format (shared), stage 0) imports "
            "fermion.format.metadata.m (fermion.format.metadata, stage 1)"
        ],
        "fermion.format.convert.c": [],
    }


def test_import_fermion_leaves_pandas_and_pyarrow_dataset_unloaded() -> None:
    # Both load lazily where used: pyarrow.dataset pulls in pandas, about half a second
    # at every CLI start and in every Spark Python worker.
    probe = "import sys, fermion; print(sorted({'pandas', 'pyarrow.dataset'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


TABLE_STORAGE_OWNER = "fermion.table"  # rule 8


def _table_storage_calls(tree: ast.AST) -> list[int]:
    """Lines of ``TableStorage(...)`` / ``x.TableStorage(...)`` calls."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "TableStorage")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "TableStorage")
        )
    ]


def test_only_the_table_layer_builds_table_storage() -> None:
    bad = [
        f"{module.path}:{line}: TableStorage(...) outside fermion.table: open a TableRef"
        for module in MODULES.values()
        if not (module.name == TABLE_STORAGE_OWNER or module.name.startswith("fermion.table."))
        for line in _table_storage_calls(module.tree)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("from fermion.table.storage import TableStorage\ns = TableStorage(uri)\n", [2]),
        ("import fermion.table.storage as st\n\nst.TableStorage(u, manifest_store=m)\n", [3]),
        ("ref.open()\nx = TableStorage\n", []),  # a reference, not a call
    ],
)
def test_table_storage_rule(source: str, lines: list[int]) -> None:
    assert _table_storage_calls(ast.parse(source)) == lines


PROTO_PACKAGE = "fermion.table.proto"  # rule 9
#: Modules that may import the generated protobuf modules, and why.
PROTO_ALLOWED: dict[str, str] = {
    "fermion.table.codec": "pb <-> domain conversions (fragments, schemas, versions)",
    "fermion.table.framing": "frames manifest/transaction files around their messages",
    "fermion.table.versions": "reads and writes the manifest and transaction files",
    "fermion.table.transition": "applies a transaction to a manifest message",
    "fermion.table.operations": "operations are transaction messages (the package, all of it)",
    "fermion.table.deletions": "deletion files: the DeletionFile message's encodings",
    "fermion.table.row_ids": "row ids: the RowIdSequence message's encoding",
    "fermion.table.schema": "TableSchema <-> the manifest Schema message",
    "fermion.table.stats": "builds the FieldStats messages stored per fragment",
    "fermion.table.indices.model": "index metadata: the IndexMetadata message",
}
#: Modules that still read manifest messages directly (issue 43, item 4): only shrinks. Empty:
#: every module outside PROTO_ALLOWED works on the domain model.
PROTO_NOT_YET_MOVED: frozenset[str] = frozenset()


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _proto_imports(module: Module) -> list[tuple[str, int]]:
    return [(t, line) for t, line in module.imports if _within(t, PROTO_PACKAGE)]


def _proto_violations(
    modules: dict[str, Module],
    allowed: dict[str, str] | None = None,
    pending: frozenset[str] | None = None,
) -> list[str]:
    """Imports of the protobuf modules outside the allowed ones, and pending entries that
    no longer import them."""
    allowed = PROTO_ALLOWED if allowed is None else allowed
    pending = PROTO_NOT_YET_MOVED if pending is None else pending
    bad = []
    for module in modules.values():
        found = _proto_imports(module)
        if _within(module.name, PROTO_PACKAGE) or any(_within(module.name, a) for a in allowed):
            continue
        if module.name in pending:
            if not found:
                bad.append(f"{module.name} no longer imports {PROTO_PACKAGE}; unlist it")
            continue
        bad.extend(
            f"{_where(module, line)}: imports {target}: use fermion.table.domain and "
            "fermion.table.codec"
            for target, line in found
        )
    bad.extend(f"{name} is not a module" for name in sorted(pending) if name not in modules)
    return bad


def test_only_the_codec_modules_import_the_protobuf_modules() -> None:
    assert all(reason for reason in PROTO_ALLOWED.values())
    assert not set(PROTO_ALLOWED) & PROTO_NOT_YET_MOVED
    bad = _proto_violations(MODULES)
    assert not bad, "\n".join(bad)


def test_proto_rule() -> None:
    fake = _scratch(
        {
            "fermion.table.proto.m_pb2": "",
            "fermion.table.codec": "from fermion.table.proto import m_pb2 as pb\n",
            "fermion.table.ops.sub": "import fermion.table.proto.m_pb2\n",
            "fermion.table.scan": "\nfrom fermion.table.proto import m_pb2 as pb\n",
            "fermion.table.old": "from fermion.table.proto import m_pb2\n",
            "fermion.table.done": "from fermion.table.codec import x\n",
            "fermion.spark.read": "x = 1\nfrom fermion.table.proto.m_pb2 import Fragment\n",
        }
    )
    for module in fake.values():
        _collect_imports(module, fake)
    allowed = {"fermion.table.codec": "codec", "fermion.table.ops": "a package"}
    pending = frozenset({"fermion.table.old", "fermion.table.done", "fermion.table.gone"})
    found = [m.split(": ", 1)[-1] for m in _proto_violations(fake, allowed, pending)]
    assert found == [
        "imports fermion.table.proto.m_pb2: use fermion.table.domain and fermion.table.codec",
        "fermion.table.done no longer imports fermion.table.proto; unlist it",
        "imports fermion.table.proto.m_pb2: use fermion.table.domain and fermion.table.codec",
        "fermion.table.gone is not a module",
    ]
    lines = [m.split(": ", 1)[0] for m in _proto_violations(fake, allowed, pending)]
    assert lines[0].endswith(":2") and lines[2].endswith(":2")


MAX_MODULE_LINES = 850  # rule 10: "about 800"
#: Modules over the limit, each with the reason (docs/ARCHITECTURE.md, "Long modules").
LONG_MODULES = {
    "fermion.table.dataset": "the public Dataset facade: about half of it is the docstrings "
    "with examples of its 60 methods, which hand the work to the concern modules",
}


def _long_modules(modules: dict[str, Module], limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    found = {}
    for module in modules.values():
        lines = len(module.path.read_text().splitlines())
        python = module.path.suffix == ".py" and not module.path.name.endswith(GENERATED_SUFFIX)
        if lines > limit and python:  # the C kernels and generated code are out of scope
            found[module.name] = lines
    return found


def test_modules_stay_small_or_say_why() -> None:
    long = _long_modules(MODULES)
    unlisted = {name: n for name, n in long.items() if name not in LONG_MODULES}
    assert not unlisted, f"modules over {MAX_MODULE_LINES} lines: split them or list why"
    short_again = sorted(set(LONG_MODULES) - set(long))
    assert not short_again, f"no longer long, take them off LONG_MODULES: {short_again}"
    documented = ARCHITECTURE_DOC.read_text().split("### Long modules", 1)[1].split("\n#", 1)[0]
    assert all(f"`{name}`" in documented for name in LONG_MODULES), documented


def test_module_length_rule(tmp_path: Path) -> None:
    modules = {}
    for name, lines in (("fermion.a", 4), ("fermion.b", 5), ("fermion.table.proto.m_pb2", 9)):
        path = tmp_path / f"{name.rpartition('.')[2]}.py"
        path.write_text("x = 1\n" * lines)
        modules[name] = Module(name, path, ast.parse(path.read_text()), is_package=False)
    assert _long_modules(modules, limit=4) == {"fermion.b": 5}  # generated code is exempt
