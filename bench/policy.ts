/**
 * Cost of the policy gate on a large diff, against the baseline of merely parsing that diff
 * with `diff`'s parsePatch (the least any diff check must do). Prints figures, then one JSON line.
 */
import { parsePatch } from 'diff';
import { checkPolicy } from '../server/src/policy/check';
import { samples } from '../server/src/policy/testing/samples';

function makeDiff(files: number, linesPerFile: number): string {
  const random = samples(1);
  const parts: string[] = [];
  for (let f = 0; f < files; f += 1) {
    const lines: string[] = [];
    for (let i = 0; i < linesPerFile; i += 1) {
      // Realistic code: identifiers, strings, numbers, an occasional hash and long word.
      lines.push(
        i % 50 === 0
          ? `  const checksum${i} = "${random.pick('0123456789abcdef', 64)}"; // sha256 of the fixture`
          : `  export function handleRequest${i}(request: Request, options = { retries: ${i % 7}, label: "item-${i}" }) { return request; }`,
      );
    }
    parts.push(
      [`diff --git a/src/module${f}.ts b/src/module${f}.ts`, 'new file mode 100644', '--- /dev/null', `+++ b/src/module${f}.ts`, `@@ -0,0 +1,${lines.length} @@`, ...lines.map((l) => `+${l}`), ''].join('\n'),
    );
  }
  return parts.join('');
}

function timeIt(run: () => void, repeats: number): number {
  run(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < repeats; i += 1) run();
  return Number(process.hrtime.bigint() - start) / 1e6 / repeats;
}

const diff = makeDiff(40, 500); // 20,000 added lines, ~2.4 MB
const repeats = 5;
const parseMs = timeIt(() => parsePatch(diff), repeats);
const checkMs = timeIt(() => checkPolicy({ diff, allowTestEdits: false, stage: 'push' }), repeats);
const result = checkPolicy({ diff, allowTestEdits: false, stage: 'push' });
const linesPerSecond = Math.round(20_000 / (checkMs / 1000));

console.log(`diff: 40 files, 20000 added lines, ${(diff.length / 1e6).toFixed(1)} MB`);
console.log(`parsePatch only (baseline): ${parseMs.toFixed(1)} ms`);
console.log(`checkPolicy:                ${checkMs.toFixed(1)} ms (${(checkMs / parseMs).toFixed(1)}x baseline, ${linesPerSecond} lines/s)`);
console.log(`violations: ${result.violations.map((v) => v.rule).join(', ') || 'none'}`);
console.log(JSON.stringify({ bench: 'policy', addedLines: 20_000, parseMs: +parseMs.toFixed(2), checkMs: +checkMs.toFixed(2), ratioToParse: +(checkMs / parseMs).toFixed(2), linesPerSecond, violations: result.violations.length }));
