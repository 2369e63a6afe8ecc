#!/bin/bash
# scripts/check_versions.sh: the versions the release carries agree.
#
#   bash scripts/check_versions.sh
#
# The extension's version X.Y is default_version in backfill.control; the
# newest target of the install and upgrade scripts must be X.Y too: those of
# released versions (src/sql/backfill--*.sql), each in the Makefile's DATA,
# and the upgrade to the current one (src/sql/update-A--X.Y.sql), assembled
# with the install script (src/sql/install.sql) into the Makefile's
# DATA_built, or the release would not install them.  The distribution (the PGXN zip and
# the Debian package) carries a semantic version X.Y.Z, as PGXN requires:
# META.json's version, the version META.json gives the extension under
# "provides", and the upstream part of the first version in debian/changelog
# (X.Y.Z-N) must be that same X.Y.Z, and its X.Y the extension's version.
# Needs only bash, sed, make, sort -V and perl's JSON::PP; no server.
# Prints every disagreement and exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

errors=()
fail() { errors+=("$*"); }
for f in backfill.control META.json debian/changelog; do
    [ -f "$f" ] || { echo "check_versions: $f is missing" >&2; exit 1; }
done

# backfill.control
ext=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" backfill.control)
[ -n "$ext" ] || fail "backfill.control: no default_version = '...' line"

# src/sql/backfill--X.sql installs X; src/sql/backfill--A--B.sql and
# src/sql/update-A--B.sql update A to B
newest=$(for f in src/sql/backfill--*.sql src/sql/update-*.sql; do
             basename "$f" .sql | sed 's/.*--//'
         done | sort -V | tail -1)
[ "$newest" = "$ext" ] ||
    fail "src/sql/: the newest install or upgrade script leads to version \"$newest\", backfill.control's default_version is \"$ext\""
make_var() {
    echo "print-var: ; @echo \$($1)" |
        make -s --no-print-directory -f Makefile -f - PG_CONFIG=true PGXS=/dev/null print-var
}
data=$(make_var DATA) || data=
for f in src/sql/backfill--*.sql; do
    case " $data " in
        *" $f "*) ;;
        *) fail "Makefile: $f is not in DATA, so no release would install it" ;;
    esac
done
data_built=$(make_var DATA_built) || data_built=
for f in "backfill--$ext.sql" $(for u in src/sql/update-*.sql; do basename "$u" | sed 's/^update-/backfill--/'; done); do
    case " $data_built " in
        *" $f "*) ;;
        *) fail "Makefile: $f is not in DATA_built, so no release would install it" ;;
    esac
done

# META.json
meta=$(perl -MJSON::PP -0777 -ne '
    my $m = eval { JSON::PP->new->decode($_) };
    if (!$m) { print "invalid: $@"; exit 0; }
    printf "%s %s %s", $m->{name} // "-", $m->{version} // "-",
           $m->{provides}{backfill}{version} // "-";' META.json)
dist=
case $meta in
    invalid:*) fail "META.json is not valid JSON: ${meta#invalid: }" ;;
    *)
        read -r meta_name dist provided <<<"$meta"
        [ "$meta_name" = backfill ] || fail "META.json: name is \"$meta_name\", not \"backfill\""
        [[ $dist =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]] ||
            fail "META.json: version \"$dist\" is not a semantic version X.Y.Z"
        [ "${dist%.*}" = "$ext" ] ||
            fail "META.json: version \"$dist\" is not a release of the extension's version \"$ext\" (backfill.control)"
        [ "$provided" = "$dist" ] ||
            fail "META.json: provides.backfill.version is \"$provided\", the distribution's version is \"$dist\""
        ;;
esac

# debian/changelog: "pg-backfill (X.Y.Z-N) distribution; urgency=..."
deb=$(sed -n '1s/^pg-backfill (\([^)]*\)).*/\1/p' debian/changelog)
if [ -z "$deb" ]; then
    fail "debian/changelog: the first line is not \"pg-backfill (<version>) ...\""
elif [ -n "$dist" ]; then
    [ "${deb%-*}" = "$dist" ] ||
        fail "debian/changelog: version \"$deb\" is not a Debian revision of \"$dist\" (META.json)"
else
    [ "${deb%.*-*}" = "$ext" ] ||
        fail "debian/changelog: version \"$deb\" is not a release of the extension's version \"$ext\" (backfill.control)"
fi

if [ ${#errors[@]} -gt 0 ]; then
    echo "check_versions: the versions disagree:" >&2
    printf '  %s\n' "${errors[@]}" >&2
    exit 1
fi
echo "check_versions: extension $ext, distribution $dist, Debian package $deb"
