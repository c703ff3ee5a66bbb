"""The layers of skbandit, read from the source with ``ast``: no import circle, the
utilities import nothing above them, and the policy families are siblings.

Layers, bottom to top (a module imports its own layer and those below):

1. ``skbandit.exceptions`` and ``skbandit._docstrings`` (docstring templating),
   which import nothing of the library;
2. ``skbandit.utils`` (validation, parameter constraints, tags, the fast path's
   checks), but not the tools below;
3. ``skbandit._base``, the base's runtime (the decision path, selection,
   propensities, rollback, arms, the training schedule);
4. ``skbandit.evaluation`` and its Dask backend ``skbandit._dask``,
   ``skbandit.networks``, ``skbandit.oracles``,
   ``skbandit.preprocessing`` (none of them knows the base);
5. ``skbandit.base``;
6. ``skbandit.policies._core``, the machinery the families share;
7. the families ``skbandit.policies._<family>`` and ``skbandit.policies._random``:
   each imports layers 1-6, never another family;
8. everything else: ``skbandit.policies`` itself and ``skbandit.policies.base`` (the
   public family bases, re-exported from the families), the pipeline, environments, the
   Dask backend of the verbs (``DEFERRED`` says why the decorator may reach it), data
   sets, the command line, and the tools that look at the whole library
   (``skbandit.utils.estimator_checks``, its checks in ``skbandit.utils._checks``,
   and ``skbandit.utils.discovery``, as scikit-learn's own ``utils`` tools do).

Every import counts, at module level or inside a function: a lazy import hides a
circle from Python, not from the layering.
"""
# SPDX-License-Identifier: BSD-3-Clause

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skbandit"

#: Deferred imports of a higher layer that the layering allows, each with its reason:
#: they are removed from the graph before the checks. Keep this short.
DEFERRED = {
    ("skbandit._dask", "skbandit._dask._dispatch"): "the Dask backend of the verbs is "
    "imported only once a Dask collection is passed; it fits policies, so it sits on "
    "top, while the decorator that reaches it sits below the base",
}
#: Modules of the top layer inside a lower package (see ``DEFERRED``).
TOP_INSIDE = (
    "skbandit._dask._dispatch",
    "skbandit._dask._ensemble",
    "skbandit._dask._fit",
    "skbandit._dask._glm",
    "skbandit._dask._glm_es",
    "skbandit._dask._offpolicy",
    "skbandit._dask._offpolicy_stream",
    "skbandit._dask._predict",
)

TOOLS = (
    "skbandit.utils.estimator_checks",
    "skbandit.utils._checks",
    "skbandit.utils.discovery",
)
LAYERS = (
    ("skbandit.exceptions", "skbandit._docstrings"),
    ("skbandit.utils",),
    ("skbandit._base",),
    (
        "skbandit.evaluation",
        "skbandit._dask",
        "skbandit.networks",
        "skbandit.oracles",
        "skbandit.preprocessing",
    ),
    ("skbandit.base",),
    ("skbandit.policies._core",),
)
FAMILY_ROOT = "skbandit.policies."


def _within(module, prefix):
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module):
    """Index of ``module``'s layer (see the module docstring); families are 6."""
    if any(_within(module, tool) for tool in TOOLS + TOP_INSIDE):
        return len(LAYERS) + 1
    for index, prefixes in enumerate(LAYERS):
        if any(_within(module, p) for p in prefixes):
            return index
    if family_of(module) is not None:
        return len(LAYERS)
    return len(LAYERS) + 1


def family_of(module):
    """``_linear`` for ``skbandit.policies._linear._kernel``; None outside families."""
    if not module.startswith(FAMILY_ROOT):
        return None
    head = module[len(FAMILY_ROOT) :].split(".")[0]
    return None if head in ("", "_core") or not head.startswith("_") else head


def module_graph(package=PACKAGE):
    """``{module: {imported skbandit module: line}}`` of every module of the package."""
    root = package.parent
    paths = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        paths[".".join(parts)] = path
    graph = {}
    for module, path in paths.items():
        package_name = (
            module if path.name == "__init__.py" else module.rpartition(".")[0]
        )
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, package_name, paths):
                if target.startswith("skbandit") and target != module:
                    edges.setdefault(target, node.lineno)
        graph[module] = {
            target: line
            for target, line in edges.items()
            if (module, target) not in DEFERRED
        }
    return graph


