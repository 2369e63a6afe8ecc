#!/bin/bash
# scripts/package.sh: build the Debian package, install it, test it, remove it.
#
#   bash scripts/package.sh      # as root, on a fresh clone; CI runs it
#
# 1. Installs the build dependencies from Debian (debhelper, build-essential,
#    postgresql-all, postgresql-server-dev-all) and lintian, and checks that
#    the versions agree.
# 2. Builds the source package and postgresql-15-backfill_<version>_<arch>.deb
#    with "dpkg-buildpackage -us -uc" (debian/rules: pg_buildext, one VPATH
#    build directory per PostgreSQL version) from a copy of the tree made of
#    the files git tracks or would track, so no build product or test output
#    gets in, and an upstream tarball of it; lintian checks both packages;
#    the packages are copied to packages/.
# 3. Removes a copy of the extension installed from source ("make install":
#    backfill.so, its bitcode, backfill.control and the SQL scripts), and a
#    package left installed by an earlier run, so the tests see only the
#    files of the package under test.
# 4. Installs the package with apt-get, checks that dpkg owns every file of
#    the extension and that they are as packaged (dpkg --verify).
# 5. Runs CREATE EXTENSION backfill in a throw-away cluster, and the
#    pg_regress and isolation suites with the package's own autopkgtest
#    (debian/tests/installcheck), as user "postgres" on a copy of the tree.
# 6. Purges the package and checks that none of its files is left.
# Whatever happens, the package is purged before the script exits, so the
# machine ends with no copy of the extension installed; "make install" (or
# scripts/test.sh, scripts/valgrind.sh) installs the source build again.
# Exits non-zero on any failure, keeping the build directory for a look.
set -euo pipefail

PGVER=${PGVER:-15}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
. scripts/common.sh

[ "$(id -u)" = 0 ] || { echo "scripts/package.sh installs packages: run it as root" >&2; exit 1; }

PKG=postgresql-$PGVER-backfill
export PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive

step "build dependencies"
install_packages build-essential debhelper git postgresql-common \
    postgresql-$PGVER postgresql-server-dev-$PGVER postgresql-all postgresql-server-dev-all lintian
bash scripts/check_versions.sh

version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
deb=${PKG}_${version}_${arch}.deb
BUILD=$(mktemp -d /tmp/backfill-package.XXXXXX)
chmod 755 "$BUILD" # apt reads the .deb as its sandbox user
installed=
cleanup() {
    local rc=$?
    if [ -n "$installed" ] && dpkg -s "$PKG" >/dev/null 2>&1; then
        "${APT[@]}" purge "$PKG" >/dev/null || true
    fi
    if [ $rc = 0 ]; then
        rm -rf "$BUILD"
    else
        step "failed; build directory kept in $BUILD"
    fi
}
trap cleanup EXIT

# A copy of the source tree: the files git tracks or would track (not those
# .gitignore names: objects, test results), or, outside a git checkout, all
# of them less what "make clean" removes.
copy_tree() {
    mkdir -p "$1"
    if git -C "$HERE" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$HERE" ls-files -z --cached --others --exclude-standard |
            tar -C "$HERE" --null --ignore-failed-read -T - -cf - | tar -C "$1" -xf -
    else
        cp -a "$HERE"/. "$1"/
        make -s -C "$1" clean
    fi
}

# The source package is the upstream tarball (the tree less debian/) and
# debian/ beside it, as "3.0 (quilt)" has it: lintian checks both packages
upstream=${version%-*}
src_dir="$BUILD/pg-backfill-$upstream"
step "dpkg-buildpackage -us -uc (source and binary; log: $BUILD/build.log)"
copy_tree "$src_dir"
tar -C "$BUILD" --exclude="pg-backfill-$upstream/debian" \
    -czf "$BUILD/pg-backfill_$upstream.orig.tar.gz" "pg-backfill-$upstream"
if ! (cd "$src_dir" && dpkg-buildpackage -us -uc) >"$BUILD/build.log" 2>&1; then
    tail -n 60 "$BUILD/build.log"
    exit 1
