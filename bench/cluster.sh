# bench/cluster.sh: the one throw-away cluster of bench/run.sh,
# bench/cutover.sh, bench/jobs_per_write.sh and bench/verify.sh, sourced by
# each after it has read its options.
#
# Sets BIN (PostgreSQL's programs: PGVER's, or BIN from the environment),
# HERE (the source tree), COMMIT (the commit measured), T_START, RUNAS (the
# postgres user when run as root), DIR (a new temp dir, named after
# BENCH_DIR, default backfill-bench) and PORT (a free one), and exports the
# libpq variables that name the cluster.  On exit it kills the processes the
# script put in BGPIDS, stops the cluster and removes DIR, unless KEEP=1.
# log prints a line with the seconds since the start; sql runs psql as
# postgres (application name PGAPPNAME, default bench), val one statement's
# value, timed the seconds a psql script takes (the last line it prints).
# cluster_start makes and starts the cluster: its own socket and
# port, no TCP, then the postgresql.conf lines it reads on stdin.  It never
# touches another cluster.

PGVER=${PGVER:-15}
BIN=${BIN:-/usr/lib/postgresql/$PGVER/bin}   # BIN=... for another installation
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMMIT=$(git -C "$HERE" log --oneline -1 2>/dev/null || echo unknown)
T_START=$(date +%s)
KEEP=${KEEP:-0}

RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
DIR=$(mktemp -d "/tmp/${BENCH_DIR:-backfill-bench}.XXXXXX")
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
chmod 755 "$DIR"
PORT=$(( 40000 + RANDOM % 20000 ))
while "$BIN/pg_isready" -q -h "$DIR" -p "$PORT" 2>/dev/null || ss -ltn 2>/dev/null | grep -q ":$PORT "; do
    PORT=$(( 40000 + RANDOM % 20000 ))
done
export PGHOST=$DIR PGPORT=$PORT PGDATABASE=postgres PGUSER=postgres

BGPIDS=()
cleanup() {
    local p
    for p in "${BGPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    if [ "$KEEP" = 1 ]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '[%4ds] %s\n' $(( $(date +%s) - T_START )) "$*" >&2; }
sql() { "${RUNAS[@]}" env PGHOST="$PGHOST" PGPORT="$PGPORT" PGAPPNAME="${PGAPPNAME:-bench}" \
        "$BIN/psql" -X -q -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
val() { sql -Atc "$1"; }
# time a psql script body: prints seconds (clock_timestamp inside the server)
timed() {
    local body=$1 out
    out=$(sql -At <<SQL
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
$body
SELECT extract(epoch FROM clock_timestamp()) - :t0;
SQL
)
    tail -1 <<<"$out"
}

cluster_start() {  # < more postgresql.conf lines
    "${RUNAS[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
    {
        printf "listen_addresses = ''\nport = %s\nunix_socket_directories = '%s'\n" "$PORT" "$DIR"
        cat
    } >> "$DIR/data/postgresql.conf"
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w start >/dev/null
}
