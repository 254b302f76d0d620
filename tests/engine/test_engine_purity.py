"""planner/engine and fleet/catalog/reference.py are pure Python: no Django import anywhere in them."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "planner" / "engine"
REFERENCE = ROOT / "fleet" / "catalog" / "reference.py"
FORBIDDEN = re.compile(r"^\s*(?:import|from)\s+(?:django|rest_framework|celery|fleet|planner\.(?!engine))\b", re.M)
FORBIDDEN_IN_REFERENCE = re.compile(r"^\s*(?:import|from)\s+(?:django|rest_framework|celery)\b", re.M)


def test_no_django_imports_in_engine_sources():
    files = sorted(ENGINE.rglob("*.py"))
    assert files, ENGINE
    offenders = [
        f"{p.relative_to(ENGINE)}: {m.group(0).strip()}" for p in files for m in FORBIDDEN.finditer(p.read_text())
    ]
    assert offenders == []


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_engine_imports_with_django_unavailable():
    """Import every engine module, packages included, in a fresh interpreter where importing Django fails."""
    modules = sorted(_module(p) for p in ENGINE.rglob("*.py"))
    assert "planner.engine.sizing.capacity" in modules and "planner.engine" in modules
    code = (
        "import sys; sys.modules['django'] = None; sys.modules['rest_framework'] = None\n"
        f"for name in {modules!r}: __import__(name)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_catalogue_reference_has_no_django_imports():
    """fleet/catalog/reference.py reads the JSON and builds engine inputs without Django: its own imports, and
    a fresh interpreter where Django cannot be imported (the ``fleet`` package's __init__, which starts the
    Celery app, is bypassed so that only the catalogue modules run)."""
    assert FORBIDDEN_IN_REFERENCE.findall(REFERENCE.read_text()) == []
    code = (
        "import sys, types\n"
        "sys.modules['django'] = None; sys.modules['rest_framework'] = None; sys.modules['celery'] = None\n"
        "fleet = types.ModuleType('fleet'); fleet.__path__ = ['fleet']; sys.modules['fleet'] = fleet\n"
        "from fleet.catalog import reference\n"
        "assert reference.model('kimi-k3').name == 'Kimi K3'\n"
        "assert reference.accelerator('h100-sxm-80gb').hbm_gb == 80\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
