#!/bin/sh
# First start: an empty PGDATA gets a cluster with POSTGRES_USER (postgres) as its superuser, whose
# password is POSTGRES_PASSWORD or the content of POSTGRES_PASSWORD_FILE, and a database
# POSTGRES_DB (named after the user), reachable over the network with that password only
# (scram-sha-256). Later starts use what is there. Then runs the command (postgres ...).
set -eu

if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    password="$(cat "$POSTGRES_PASSWORD_FILE")"
  else
    password="${POSTGRES_PASSWORD:-}"
  fi
  if [ -z "$password" ]; then
    echo "toolrun-postgres: set POSTGRES_PASSWORD_FILE (or POSTGRES_PASSWORD) for the first start" >&2
    exit 1
  fi
  case "$user$db" in *[!A-Za-z0-9_]*)
    echo "toolrun-postgres: POSTGRES_USER and POSTGRES_DB may hold letters, digits and _ only" >&2
    exit 1 ;;
  esac
  pwfile="$(mktemp)"
  printf '%s\n' "$password" > "$pwfile"
  initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  printf '%s\n' "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  printf '%s\n' 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "toolrun-postgres: created the cluster in $PGDATA (user $user, database $db)"
fi

exec "$@"
