#!/usr/bin/env bash
# Makes sure a local PostgreSQL is installed and running, with a login role
# and database for the project. Idempotent: a second run changes nothing.
# Needs root (or passwordless sudo) only when something must be installed or
# started. Settings: PGSETUP_USER, PGSETUP_PASSWORD, PGSETUP_DB.
set -euo pipefail

user=${PGSETUP_USER:-wager}
password=${PGSETUP_PASSWORD:-wager}
database=${PGSETUP_DB:-wager}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
psql_admin() { (cd / && as_root runuser -u postgres -- psql -v ON_ERROR_STOP=1 -tAq "$@"); }

if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && \
   PGPASSWORD=$password psql -h 127.0.0.1 -U "$user" -d "$database" -tAqc 'SELECT 1' >/dev/null 2>&1; then
  exit 0 # already set up and running
fi

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "setup-postgres: installing PostgreSQL from apt"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
fi

version=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -qx "$version main"; then
  as_root pg_createcluster "$version" main >/dev/null
fi
if ! pg_lsclusters -h | awk '$1=="'"$version"'" && $2=="main" {print $4}' | grep -qx online; then
  echo "setup-postgres: starting PostgreSQL $version"
  as_root pg_ctlcluster "$version" main start
fi
for _ in $(seq 1 50); do
  pg_isready -q -h 127.0.0.1 -p 5432 && break
  sleep 0.2
done

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$user'")" != 1 ]; then
  psql_admin -c "CREATE ROLE \"$user\" LOGIN CREATEDB PASSWORD '$password'"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$database'")" != 1 ]; then
  psql_admin -c "CREATE DATABASE \"$database\" OWNER \"$user\""
fi
echo "setup-postgres: ready at postgres://$user:***@127.0.0.1:5432/$database"
