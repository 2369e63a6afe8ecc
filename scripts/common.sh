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

# Run a command that writes into PostgreSQL's installation directories.
as_installer() {
    if [ "$(id -u)" = 0 ] || [ -w "$($PG_CONFIG --pkglibdir)" ]; then
        "$@"
    else
        sudo "$@"
    fi
}
