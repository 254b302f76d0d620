"""``manage.py init_local``: the folders and the secret a local set-up needs, made once.

Creates ``FLEETCAP_VAR_DIR`` (default ``var/``: the SQLite files), its ``staticfiles/``, the
filesystem broker's folders when no ``CELERY_BROKER_URL`` is set, and ``var/secret_key`` (random,
mode 600) when ``FLEETCAP_SECRET_KEY`` is not given. Idempotent: what exists is left as it is, so
the secret stays stable across restarts. ``make run`` and ``make test`` run it; importing the
settings never writes anything.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


def local_folders() -> list[Path]:
    """The folders the settings point at that must exist before anything runs."""
    folders = [Path(settings.VAR_DIR), Path(settings.STATIC_ROOT)]
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {})
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folders += [
            Path(options[key])
            for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder")
            if key in options
        ]
    return list(dict.fromkeys(folders))


def write_secret_key(path: Path) -> bool:
    """Write a new random key to ``path`` (mode 600) unless it exists; True when written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process (a parallel `make test`) made it first: keep theirs
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_urlsafe(50))
    return True


def set_aside_stale_sqlite(path: Path) -> Path | None:
    """Move a SQLite file made before the migration history was laid afresh (it still has the old
    ``planner_modelspec`` table) to ``<name>.before-relaid-migrations``; returns the new path.

    Its recorded migrations share names with the new ones, so ``migrate`` would skip them and the
    pages would fail on missing tables; nothing is deleted.
    """
    if not path.is_file():
        return None
    db = sqlite3.connect(path)
    try:
        stale = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='planner_modelspec'").fetchone()
    finally:
        db.close()  # the last connection's close checkpoints a WAL file into the database
    if not stale:
        return None
    aside = path.with_name(path.name + ".before-relaid-migrations")
    path.rename(aside)
    for suffix in ("-wal", "-shm"):  # never leave a WAL beside the name the new database takes
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(aside.with_name(aside.name + suffix))
    return aside


class Command(BaseCommand):
    help = "Create var/ (SQLite, static files, the filesystem broker's folders) and var/secret_key, once."

    def handle(self, *args, **options) -> None:
        for folder in local_folders():
            if not folder.is_dir():
                folder.mkdir(parents=True, exist_ok=True)
                self.stdout.write(f"created {folder}/")
        database = settings.DATABASES["default"]
        if database["ENGINE"].endswith("sqlite3") and (aside := set_aside_stale_sqlite(Path(database["NAME"]))):
            self.stdout.write(f"moved {database['NAME']} (from before the re-laid migrations) to {aside}")
        if os.environ.get("FLEETCAP_SECRET_KEY") or os.environ.get("FLEETCAP_SECRET_KEY_FILE"):
            return  # the key comes from the environment; nothing to generate
        path = Path(settings.LOCAL_SECRET_KEY_FILE)
        if write_secret_key(path):
            self.stdout.write(f"generated {path} (keep it: stored endpoint API keys are encrypted with it)")
