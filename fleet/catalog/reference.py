"""The reference catalogue read without a database: SKU and model rows, and the engine's inputs built from them.

Pure Python: no Django imports here (tests/engine and the benchmarks use it without a database; it may
import ``planner.engine``). ``skus.json`` and ``models.json`` are the one home of every SKU and model
figure; ``accelerator(slug)`` and ``model(slug)`` build ``planner.engine.Accelerator`` / ``ModelArch``
through their ``from_record`` constructors, the same validation the Django records go through.

    from fleet.catalog import reference
    k3 = reference.model("kimi-k3")               # ModelArch, bf16 + MXFP4 routed experts
    h100 = reference.accelerator("h100-sxm-80gb")  # Accelerator, hbm_gb 80 (decimal GB)

Built objects are cached per slug and shared (they are frozen), so the engine's per-model memo hits
across callers. Rows are returned as fresh copies: mutating one does not change the catalogue.

A model row may name its published ``config.json`` instead of spelling its figures out
(``"hf_config": "hf-configs/<org>--<repo>_config.json"``, under this folder): ``model_row`` then
derives the figures with the engine's importer (``planner.engine.model_record_from_config``), taking
only what the config cannot say from the row (``total_params`` / ``active_params`` from the model
card, ``weight_format`` if given, ``source``, and assumptions of its own, to which the importer's are
added). The config is then the one definition of the model, for the catalogue and for an import.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from planner.engine import Accelerator, ModelArch, model_record_from_config

CATALOG_DIR: Path = Path(__file__).resolve().parent
SKUS_FILE: Path = CATALOG_DIR / "skus.json"
MODELS_FILE: Path = CATALOG_DIR / "models.json"


#: Keys a row naming its config may give beside ``hf_config`` (the rest is derived from the config).
CONFIG_ROW_KEYS: frozenset[str] = frozenset(
    {
        "slug",
        "name",
        "hf_config",
        "hf_model_id",
        "total_params",
        "active_params",
        "weight_format",
        "source",
        "assumptions",
    }
)


def _config_name(relative: Path) -> str:
    """``hf-configs/moonshotai--Kimi-K3_config.json`` -> ``moonshotai/Kimi-K3``: the model the stored
    copy is of, as its pages name it (a path inside the catalogue means nothing to a reader)."""
    return relative.name.removesuffix("_config.json").removesuffix(".json").replace("--", "/", 1)


def model_row(row: dict[str, Any], directory: Path = CATALOG_DIR) -> dict[str, Any]:
    """A ``models.json`` row with its figures: as written, or derived from the config it names
    (``hf_config``, a path under ``directory``, else under this package's folder)."""
    if "hf_config" not in row:
        return row
    extra = sorted(set(row) - CONFIG_ROW_KEYS)
    if extra:
        raise ValueError(f"models.json {row.get('slug')!r}: {extra} come from its hf_config; remove them")
    relative = Path(row["hf_config"])
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"models.json {row.get('slug')!r}: hf_config must be a path inside the catalogue")
    path = directory / relative if (directory / relative).exists() else CATALOG_DIR / relative
    # Derived once per process for the same row and config file (its modification time in the key): a
    # catalogue load derives every config-backed row, and the test suite loads the catalogue hundreds of times.
    key = (str(path), path.stat().st_mtime_ns, json.dumps(row, sort_keys=True))
    return copy.deepcopy(_derived_row(*key))


@cache
def _derived_row(path_text: str, _mtime_ns: int, row_json: str) -> dict[str, Any]:
    row = json.loads(row_json)
    path = Path(path_text)
    relative = Path(row["hf_config"])
    with path.open(encoding="utf-8") as fh:
        config = json.load(fh)
    imported = model_record_from_config(
        config,
        name=row["name"],
        total_params=row.get("total_params"),
        active_params=row.get("active_params"),
        weight_format=row.get("weight_format"),
    )
    return {
        "slug": row["slug"],
        **imported.record,
        "hf_model_id": row.get("hf_model_id", imported.hf_model_id),
        "source": row.get("source", ""),
        "assumptions": [
            *row.get("assumptions", []),
            f"Derived from the published config.json of {_config_name(relative)} "
            f"(Architecture: {imported.architecture}).",
            *imported.assumptions,
        ],
    }


@cache
def _rows(path: Path) -> tuple[dict[str, Any], ...]:
    with path.open(encoding="utf-8") as fh:
        rows = json.load(fh)
    if path == MODELS_FILE:
        rows = [model_row(row, path.parent) for row in rows]
    slugs = [row["slug"] for row in rows]
    duplicates = sorted({s for s in slugs if slugs.count(s) > 1})
    if duplicates:
        raise ValueError(f"{path.name}: duplicate slugs {duplicates}")
    return tuple(rows)


def _row(path: Path, slug: str) -> dict[str, Any]:
    for row in _rows(path):
        if row["slug"] == slug:
            return row
    known = ", ".join(row["slug"] for row in _rows(path))
    raise KeyError(f"{path.name} has no {slug!r}; known slugs: {known}")


def sku_records() -> list[dict[str, Any]]:
    """Every row of ``skus.json`` (``slug``, ``name``, ``vendor``, ``hbm_gb`` decimal GB, ...), in file order."""
    return copy.deepcopy(list(_rows(SKUS_FILE)))


def model_records() -> list[dict[str, Any]]:
    """Every row of ``models.json`` (``slug``, ``name``, parameter counts, formats, ``layer_groups``, ...)."""
    return copy.deepcopy(list(_rows(MODELS_FILE)))


def sku_record(slug: str) -> dict[str, Any]:
    """One row of ``skus.json`` by slug (``KeyError`` listing the known slugs when absent)."""
    return copy.deepcopy(_row(SKUS_FILE, slug))


def model_record(slug: str) -> dict[str, Any]:
    """One row of ``models.json`` by slug (``KeyError`` listing the known slugs when absent)."""
    return copy.deepcopy(_row(MODELS_FILE, slug))


@cache
def accelerator(slug: str) -> Accelerator:
    """The catalogue SKU ``slug`` as an engine ``Accelerator`` (``Accelerator.from_record``)."""
    return Accelerator.from_record(_row(SKUS_FILE, slug))


@cache
def model(slug: str) -> ModelArch:
    """The catalogue model ``slug`` as an engine ``ModelArch`` (``ModelArch.from_record``)."""
    return ModelArch.from_record(_row(MODELS_FILE, slug))