fi
grep -E '^dpkg-deb: building package' "$BUILD/build.log"
[ -f "$BUILD/$deb" ] || { echo "dpkg-buildpackage made no $deb" >&2; exit 1; }
mkdir -p packages
cp "$BUILD"/*.deb "$BUILD"/*.buildinfo "$BUILD"/*.changes packages/

step "lintian -I --pedantic (errors and warnings fail)"
lintian -I --pedantic --tag-display-limit 0 "$BUILD"/*.changes | tee "$BUILD/lintian.log" || true
if grep -E '^[EW]: ' "$BUILD/lintian.log"; then
    echo "lintian found the errors or warnings above" >&2
    exit 1
fi

step "dpkg -c $deb"
dpkg -c "$BUILD/$deb"

# the files of the extension in PostgreSQL's directories, whoever installed them
pkglib=$($PG_CONFIG --pkglibdir)
extdir=$($PG_CONFIG --sharedir)/extension
extension_files() {
    local f
    for f in "$pkglib/backfill.so" "$pkglib/bitcode/backfill" "$pkglib/bitcode/backfill.index.bc" \
             "$extdir"/backfill.control "$extdir"/backfill--*.sql; do
        [ -e "$f" ] && echo "$f"
    done
    return 0
}

step "removing the extension installed from source"
if dpkg -s "$PKG" >/dev/null 2>&1; then
    "${APT[@]}" purge "$PKG" >/dev/null
    echo "purged $PKG, left installed by an earlier run"
fi
for f in $(extension_files); do
    if owner=$(dpkg -S "$f" 2>/dev/null); then
        echo "$f belongs to ${owner%%:*}, not to a source install; remove that package first" >&2
        exit 1
    fi
    echo "removing $f"
    rm -rf -- "$f"
done

step "apt-get install ./$deb"
installed=1
"${APT[@]}" install "$BUILD/$deb" >"$BUILD/apt.log" 2>&1 || { cat "$BUILD/apt.log"; exit 1; }
grep -E '^(Unpacking|Setting up) ' "$BUILD/apt.log" || true
dpkg -s "$PKG" >/dev/null
dpkg -L "$PKG" > "$BUILD/files"
for f in $(extension_files); do
    [ -d "$f" ] && continue
    dpkg -S "$f" 2>/dev/null | grep -q "^$PKG: " || { echo "$f does not belong to $PKG" >&2; exit 1; }
done
dpkg --verify "$PKG"
echo "$(grep -c '' "$BUILD/files") paths of $PKG installed as packaged"

# the tests run as "postgres" (PostgreSQL refuses root) on a copy of the tree
work=$BUILD/test
copy_tree "$work"
chown -R postgres "$work"
as_postgres() { (cd "$work" && runuser -u postgres -- "$@"); }

step "CREATE EXTENSION backfill"
ext_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" backfill.control)
as_postgres pg_virtualenv -v "$PGVER" psql -X -A -t -q -v ON_ERROR_STOP=1 -o "$work/extversion" \
    -c 'CREATE EXTENSION backfill' \
    -c "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'backfill'"
got=$(cat "$work/extversion")
echo "extension backfill $got"
[ "$got" = "$ext_version" ] || { echo "CREATE EXTENSION made version \"$got\", not \"$ext_version\"" >&2; exit 1; }

step "pg_regress and isolation suites against the package (debian/tests/installcheck)"
as_postgres debian/tests/installcheck

step "apt-get purge $PKG"
"${APT[@]}" purge "$PKG" >"$BUILD/apt.log" 2>&1 || { cat "$BUILD/apt.log"; exit 1; }
grep -E '^(Removing|Purging) ' "$BUILD/apt.log" || true
installed=
if dpkg -s "$PKG" >/dev/null 2>&1; then
    echo "$PKG is still installed" >&2
    exit 1
fi
left=()
while read -r f; do
    # directories the package shares with others stay
    if [ -e "$f" ] && { [ ! -d "$f" ] || [[ $f == *backfill* ]]; }; then left+=("$f"); fi
done < "$BUILD/files"
while read -r f; do left+=("$f"); done < <(extension_files)
if [ ${#left[@]} -gt 0 ]; then
    echo "left behind by the purge:" >&2
    printf '  %s\n' "${left[@]}" | sort -u >&2
    exit 1
fi
ls -d "$pkglib"/backfill* "$pkglib"/bitcode/backfill* "$extdir"/backfill* /usr/share/doc/"$PKG" 2>&1 |
    sed 's/^/  /' || true

step "$deb built, installed, tested and removed in ${SECONDS}s; packages in packages/"
ls packages/
