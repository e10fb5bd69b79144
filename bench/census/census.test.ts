import { describe, expect, it } from 'vitest';
import { CENSUS, censusProblems, nodeMajor } from './repos';
import { countsIn, summarize, type DockhandResult, type Row } from './summary';

describe('the census list', () => {
  it('has at least 40 repositories, each at a full SHA, covering every tag issue #22 asks for', () => {
    expect(CENSUS.length).toBeGreaterThanOrEqual(40);
    expect(censusProblems(CENSUS)).toEqual([]);
  });

  it('names what a list lacks: a short SHA, a missing runner, no Node 16', () => {
    const trimmed = CENSUS.filter((entry) => entry.runner !== 'uvu' && nodeMajor(entry.ci.node) !== 16).map((entry, index) => (index === 0 ? { ...entry, commit: entry.commit.slice(0, 7) } : entry));
    const problems = censusProblems(trimmed);
    expect(problems).toContain(`${trimmed[0]?.repo}: commit must be a full 40-character SHA`);
    expect(problems).toContain('no repository with runner uvu');
    expect(problems).toContain('no repository asking for Node 16');
  });

  it("reads setup-node's aliases as of 2026-12", () => {
    expect([nodeMajor('lts/gallium'), nodeMajor('lts/-1'), nodeMajor('lts/*'), nodeMajor('22.x'), nodeMajor('20.9'), nodeMajor('.nvmrc')]).toEqual([16, 24, 26, 22, 20, undefined]);
  });
});

describe('test counts from runner output', () => {
  it.each([
    ['jest', 'Tests:       2 failed, 45 passed, 47 total', { passed: 45, failed: 2 }],
    ['vitest', ' Tests  3 failed | 118 passed (121)', { passed: 118, failed: 3 }],
    ['mocha', '  45 passing (20ms)\n  2 failing', { passed: 45, failed: 2 }],
    ['ava', '  40 tests passed', { passed: 40, failed: 0 }],
    ['node:test', 'ℹ tests 12\nℹ pass 11\nℹ fail 1', { passed: 11, failed: 1 }],
    ['tap', '# { total: 30, pass: 30 }', { passed: 30, failed: 0 }],
    ['uvu', '  Total:     32\n  Passed:    32\n  Skipped:   0', { passed: 32, failed: 0 }],
    ['pytest', '=========== 3 failed, 117 passed, 2 skipped in 1.20s ===========', { passed: 117, failed: 3 }],
    ['unittest', 'Ran 120 tests in 0.300s\n\nFAILED (failures=2, errors=1)', { passed: 117, failed: 3 }],
  ])('%s', (_runner, output, counts) => {
    expect(countsIn(`\u001b[32m${output}\u001b[0m`)).toEqual(counts);
  });

  it('sums the summaries of a workspace run and says nothing where none was printed', () => {
    expect(countsIn('ℹ pass 3\nℹ fail 0\nℹ pass 4\nℹ fail 1')).toEqual({ passed: 7, failed: 1 });
    expect(countsIn('lint ok\nbuild ok')).toEqual({});
    expect(countsIn('solid-js:test:       Tests  1 failed | 486 passed (487)\npackages/core test: ℹ pass 5')).toEqual({ passed: 491, failed: 1 });
  });
});

describe('the summary line', () => {
  const checked = (repo: string, ready: boolean, extra: Partial<DockhandResult> = {}): DockhandResult => ({
    kind: 'dockhand', repo, commit: 'c'.repeat(40), at: '', registered: true, ready, blockers: [], passed: 1, failed: 0, preExisting: 0, ranNoTest: false, seconds: 1, ...extra,
  });
  const rows: Row[] = [
    { repo: 'a/green-ready', host: { repo: 'a/green-ready', green: true, ranTests: true }, dockhand: checked('a/green-ready', true, { coldBuildS: 30, snapshotStartS: 1 }) },
    { repo: 'a/green-ready-2', host: { repo: 'a/green-ready-2', green: true, ranTests: true }, dockhand: checked('a/green-ready-2', true, { coldBuildS: 50, snapshotStartS: 2, judgedBy: 'exit status' }) },
    {
      repo: 'a/green-not-ready', host: { repo: 'a/green-not-ready', green: true, ranTests: true },
      dockhand: checked('a/green-not-ready', false, { ranNoTest: true, coldBuildS: 90, snapshotStartS: 4, blockers: [{ problem: 'the test command ran no test', action: 'x' }, { problem: 'it ran no tests again', action: 'y' }] }),
    },
    { repo: 'a/red-not-ready', host: { repo: 'a/red-not-ready', green: false, ranTests: true }, dockhand: checked('a/red-not-ready', false, { blockers: [{ problem: 'the install failed: npm ci exit 1', action: 'z' }] }) },
    { repo: 'a/red-ready', host: { repo: 'a/red-ready', green: false, ranTests: true }, dockhand: checked('a/red-ready', true, { preExisting: 1 }) },
    { repo: 'a/host-only', host: { repo: 'a/host-only', green: true, ranTests: true } },
  ];

  it('counts READY among host-green repositories, agreement over repositories with both results, medians, causes once per repository', () => {
    expect(summarize(rows)).toEqual({
      repos: 6,
      host_green: 4,
      host_green_checked: 3,
      ready: 2,
      ready_share: 0.667,
      verdict_agreement: 0.6,
      verdict_agreement_counting_preexisting: 0.8,
      ran_no_test: 1,
      opaque_verifications: 1,
      median_cold_build_s: 50,
      median_snapshot_start_s: 2,
      blockers_by_cause: { 'install failed': 1, 'ran no test': 1 },
      compared: 5,
    });
  });
});
