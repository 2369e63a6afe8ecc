# scripts/common.sh: helpers shared by scripts/test.sh and scripts/demo.sh.

step() { printf '\n== %s\n' "$*"; }

# Install the Debian packages that are missing (as root), or say which are.
install_packages() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} = 0 ] && return 0
    if [ "$(id -u)" = 0 ]; then
        step "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "missing Debian packages: ${missing[*]}" >&2
        echo "install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
}

# Whether two builds of a library hold the same code: their debug
# information (and the build id made from it) names the directory they were
# built in, so compare without them.
same_code() {
    local a b
    a=$(mktemp) b=$(mktemp)
    objcopy --strip-debug --remove-section=.note.gnu.build-id "$1" "$a" 2>/dev/null &&
        objcopy --strip-debug --remove-section=.note.gnu.build-id "$2" "$b" 2>/dev/null &&
        cmp -s "$a" "$b"
    local same=$?
    rm -f "$a" "$b"
    return $same
}

# Whether every install and upgrade script is installed as it is here: the
# released ones, and those of the current version as make assembled them.
same_scripts() {
    local f
    for f in src/sql/backfill--*.sql backfill--*.sql; do
        cmp -s "$f" "$1/$(basename "$f")" || return 1
    done
}

# Install the built extension.  A normal user needs write access to
# PostgreSQL's directories, sudo, or the same build installed already.
install_extension() {
    local pkglib share
    pkglib=$($PG_CONFIG --pkglibdir)
    share=$($PG_CONFIG --sharedir)/extension
    if [ "$(id -u)" = 0 ] || [ -w "$pkglib" ]; then
        make -s install
    elif same_code backfill.so "$pkglib/backfill.so" &&
         cmp -s backfill.control "$share/backfill.control" &&
         same_scripts "$share"; then
        echo "this build of the extension is installed already"
    elif command -v sudo >/dev/null; then
        sudo make -s install
    else
        echo "cannot install the extension into $pkglib as $(id -un), and sudo is missing" >&2
        echo "install it as root first: make install PG_CONFIG=$PG_CONFIG" >&2
        exit 1
    fi
}
