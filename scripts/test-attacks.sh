#!/usr/bin/env bash
# npm run test:attacks: the hostile-ticket suite (test/attacks/), then its counts as the last line.
set -u
cd "$(dirname "$0")/.."
report="$(mktemp)"
DOCKHAND_ATTACKS_REPORT="$report" npx vitest run --project e2e test/attacks
code=$?
if [ -s "$report" ]; then cat "$report"; else echo '{"hostile_cases":0,"hostile_failed":1,"error":"the attack suite wrote no report"}'; code=1; fi
rm -f "$report"
exit $code
