#!/bin/bash
# A PostgreSQL server for the fleet tests and benchmark, started in a
# scratch folder and listening on a Unix socket there (no TCP port), with a
# role "fleet" whose random password is given to clients only through a
# password file (PGPASSFILE). Sourced: pg_start sets scratch, pw, url,
# PGPASSFILE and psql_su, or returns 77 with the reason in skip_why;
# pg_stop stops it and removes the folder. As root the server runs as the
# postgres user (it refuses root).

pg_start() {
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$bin" ] || [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
    skip_why="no PostgreSQL server (initdb, pg_ctl under /usr/lib/postgresql/*/bin): scripts/setup installs postgresql"
    return 77
  fi
  command -v psql > /dev/null || { skip_why="no psql"; return 77; }
  run_as=()
  if [ "$(id -u)" = 0 ]; then
    id postgres > /dev/null 2>&1 ||
      { skip_why="running as root and no postgres user to run the server as"; return 77; }
    run_as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
  fi
  scratch=$(mktemp -d /tmp/ct-fleet-pg.XXXXXX)
  [ "$(id -u)" = 0 ] && chown postgres: "$scratch"
  pgdata=$scratch/data
  # the password: random, so a hit anywhere can only be a leak
  pw="pw-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
  "${run_as[@]}" "$bin/initdb" -D "$pgdata" -U postgres --auth-local=trust -E UTF8 \
    > "$scratch/initdb.log" 2>&1 || { cat "$scratch/initdb.log"; return 1; }
  printf 'local all postgres trust\nlocal all fleet scram-sha-256\n' > "$scratch/hba"
  "${run_as[@]}" cp "$scratch/hba" "$pgdata/pg_hba.conf"
  "${run_as[@]}" "$bin/pg_ctl" -D "$pgdata" -l "$scratch/server.log" -w -t 60 \
    -o "-k $scratch -c listen_addresses= -c password_encryption=scram-sha-256" start \
    > /dev/null || { cat "$scratch/server.log"; return 1; }
  # the password reaches the server over stdin, never on a command line
  printf "CREATE ROLE fleet LOGIN PASSWORD '%s';\nCREATE DATABASE fleet OWNER fleet;\n" "$pw" |
    psql_su -d postgres > /dev/null || return 1
  (umask 077; printf '*:*:fleet:fleet:%s\n' "$pw" > "$scratch/pgpass")
  [ "$(id -u)" = 0 ] && chown root: "$scratch/pgpass"
  export PGPASSFILE=$scratch/pgpass
  url="postgresql:///fleet?host=$scratch&user=fleet"
  return 0
}

psql_su() { "${run_as[@]}" psql -X -q -h "$scratch" -U postgres -v ON_ERROR_STOP=1 "$@"; }

pg_stop() {
  [ -n "${pgdata:-}" ] && "${run_as[@]}" "$bin/pg_ctl" -D "$pgdata" -m immediate stop > /dev/null 2>&1
  [ -n "${scratch:-}" ] && rm -rf "$scratch"
}
