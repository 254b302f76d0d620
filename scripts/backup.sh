#!/usr/bin/env bash
# Back up fleetcap's database: scripts/backup.sh [FILE]
#
# PostgreSQL (DATABASE_URL=postgres://...): pg_dump in its custom format (compressed, restored with
# pg_restore, table by table), default backups/fleetcap-<UTC time>.dump. SQLite (DATABASE_URL unset or
# sqlite:///...): sqlite3's online .backup (consistent while the app writes), default
# backups/fleetcap-<UTC time>.sqlite3. Prints the file written.
#
# Not in the backup: FLEETCAP_SECRET_KEY and FLEETCAP_FIELD_ENCRYPTION_KEYS. Stored endpoint API keys are
# encrypted with them (fleet/crypto.py), so keep those keys (in your secret store) for as long as you keep
# the backups: a restore without them has every stored endpoint key unreadable (re-enter them).
# docs/operations.md ("Backups and restore") has the procedure; tests/test_backup_restore.py tests it.
set -euo pipefail
cd "$(dirname "$0")/.."

url="${DATABASE_URL:-}"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
case "$url" in
  postgres://* | postgresql://*)
    out="${1:-backups/fleetcap-$stamp.dump}"
    mkdir -p "$(dirname "$out")"
    # Custom format: compressed, and pg_restore can restore it into a fresh database in one transaction.
    pg_dump --format=custom --no-owner --no-privileges --file="$out.partial" --dbname="${url/#postgres:/postgresql:}"
    ;;
  "" | sqlite:*)
    if [[ -z "$url" ]]; then
      src="${FLEETCAP_VAR_DIR:-var}/fleetcap.sqlite3"
    else
      src="${url#sqlite://}"  # sqlite:////abs/path -> //abs/path; sqlite:///rel -> /rel (dj-database-url's reading)
      src="${src#/}"
    fi
    [[ -f "$src" ]] || { echo "backup: no SQLite database at $src" >&2; exit 1; }
    out="${1:-backups/fleetcap-$stamp.sqlite3}"
    mkdir -p "$(dirname "$out")"
    sqlite3 "$src" ".backup '$out.partial'"
    ;;
  *)
    echo "backup: DATABASE_URL must be postgres://... or sqlite:///... (got scheme ${url%%:*})" >&2
    exit 2
    ;;
esac
mv "$out.partial" "$out"  # never leave a half-written file under the final name
echo "$out"
echo "backup: keep FLEETCAP_SECRET_KEY and FLEETCAP_FIELD_ENCRYPTION_KEYS with it (not in the file)." >&2
