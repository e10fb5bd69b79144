/**
 * Cost of the policy gate on a large diff, against the baseline of merely parsing that diff
 * with `diff`'s parsePatch (the least any diff check must do); and the masking path (what every
 * stored diff goes through) on 1, 4 and 16 MB diffs where every fourth line is a random secret,
 * which must grow linearly (issue 23: it grew with the square, 3.9 MB took 191 s). Prints
 * figures, then one JSON line.
 */
import { randomBytes } from 'node:crypto';
import { parsePatch } from 'diff';
import { checkPolicy } from '../server/src/policy/check';
import { maskDiff } from '../server/src/policy/mask';
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
/** A new file of `megabytes` MB: code lines, and every fourth line 64 random base64 characters (a finding each). */
function secretsDiff(megabytes: number): string {
  const lines: string[] = [];
  for (let size = 0, i = 0; size < megabytes * 1e6; i += 1) {
    const line = i % 4 === 0 ? randomBytes(48).toString('base64') : `  export function handle${i}(request: Request) { return request.value + ${i}; }`;
    lines.push(`+${line}`);
    size += line.length + 2;
  }
  return `diff --git a/data/big.txt b/data/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/data/big.txt\n@@ -0,0 +1,${lines.length} @@\n${lines.join('\n')}\n`;
}

/** Best of three: the machine is shared, and the slowest run measures the neighbours. */
function bestOf(run: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 3; i += 1) {
    const start = process.hrtime.bigint();
    run();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
  }
  return best;
}

const maskMs: Record<string, number> = {};
for (const megabytes of [1, 4, 16]) {
  const big = secretsDiff(megabytes);
  maskMs[`${megabytes}MB`] = Math.round(bestOf(() => maskDiff(big)));
}
const maskRatio = maskMs['16MB']! / maskMs['4MB']!;
console.log(`maskDiff (every 4th line a secret): 1 MB ${maskMs['1MB']} ms, 4 MB ${maskMs['4MB']} ms, 16 MB ${maskMs['16MB']} ms (16 MB / 4 MB = ${maskRatio.toFixed(2)}, linear is 4, target <= 5)`);
console.log(JSON.stringify({ bench: 'policy', addedLines: 20_000, parseMs: +parseMs.toFixed(2), checkMs: +checkMs.toFixed(2), ratioToParse: +(checkMs / parseMs).toFixed(2), linesPerSecond, violations: result.violations.length, maskMs, maskRatio16to4: +maskRatio.toFixed(2), maskLinear: maskRatio <= 5 }));
