#!/bin/bash
# assemble_sql.sh SOURCE
#
# Writes to standard output the extension script SOURCE stands for: SOURCE
# with each of its lines "\ir PART" replaced by the file PART (a path
# relative to SOURCE's folder), as psql's \ir would read it.  The install
# script of the current version and its upgrade script are assembled so from
# the same parts (src/sql/catalog/, functions/, views.sql, ...), each object
# defined once, in one part.
#
# A part is included whole, at most once per script, and holds no \ir of its
# own; a missing part, or one included twice, fails the build.
set -euo pipefail

source=$1
dir=$(dirname "$source")
declare -A seen=()
while IFS= read -r line || [ -n "$line" ]; do
    if [[ $line =~ ^\\ir[[:space:]]+([^[:space:]]+)[[:space:]]*$ ]]; then
        part=${BASH_REMATCH[1]}
        if [ -n "${seen[$part]:-}" ]; then
            echo "assemble_sql.sh: $source includes $part twice" >&2
            exit 1
        fi
        seen[$part]=1
        if [ ! -f "$dir/$part" ]; then
            echo "assemble_sql.sh: $source: no part $part" >&2
            exit 1
        fi
        if grep -q '^\\ir' "$dir/$part"; then
            echo "assemble_sql.sh: $dir/$part: a part includes no other" >&2
            exit 1
        fi
        cat "$dir/$part"
    else
        printf '%s\n' "$line"
    fi
done < "$source"
