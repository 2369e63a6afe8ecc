#!/bin/bash
# scripts/test.sh: build backfill and run its whole test suite.
#
# pg_regress and isolation tests run in a throw-away cluster made by
# pg_virtualenv; TAP tests make their own clusters (PostgreSQL::Test::Cluster).
# No existing cluster is touched.  As root, missing Debian packages are
# installed first, and the TAP tests run as the unprivileged user "postgres"
# on a copy of the tree, since PostgreSQL refuses to run as root.
#
#   bash scripts/test.sh [--no-valgrind]
#
# Beside the pg_regress, isolation and TAP tests, scripts/valgrind.sh runs
# the pg_regress and isolation suites against a server under valgrind, in
# the background on a core of its own (it takes about as long as the TAP
# tests); --no-valgrind leaves it out.
set -euo pipefail

VALGRIND=1
[ "${1:-}" = --no-valgrind ] && VALGRIND=0

PGVER=${PGVER:-15}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"

. scripts/common.sh
install_packages postgresql-$PGVER postgresql-server-dev-$PGVER libipc-run-perl make gcc prometheus-postgres-exporter \
    prometheus-sql-exporter prometheus valgrind

step "versions (backfill.control, src/sql/, META.json, debian/changelog)"
bash scripts/check_versions.sh

step "links of README.md, CHANGELOG.md, doc/ and bench/ (scripts/check_links.sh)"
bash scripts/check_links.sh

step "alert rules (promtool check rules, promtool test rules)"
promtool check rules contrib/prometheus/backfill-rules.yml
(cd contrib/prometheus && promtool test rules backfill-rules.test.yml)

export PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
step "layers of src/ (scripts/check_layers.sh)"
bash scripts/check_layers.sh

step "build (warnings are errors)"
make -s clean
make -s PG_CFLAGS_EXTRA=-Werror
install_extension

status=0

vglog=
if [ $VALGRIND = 1 ]; then
    vglog=$(mktemp /tmp/backfill-valgrind-log.XXXXXX)
    step "valgrind: scripts/valgrind.sh --installed in the background (output in $vglog)"
    bash scripts/valgrind.sh --installed >"$vglog" 2>&1 &
    vgpid=$!
    # if this script stops early, so does the run under valgrind (its own
    # trap stops its server)
    trap 'kill "$vgpid" 2>/dev/null || true' EXIT
fi

# As root, the tests run on a copy of the tree owned by "postgres": the
# servers run as that user and write their results next to the tests.
workdir=$HERE
if [ "$(id -u)" = 0 ]; then
    workdir=$(mktemp -d /tmp/backfill-test.XXXXXX)
    cp -a "$HERE"/. "$workdir"/
    rm -rf "$workdir/.git"
    chown -R postgres "$workdir"
fi
run_as_tester() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

step "pg_regress and isolation tests"
# no lines of progress from run_job: their timing would land in the outputs.
# As an unprivileged user, pg_virtualenv keeps its cluster in a temporary
# directory; as root it would register a system-wide one
if ! (cd "$workdir" && run_as_tester pg_virtualenv -v "$PGVER" -o wal_level=logical -o "output_plugin_libraries=pgoutput,test_decoding,backfill" -o backfill.client_progress_interval=0 make installcheck TAP_TESTS=); then
    status=1
    for f in "$workdir/regression.diffs" "$workdir/output_iso/regression.diffs"; do
        [ -f "$f" ] && cat "$f"
    done
fi

step "TAP tests"
# --timer: each file's time in the log, to see where the time goes
run_as_tester make -C "$workdir" installcheck REGRESS= ISOLATION= PROVE_FLAGS=--timer || status=1

if [ -n "$vglog" ]; then
    step "valgrind (scripts/valgrind.sh --installed)"
    wait "$vgpid" || status=1
    trap - EXIT
    cat "$vglog"
    rm -f "$vglog"
fi

if [ "$workdir" != "$HERE" ]; then
    if [ $status = 0 ]; then rm -rf "$workdir"; else echo "test output kept in $workdir"; fi
fi

if [ $status = 0 ]; then
    step "all tests passed"
else
    step "some tests failed"
fi
exit $status
