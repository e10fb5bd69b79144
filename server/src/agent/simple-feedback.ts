import { z } from 'zod';
import type { Diagnostic, FeedbackEngine, TestCaseResult, TestReport } from '../feedback/types';
import type { Sandbox } from '../sandbox/types';
import { capOutput } from './tools/output';

/*
 * The fallback feedback engine: runs the repository's whole test command and counts results. It
 * has no test-impact analysis (scope 'selected' runs everything) and no diagnostics; the full
 * engine in server/src/feedback replaces it. It exists so the loop works on its own.
 */

const PackageJson = z.object({ scripts: z.record(z.string(), z.string()).optional() });
const NPM_PLACEHOLDER_TEST = /no test specified/;
const MODEL_OUTPUT_CHARS = 6000;

export interface TestCommand {
  command: string;
  runner: 'npm' | 'pytest';
}

export async function detectTestCommand(sandbox: Sandbox): Promise<TestCommand | undefined> {
  const packageJson = await sandbox.readFile('package.json').catch(() => undefined);
  if (packageJson !== undefined) {
    try {
      const parsed = PackageJson.safeParse(JSON.parse(packageJson.toString('utf8')));
      const test = parsed.success ? parsed.data.scripts?.test : undefined;
      if (test !== undefined && !NPM_PLACEHOLDER_TEST.test(test)) return { command: 'npm test --silent', runner: 'npm' };
    } catch {
      // An unparsable package.json is the agent's problem to fix, not a reason to guess a runner.
    }
  }
  const python = await sandbox.exec({
    cmd: ['rg', '--files', '--no-require-git', '-g', 'test_*.py', '-g', '*_test.py', '-g', 'pytest.ini', '-g', 'conftest.py'],
    timeoutMs: 30_000,
  });
  if (python.stdout.trim() !== '') return { command: 'python3 -m pytest -q -rA', runner: 'pytest' };
  return undefined;
}

export interface TestCounts {
  passed: number;
  failed: number;
  skipped: number;
}

function sumMatches(text: string, pattern: RegExp): number | undefined {
  let total: number | undefined;
  for (const match of text.matchAll(pattern)) total = (total ?? 0) + Number(match[1]);
  return total;
}

/** Counts from the summary lines of node --test (TAP or spec), pytest, jest, vitest and mocha. */
export function parseTestCounts(output: string): TestCounts | undefined {
  const nodePass = sumMatches(output, /^(?:#|ℹ) pass (\d+)$/gm);
  if (nodePass !== undefined) {
    return {
      passed: nodePass,
      failed: (sumMatches(output, /^(?:#|ℹ) fail (\d+)$/gm) ?? 0) + (sumMatches(output, /^(?:#|ℹ) cancelled (\d+)$/gm) ?? 0),
      skipped: (sumMatches(output, /^(?:#|ℹ) skipped (\d+)$/gm) ?? 0) + (sumMatches(output, /^(?:#|ℹ) todo (\d+)$/gm) ?? 0),
    };
  }
  const pytest = [...output.matchAll(/^=*\s*((?:\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed|deselected|warnings?)(?:, )?)+)\s+in [\d.]+s/gm)].pop();
  if (pytest?.[1] !== undefined) {
    const count = (word: RegExp) => sumMatches(pytest[1] ?? '', word) ?? 0;
    return {
      passed: count(/(\d+) (?:passed|xpassed)/g),
      failed: count(/(\d+) (?:failed|errors?)/g),
      skipped: count(/(\d+) (?:skipped|xfailed)/g),
    };
  }
  const jest = /^Tests:\s+(.*)$/m.exec(output);
  if (jest?.[1] !== undefined) {
    return {
      passed: sumMatches(jest[1], /(\d+) passed/g) ?? 0,
      failed: sumMatches(jest[1], /(\d+) failed/g) ?? 0,
      skipped: (sumMatches(jest[1], /(\d+) skipped/g) ?? 0) + (sumMatches(jest[1], /(\d+) todo/g) ?? 0),
    };
  }
  const vitest = /^\s*Tests\s+(.*\(\d+\))\s*$/m.exec(output);
  if (vitest?.[1] !== undefined) {
    return {
      passed: sumMatches(vitest[1], /(\d+) passed/g) ?? 0,
      failed: sumMatches(vitest[1], /(\d+) failed/g) ?? 0,
      skipped: sumMatches(vitest[1], /(\d+) skipped/g) ?? 0,
    };
  }
  const mochaPassing = sumMatches(output, /^\s*(\d+) passing/gm);
  if (mochaPassing !== undefined) {
    return {
      passed: mochaPassing,
      failed: sumMatches(output, /^\s*(\d+) failing/gm) ?? 0,
      skipped: sumMatches(output, /^\s*(\d+) pending/gm) ?? 0,
    };
  }
  return undefined;
}

/** Per-test outcomes where the format names them (TAP `ok`/`not ok`, pytest -rA). */
export function parseTestCases(output: string): TestCaseResult[] {
  const cases: TestCaseResult[] = [];
  for (const match of output.matchAll(/^(not ok|ok) \d+ - (.+?)(\s+# SKIP.*)?$/gm)) {
    const outcome = match[3] ? 'skipped' : match[1] === 'ok' ? 'passed' : 'failed';
    cases.push({ id: match[2] ?? '', outcome });
  }
  for (const match of output.matchAll(/^(PASSED|FAILED|SKIPPED|ERROR) (\S+)/gm)) {
    const word = match[1];
    const outcome = word === 'PASSED' ? 'passed' : word === 'SKIPPED' ? 'skipped' : 'failed';
    cases.push({ id: match[2] ?? '', file: (match[2] ?? '').split('::')[0], outcome });
  }
  return cases;
}

export class SimpleFeedbackEngine implements FeedbackEngine {
  constructor(private readonly options: { timeoutMs?: number } = {}) {}

  async runTests(sandbox: Sandbox, opts: { scope: 'selected' | 'full'; signal?: AbortSignal }): Promise<TestReport> {
    const started = performance.now();
    const detected = await detectTestCommand(sandbox);
    if (!detected) {
      return {
        command: '',
        scope: opts.scope,
        selectionReason: 'no test command found (no package.json test script, no pytest files)',
        passed: 0,
        failed: 0,
        skipped: 0,
        ok: true,
        quarantined: [],
        output: 'No tests found in this repository.',
        durationMs: performance.now() - started,
        cases: [],
        wholeCommand: true,
      };
    }
    const result = await sandbox.exec({
      cmd: ['bash', '-c', detected.command],
      timeoutMs: this.options.timeoutMs ?? 600_000,
      outputCapBytes: 512 * 1024,
      signal: opts.signal,
    });
    const combined = [result.stdout, result.stderr].filter(Boolean).join('\n');
    const counts = parseTestCounts(combined);
    const failed = counts?.failed ?? (result.exitCode === 0 ? 0 : 1);
    const ok = result.exitCode === 0 && !result.timedOut && failed === 0;
    const note = result.timedOut ? 'The test run timed out and was killed.\n' : '';
    return {
      command: detected.command,
      scope: opts.scope,
      selectionReason: 'simple engine: the whole suite',
      passed: counts?.passed ?? 0,
      failed,
      skipped: counts?.skipped ?? 0,
      ok,
      quarantined: [],
      output: capOutput(note + combined, MODEL_OUTPUT_CHARS).text,
      durationMs: performance.now() - started,
      cases: parseTestCases(combined),
      // It always runs everything: the verified stop need not run the full suite again.
      wholeCommand: true,
    };
  }

  async diagnostics(): Promise<Diagnostic[]> {
    return [];
  }
}
