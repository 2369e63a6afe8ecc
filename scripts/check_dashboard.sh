#!/bin/bash
# scripts/check_dashboard.sh: type-check contrib/grafana/backfill.json against
# Grafana's published dashboard schema (@grafana/schema, from the npm
# registry), as TypeScript checks an object literal: unknown keys, missing
# ones and values outside an enum are errors.
#
#   bash scripts/check_dashboard.sh        # needs node and npm, and the registry
#
# Not part of scripts/test.sh: CI has Debian's packages only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/backfill-dashboard.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --silent @grafana/schema typescript >/dev/null
{
    echo "import type { Dashboard } from '@grafana/schema';"
    echo "// the schema's enums as the strings a JSON file holds"
    echo 'type Json<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T'
    echo '  : T extends (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;'
    # on one line with its end: a line break before "satisfies" ends the statement
    printf 'export const dashboard = %s satisfies Json<Dashboard>;\n' "$(cat "$HERE/contrib/grafana/backfill.json")"
} > check.ts
npx tsc --noEmit --strict --module nodenext --moduleResolution nodenext check.ts
echo "contrib/grafana/backfill.json: valid for @grafana/schema $(node -p "require('@grafana/schema/package.json').version")"