def _targets(node, package_name, known):
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = package_name.split(".")[: len(package_name.split(".")) - node.level + 1]
        name = ".".join(base + ([node.module] if node.module else []))
    else:
        name = node.module or ""
    # `from skbandit.utils import validation` imports the submodule
    subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in known]
    return subs or [name]


def circles(graph):
    """Every import circle, as a list of modules (one per strongly connected part)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def upward_imports(graph):
    """``source -> target (line)`` where a module imports a higher layer."""
    return sorted(
        f"{source} -> {target} (line {line})"
        for source, edges in graph.items()
        for target, line in edges.items()
        if layer_of(target) > layer_of(source)
    )


def cross_family_imports(graph):
    """``source -> target (line)`` where one policy family imports another."""
    return sorted(
        f"{source} -> {target} (line {line})"
        for source, edges in graph.items()
        for target, line in edges.items()
        if family_of(source) and family_of(target) not in (None, family_of(source))
    )


GRAPH = module_graph()


def test_no_import_circle():
    assert circles(GRAPH) == []


def test_no_module_imports_a_higher_layer():
    # includes: skbandit.utils imports nothing above it
    assert upward_imports(GRAPH) == []


def test_families_are_siblings():
    assert cross_family_imports(GRAPH) == []


def test_the_graph_sees_the_package():
    # the walk reads real imports: the base imports the decision path, which
    # imports the selection; a family imports the shared core
    assert "skbandit._base._decision" in GRAPH["skbandit.base"]
    assert "skbandit._base._selection" in GRAPH["skbandit._base._decision"]
    assert (
        "skbandit.policies._core._ridge"
        in GRAPH["skbandit.policies._linear._ridge_policies"]
    )


# --------------------------------------------------- the checks catch violations
def test_a_circle_is_found():
    graph = {
        "skbandit.a": {"skbandit.b": 1},
        "skbandit.b": {"skbandit.c": 3},
        "skbandit.c": {"skbandit.a": 2},
        "skbandit.d": {"skbandit.a": 1},
    }
    assert circles(graph) == [["skbandit.a", "skbandit.b", "skbandit.c"]]


def test_a_utility_importing_the_base_is_found():
    graph = {"skbandit.utils._x": {"skbandit.base": 7}, "skbandit.base": {}}
    assert upward_imports(graph) == ["skbandit.utils._x -> skbandit.base (line 7)"]


def test_a_utility_importing_a_policy_is_found():
    graph = {"skbandit.utils.validation": {"skbandit.policies._linear._ridge": 4}}
    assert upward_imports(graph) == [
        "skbandit.utils.validation -> skbandit.policies._linear._ridge (line 4)"
    ]


def test_a_family_importing_another_is_found():
    graph = {
        "skbandit.policies._slate._cn": {
            "skbandit.policies._neural._base": 9,
            "skbandit.policies._core._ridge": 10,  # allowed: the shared core
            "skbandit.base": 11,  # allowed: the base
        }
    }
    assert cross_family_imports(graph) == [
        "skbandit.policies._slate._cn -> skbandit.policies._neural._base (line 9)"
    ]


def test_the_core_importing_a_family_is_found():
    graph = {"skbandit.policies._core._ridge": {"skbandit.policies._glm._ecolog": 2}}
    assert upward_imports(graph) == [
        "skbandit.policies._core._ridge -> skbandit.policies._glm._ecolog (line 2)"
    ]


@pytest.mark.parametrize(
    "module, layer",
    [("skbandit.exceptions", 0), ("skbandit.utils.validation", 1),
     ("skbandit._base._decision", 2), ("skbandit.networks._core", 3),
     ("skbandit.base", 4), ("skbandit.policies._core._ridge", 5),
     ("skbandit.policies._glm._ecolog", 6), ("skbandit.policies._random", 6),
     ("skbandit.utils.estimator_checks", 7), ("skbandit.policies", 7),
     ("skbandit.policies.base", 7)],
)  # fmt: skip
def test_layers(module, layer):
    assert layer_of(module) == layer


def test_every_deferred_import_exists():
    # An allowance that no longer matches an import is removed, not kept.
    for source, target in DEFERRED:
        text = (PACKAGE.parent / (source.replace(".", "/"))).with_suffix(".py")
        path = text if text.exists() else text.with_suffix("") / "__init__.py"
        assert f"from {target} import" in path.read_text(), (source, target)
