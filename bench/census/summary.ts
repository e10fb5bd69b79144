/**
 * The census's arithmetic, without I/O (the unit test's subject): test counts read from a runner's
 * output, the results of one repository put together, the tables, and the one JSON line of the
 * proof (issue #22): repos, host_green, ready, ready_share, verdict_agreement, ran_no_test, opaque_verifications (#32),
 * median_cold_build_s, median_snapshot_start_s, blockers_by_cause.
 */

export interface Counts {
  passed?: number;
  failed?: number;
}

/** The colour codes runners print even where CI=true. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');

/**
 * Passed and failed tests as the runners' own summaries say them (jest, vitest, mocha, ava, tap,
 * node:test, uvu, pytest, unittest), summed over every summary in `output` (a workspace runner
 * prints one per package). Empty where no summary was printed.
 */
export function countsIn(output: string): Counts {
  let passed = 0;
  let failed = 0;
  let found = false;
  const add = (pass: number, fail: number) => {
    passed += pass;
    failed += fail;
    found = true;
  };
  const number = (pattern: RegExp, line: string) => Number(pattern.exec(line)?.[1] ?? 0);
  for (const raw of output.replace(ANSI, '').split('\n')) {
    // A workspace runner's prefix: turbo's `pkg:task: `, pnpm -r's `packages/x test: `.
    const line = raw.trim().replace(/^[\w@/.-]+:[\w:-]+: ?/, '').replace(/^[\w@/.-]+ [\w:-]+: /, '').trim();
    if (/^Tests:\s/.test(line) && /\d+ total/.test(line)) add(number(/(\d+) passed/, line), number(/(\d+) failed/, line)); // jest
    else if (/^Tests\s+.*\(\d+\)$/.test(line)) add(number(/(\d+) passed/, line), number(/(\d+) failed/, line)); // vitest
    else if (/^\d+ passing\b/.test(line)) add(number(/^(\d+)/, line), 0); // mocha
    else if (/^\d+ failing$/.test(line)) add(0, number(/^(\d+)/, line));
    else if (/^\d+ tests? passed$/.test(line)) add(number(/^(\d+)/, line), 0); // ava
    else if (/^\d+ tests? failed$/.test(line)) add(0, number(/^(\d+)/, line));
    else if (/^[#ℹ] pass \d+$/.test(line)) add(number(/(\d+)$/, line), 0); // node:test (tap and spec reporters)
    else if (/^[#ℹ] fail \d+$/.test(line)) add(0, number(/(\d+)$/, line));
    else if (/^# \{ total: \d+/.test(line)) add(number(/pass: (\d+)/, line), number(/fail: (\d+)/, line)); // tap 16+
    else if (/^Passed:\s+\d+$/.test(line)) add(number(/(\d+)$/, line), 0); // uvu
    else if (/^Failed:\s+\d+$/.test(line)) add(0, number(/(\d+)$/, line));
    else if (/^=+ .*\b(passed|failed|errors?)\b.* in [\d.]+s/.test(line)) add(number(/(\d+) passed/, line), number(/(\d+) failed/, line) + number(/(\d+) errors?/, line)); // pytest
    else if (/^Ran \d+ tests? in /.test(line)) add(number(/^Ran (\d+)/, line), 0); // unittest: failures below
    else if (/^FAILED \((failures|errors)=/.test(line)) {
      const bad = number(/failures=(\d+)/, line) + number(/errors=(\d+)/, line);
      add(-bad, bad);
    }
  }
  return found ? { passed: Math.max(0, passed), failed } : {};
}

export interface Blocker {
  problem: string;
  action: string;
}

export interface DockhandResult {
  kind: 'dockhand';
  repo: string;
  commit: string;
  at: string;
  /** `repo add` succeeded. */
  registered: boolean;
  ready: boolean;
  blockers: Blocker[];
  testCommand?: string;
  runner?: string;
  passed: number;
  failed: number;
  preExisting: number;
  /** The check ran no test and did not say it counted by exit status. */
  ranNoTest: boolean;
  /** What a change would be verified by (the readiness report's `tests.judgedBy`). */
  judgedBy?: 'tests' | 'exit status' | 'nothing';
  testsDetail?: string;
  coldBuildS?: number;
  snapshotStartS?: number;
  seconds: number;
  error?: string;
}

/** The host reference's fields the summary reads. */
export interface HostSummary {
  repo: string;
  green: boolean;
  ranTests: boolean;
  error?: string;
}

/** Causes a blocker's text is sorted into, first match wins; the table of blockers counts them. */
const CAUSES: Array<[string, RegExp]> = [
  ['not registered / no report', /^(repo add|no readiness report|check failed)/i],
  ['workspace not clean after install', /not clean|after the install/i],
  ['refused host during install', /refused|network|host .* (blocked|denied)|ENOTFOUND|EAI_AGAIN/i],
  ['python requirement / build backend', /pip|requirement|build backend|hatchling|flit|poetry|pdm|python/i],
  ['install failed', /install/i],
  ['test run stopped (timeout)', /stopped|timed? ?out|time limit/i],
  ['ran no test', /ran no test|no tests? (were )?(found|ran|run)/i],
  ['no test passes at the base', /no test passes|fail(s|ed)? at the base|failing at the base/i],
  ['test command not found / wrong', /command not found|unknown option|not found|ENOENT/i],
  ['snapshot build failed', /snapshot|image|build/i],
];

export function causeOf(problem: string): string {
  return CAUSES.find(([, pattern]) => pattern.test(problem))?.[0] ?? 'other';
}

export interface Row {
  repo: string;
  host?: HostSummary;
  dockhand?: DockhandResult;
}

export const agrees = (row: Row): boolean | undefined => (row.host && row.dockhand && !row.host.error ? row.dockhand.ready === row.host.green : undefined);

/**
 * Agreement where a red CI is matched by READY with the failures recorded as pre-existing (a
 * linter failing at the base, issue #22's "steps, not one chain"): the reading of the proof where
 * a failure the CI sees at the base is not the agent's.
 */
export const agreesCountingPreExisting = (row: Row): boolean | undefined => {
  const strict = agrees(row);
  return strict === false && row.host?.green === false && row.dockhand?.ready && row.dockhand.preExisting > 0 ? true : strict;
};

export function median(values: number[]): number | null {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? null) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

const round = (value: number | null, digits: number) => (value === null ? null : Number(value.toFixed(digits)));

export interface CensusSummary {
  repos: number;
  /** Repositories whose CI steps pass on the host, and how many of those Dockhand has checked (ready_share's denominator). */
  host_green: number;
  host_green_checked: number;
  ready: number;
  ready_share: number | null;
  verdict_agreement: number | null;
  /** The same, a red CI matched by READY with pre-existing failures counted as agreement. */
  verdict_agreement_counting_preexisting: number | null;
  ran_no_test: number;
  /** READY repositories whose changes would be verified only by a step's exit status (no per-test results). */
  opaque_verifications: number;
  median_cold_build_s: number | null;
  median_snapshot_start_s: number | null;
  blockers_by_cause: Record<string, number>;
  /** How many repositories have both results (the agreement's denominator). */
  compared: number;
}

/**
 * The proof's figures over `rows`: `ready` counts READY among host-green repositories Dockhand
 * checked, so `ready_share` = ready / host_green_checked; `verdict_agreement` is the share of repositories with both
 * results whose verdict is READY exactly where the host's CI steps pass; `ran_no_test` counts
 * checks that ran no test where the host ran tests. Blockers are counted once per repository and cause.
 */
export function summarize(rows: Row[]): CensusSummary {
  const compared = rows.filter((row) => agrees(row) !== undefined);
  const green = compared.filter((row) => row.host?.green);
  const ready = green.filter((row) => row.dockhand?.ready);
  const hostGreen = rows.filter((row) => row.host?.green && !row.host.error);
  const blockers: Record<string, number> = {};
  for (const row of rows) {
    const causes = new Set((row.dockhand?.blockers ?? []).map((blocker) => causeOf(blocker.problem)));
    if (row.dockhand?.error && causes.size === 0) causes.add(causeOf(row.dockhand.error));
    for (const cause of causes) blockers[cause] = (blockers[cause] ?? 0) + 1;
  }
  const checked = rows.map((row) => row.dockhand).filter((result) => result !== undefined);
  return {
    repos: rows.length,
    host_green: hostGreen.length,
    host_green_checked: green.length,
    ready: ready.length,
    ready_share: green.length ? round(ready.length / green.length, 3) : null,
    verdict_agreement: compared.length ? round(compared.filter((row) => agrees(row)).length / compared.length, 3) : null,
    verdict_agreement_counting_preexisting: compared.length ? round(compared.filter((row) => agreesCountingPreExisting(row)).length / compared.length, 3) : null,
    ran_no_test: rows.filter((row) => row.host?.ranTests && row.dockhand?.ranNoTest).length,
    opaque_verifications: rows.filter((row) => row.dockhand?.ready && row.dockhand.judgedBy === 'exit status').length,
    median_cold_build_s: round(median(checked.map((result) => result.coldBuildS ?? Number.NaN)), 1),
    median_snapshot_start_s: round(median(checked.map((result) => result.snapshotStartS ?? Number.NaN)), 2),
    blockers_by_cause: Object.fromEntries(Object.entries(blockers).sort((a, b) => b[1] - a[1])),
    compared: compared.length,
  };
}

const cell = (text: string, width: number) => (text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width));

/** The per-repository table and the table of blockers by cause, as lines. */
export function tables(rows: Row[], summary: CensusSummary): string[] {
  const lines = [`${cell('repo', 32)} ${cell('host CI', 8)} ${cell('verdict', 10)} ${cell('agree', 6)} ${'cold s'.padStart(7)} ${'start s'.padStart(8)}  blocker`];
  for (const row of rows) {
    const host = row.host ? (row.host.error ? 'error' : row.host.green ? 'green' : 'red') : '-';
    const verdict = row.dockhand ? (row.dockhand.ready ? 'READY' : 'NOT READY') : '-';
    const agree = agrees(row);
    const agreeText = agree === undefined ? '-' : agree ? 'yes' : agreesCountingPreExisting(row) ? 'pre' : 'NO';
    const blocker = row.dockhand?.blockers[0]?.problem ?? row.dockhand?.error ?? '';
    lines.push(`${cell(row.repo, 32)} ${cell(host, 8)} ${cell(verdict, 10)} ${cell(agreeText, 6)} ${(row.dockhand?.coldBuildS?.toFixed(1) ?? '-').padStart(7)} ${(row.dockhand?.snapshotStartS?.toFixed(2) ?? '-').padStart(8)}  ${blocker.replace(/\s+/g, ' ').slice(0, 110)}`);
  }
  lines.push('', `${cell('blockers by cause', 40)} repos`);
  for (const [cause, count] of Object.entries(summary.blockers_by_cause)) lines.push(`${cell(cause, 40)} ${count}`);
  return lines;
}
