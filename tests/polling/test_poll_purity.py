"""fleet/polling is framework-free: no Django import, and it imports with Django unavailable."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLLING = ROOT / "fleet" / "polling"
FORBIDDEN = re.compile(r"^\s*(?:import|from)\s+(?:django|rest_framework|celery|fleet\.(?!polling))\b", re.M)


def test_no_django_imports_in_polling_sources():
    files = sorted(POLLING.rglob("*.py"))
    assert len(files) >= 5, files
    offenders = [f"{p.name}: {m.group(0).strip()}" for p in files for m in FORBIDDEN.finditer(p.read_text())]
    assert offenders == []


def test_polling_imports_with_django_unavailable():
    modules = sorted(p.stem for p in POLLING.glob("*.py") if p.stem != "__init__")
    code = (
        "import sys, warnings; warnings.simplefilter('ignore')\n"
        "sys.modules['django'] = None; sys.modules['rest_framework'] = None\n"
        f"for name in {modules!r}: __import__('fleet.polling.' + name)\n"
        "assert sys.modules['django'] is None\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
