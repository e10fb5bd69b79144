import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeTestReport } from '../../server/src/agent/tools/run-tests';
import type { TestReport } from '../../server/src/feedback/types';
import { CORPUS, corpusRepo, ticketOf } from '../../test/corpus/repos';
import { CASSETTE_DIR, cassettesFor, greenAfterFix, render } from './cassettes';

/*
 * The corpus cassettes against the text the agent really reads after a run (describeTestReport):
 * the oracle's finish plays when the fix turned the planted bug's test green, also where the
 * repository has other tests that already fail at the base, and not while that test still fails.
 */

const report = (overrides: Partial<TestReport>): TestReport => ({
  command: 'npm test',
  scope: 'selected',
  selectionReason: '1 test file imports index.js',
  passed: 150,
  failed: 0,
  skipped: 0,
  ok: true,
  quarantined: [],
  output: '',
  durationMs: 1000,
  cases: [],
  ...overrides,
});

describe('corpus cassettes', () => {
  it('are up to date with test/corpus/repos.ts', () => {
    for (const repo of CORPUS) {
      for (const [session, cassette] of Object.entries(cassettesFor(repo))) {
        const committed = readFileSync(join(CASSETTE_DIR, `${session}.yaml`), 'utf8');
        expect(committed === render(session, cassette), `${session}.yaml is stale: run npx tsx scripts/corpus/cassettes.ts`).toBe(true);
      }
    }
  });

  it('every ticket names the test that reproduces its bug', () => {
    for (const repo of CORPUS) {
      const { body } = ticketOf(repo);
      expect(body, repo.id).toContain(repo.bug.reproducer.file);
      if (repo.bug.reproducer.test) expect(body, repo.id).toContain(repo.bug.reproducer.test);
    }
  });

  it("the oracle's finish follows a green run, or one whose only failures are pre-existing and not the planted bug's", () => {
    const minimist = new RegExp(greenAfterFix(corpusRepo('minimist')));
    expect(minimist.test(describeTestReport(report({})))).toBe(true);
    const otherPreExisting = report({ failed: 1, ok: true, preExisting: ['test/parse.js > unrelated case'] });
    expect(minimist.test(describeTestReport(otherPreExisting))).toBe(true);
    const bugStillThere = report({ failed: 2, ok: true, preExisting: ['nums > should be deeply equivalent', 'nums > should be deeply equivalent (2)'] });
    expect(minimist.test(describeTestReport(bugStillThere))).toBe(false);
    const newFailure = report({ failed: 2, ok: false, preExisting: ['test/parse.js > unrelated case'] });
    expect(minimist.test(describeTestReport(newFailure))).toBe(false);
    const red = report({ failed: 1, ok: false });
    expect(minimist.test(describeTestReport(red))).toBe(false);
  });
});
