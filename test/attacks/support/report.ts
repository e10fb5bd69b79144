import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Each attack file appends its counts as one JSON line (`part` names it) to the report file
 * `scripts/test-attacks.sh` gives; the script sums them into the one last line.
 */
export function writeReportPart(part: Record<string, unknown> & { part: string }): void {
  const file = process.env['DOCKHAND_ATTACKS_REPORT'] ?? join(tmpdir(), 'dockhand-attacks.jsonl');
  appendFileSync(file, `${JSON.stringify(part)}\n`);
  console.log(JSON.stringify(part));
}
