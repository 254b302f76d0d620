#!/usr/bin/env bash
# Restore a backup made by scripts/backup.sh into the database of DATABASE_URL:
#   scripts/restore.sh FILE [--force]
#
# The target must be empty (a fresh database: `createdb`, or a new SQLite path) unless --force, which
# replaces what is there (PostgreSQL: pg_restore --clean; SQLite: the file is overwritten). PostgreSQL
# restores in one transaction: on any error nothing is restored. Stop web, worker and beat first; afterwards
# run `python manage.py migrate` (a backup from an older release gets the newer migrations) and start them.
# The restored stored endpoint keys open only with the FLEETCAP_FIELD_ENCRYPTION_KEYS (or secret key) in
# use when they were stored.
set -euo pipefail
cd "$(dirname "$0")/.."

file="${1:?usage: scripts/restore.sh FILE [--force]}"
force="${2:-}"
[[ -f "$file" ]] || { echo "restore: no file $file" >&2; exit 1; }
url="${DATABASE_URL:-}"
case "$url" in
  postgres://* | postgresql://*)
    url="${url/#postgres:/postgresql:}"
    tables="$(psql --dbname="$url" -Atqc "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")"
    clean=()
    if [[ "$tables" != "0" ]]; then
      [[ "$force" == "--force" ]] || { echo "restore: the target database has $tables tables; use a fresh one or --force" >&2; exit 3; }
      clean=(--clean --if-exists)
    fi
    pg_restore --no-owner --no-privileges --single-transaction --exit-on-error "${clean[@]}" --dbname="$url" "$file"
    ;;
  "" | sqlite:*)
    if [[ -z "$url" ]]; then
      dst="${FLEETCAP_VAR_DIR:-var}/fleetcap.sqlite3"
    else
      dst="${url#sqlite://}"
      dst="${dst#/}"
    fi
    if [[ -s "$dst" && "$force" != "--force" ]]; then
      echo "restore: $dst exists; use a new path or --force" >&2
      exit 3
    fi
    sqlite3 "$file" "PRAGMA integrity_check" | grep -qx ok || { echo "restore: $file is not a sound SQLite file" >&2; exit 1; }
    mkdir -p "$(dirname "$dst")"
    rm -f "$dst-wal" "$dst-shm"
    sqlite3 "$dst" ".restore '$file'"
    ;;
  *)
    echo "restore: DATABASE_URL must be postgres://... or sqlite:///... (got scheme ${url%%:*})" >&2
    exit 2
    ;;
esac
echo "restore: $file restored; now run python manage.py migrate, then start web, worker and beat." >&2
