"""The engine's public API and its module boundaries.

* every name in ``planner.engine.__all__`` resolves;
* no module of the app (``planner/engine``, ``fleet/``, ``planner/``) imports an underscore-prefixed name
  from another module (a helper two modules share is public, with a docstring, or the modules are one);
* code outside the engine (``fleet/``, ``planner/`` outside ``planner/engine``, ``bench/``) imports
  ``planner.engine`` only, never one of its submodules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import planner.engine

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "planner" / "engine"
OUTSIDE = (ROOT / "fleet", ROOT / "planner", ROOT / "bench")


def _sources(*folders: Path) -> Iterator[Path]:
    for folder in folders:
        yield from sorted(p for p in folder.rglob("*.py") if "migrations" not in p.parts)


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, absolute module, imported names)`` of every import in ``path`` (relative ones resolved)."""
    package = list(path.relative_to(ROOT).parent.parts)
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield node.lineno, module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def test_every_public_name_resolves():
    assert planner.engine.__all__, "the public API lists its names"
    missing = [name for name in planner.engine.__all__ if not hasattr(planner.engine, name)]
    assert missing == []
    assert len(set(planner.engine.__all__)) == len(planner.engine.__all__)


def test_the_names_app_code_depends_on_stay_public():
    """The names the app imported before the engine was cut by concept, and the units it is to switch to."""
    required = {
        "CACHE_DTYPES",
        "MODES",
        "PRICING_KINDS",
        "REASONS",
        "WEIGHT_FORMATS",
        "Accelerator",
        "BreakevenResult",
        "CapacityPoint",
        "ClusterState",
        "EngineInputError",
        "LayerGroup",
        "Layout",
        "ModelArch",
        "Quote",
        "SearchCancelled",
        "SearchResult",
        "SizingResult",
        "SkuOffer",
        "ThroughputResult",
        "Workload",
        "breakeven",
        "capacity_curve",
        "estimate",
        "kv_bytes_per_token",
        "layout_errors",
        "min_gpus_for_weights",
        "parse_layer_groups",
        "price_in_force",
        "PriceInForce",
        "rate_from_quotes",
        "search",
        "single_gpu_fit",
        "size",
        "state_bytes_per_sequence",
        "unit_economics",
        "weights_bytes",
        "weights_storage",
        "GIB",
        "SECONDS_PER_HOUR",
    }
    assert required <= set(planner.engine.__all__)


def test_units_have_one_home():
    assert planner.engine.GIB == 1024**3 and planner.engine.SECONDS_PER_HOUR == 3600
    assert planner.engine.SECONDS_PER_DAY == 86_400 and planner.engine.GB == 10**9


def test_no_private_name_is_imported_across_modules():
    """Nowhere in the app code (the engine, fleet, planner): a helper two modules share is public."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: from {module} import {name}"
        for path in _sources(ROOT / "fleet", ROOT / "planner")
        for line, module, names in _imports(path)
        for name in names
        if name.startswith("_")
    ]
    assert offenders == []


def test_the_checks_above_see_relative_imports():
    """``from .memo import x`` in planner/engine/sizing/capacity.py resolves to planner.engine.sizing.memo."""
    modules = {module for _, module, _ in _imports(ENGINE / "sizing" / "capacity.py")}
    assert {"planner.engine.sizing.memo", "planner.engine.errors"} <= modules


def test_code_outside_the_engine_imports_only_planner_engine():
    public = set(planner.engine.__all__)
    offenders = []
    for path in _sources(*OUTSIDE):
        if ENGINE in path.parents:
            continue
        for line, module, names in _imports(path):
            if module.startswith("planner.engine."):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {module}")
            elif module == "planner.engine" and not set(names) <= public:
                offenders.append(
                    f"{path.relative_to(ROOT)}:{line}: from planner.engine import {sorted(set(names) - public)}"
                )
            elif module == "planner" and set(names) & {"engine"}:
                continue  # ``from planner import engine``: the package itself
    assert offenders == []
