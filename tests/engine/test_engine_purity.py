"""planner/engine is pure Python: no Django import anywhere in the folder."""

import re
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "planner" / "engine"
FORBIDDEN = re.compile(r"^\s*(?:import|from)\s+(?:django|rest_framework|celery|fleet|planner\.(?!engine))\b", re.M)


def test_no_django_imports_in_engine_sources():
    files = sorted(ENGINE.rglob("*.py"))
    assert files, ENGINE
    offenders = [f"{p.name}: {m.group(0).strip()}" for p in files for m in FORBIDDEN.finditer(p.read_text())]
    assert offenders == []


def test_engine_imports_with_django_unavailable():
    """Import every engine module in a fresh interpreter where importing Django fails."""
    modules = sorted(p.stem for p in ENGINE.glob("*.py") if p.stem != "__init__")
    code = (
        "import sys; sys.modules['django'] = None; sys.modules['rest_framework'] = None\n"
        f"for name in {modules!r}: __import__('planner.engine.' + name)\n"
    )
    root = ENGINE.parents[1]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
