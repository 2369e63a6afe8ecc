#!/bin/sh
# contrib/sql_exporter/connections.sh: the "connections" lines of
# contrib/sql_exporter/backfill.yml, one per database of this server that has
# the extension.  Run it as a role that may connect to every database (libpq's
# PG* variables say where the server is); the lines name the exporter's role,
# "prometheus" unless given:
#
#   sh contrib/sql_exporter/connections.sh [role] [socket directory]
#
# A database that gets the extension later needs a line of its own: run it
# again and restart the exporter.
set -eu
role=${1:-prometheus}
socket=${2:-/var/run/postgresql}
for db in $(psql -X -At -d postgres -c "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY 1"); do
    if [ "$(psql -X -At -d "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'backfill'")" = 1 ]; then
        printf "  - 'postgres://%s@/%s?host=%s&sslmode=disable'\n" "$role" "$db" "$socket"
    fi
done
