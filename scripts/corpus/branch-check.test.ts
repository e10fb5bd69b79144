import { describe, expect, it } from 'vitest';
import { branchGreen, testSteps } from '../../test/corpus/harness';

/*
 * The corpus's PR-branch check as its CI would count it (issue 22): the repository's own test
 * command as it is, step by step, at the base and on the branch. deep-equal's `npm test` runs
 * `aud --production` after the tests, which needs the network the sandbox does not give: it fails
 * at the base and on the fixed branch alike, and must not make the branch red.
 */

const LJHARB = JSON.stringify({ scripts: { pretest: 'npm run lint', lint: 'eslint --ext=js,mjs .', test: 'npm run tests-only', 'tests-only': "nyc tape 'test/**/*.js'", posttest: 'aud --production' } });

describe('testSteps', () => {
  it("expands npm's pre and post scripts into steps, as the feedback engine runs them", () => {
    expect(testSteps('npm test', undefined, LJHARB).map((step) => step.command)).toEqual(['eslint --ext=js,mjs .', "nyc tape 'test/**/*.js'", 'aud --production']);
  });

  it('splits a chain the package writes', () => {
    expect(testSteps('npm test', undefined, JSON.stringify({ scripts: { test: 'xo && ava && tsd' } })).map((step) => step.command)).toEqual(['xo', 'ava', 'tsd']);
  });

  it("takes the CI's steps when the recipe has them, in their directory and environment", () => {
    const steps = testSteps('a && b', [{ name: 'Unit', command: 'npm test', cwd: 'packages/x', env: { CI: 'true' } }, { name: 'Lint', command: 'npm run lint' }], LJHARB);
    expect(steps).toEqual([{ name: 'Unit', command: "cd packages/x && export CI=true; npm test" }, { name: 'Lint', command: 'npm run lint' }]);
  });

  it('runs a command it cannot split as one step', () => {
    expect(testSteps('make test || true', undefined, undefined)).toEqual([{ name: 'make test || true', command: 'make test || true' }]);
  });
});

describe('branchGreen', () => {
  it('is green when the red step turns green and a step red at both stays red (no network for npm audit)', () => {
    expect(branchGreen([{ base: 0, branch: 0 }, { base: 1, branch: 0 }, { base: 1, branch: 1 }])).toBe(true);
  });

  it('is red when a step green at the base fails on the branch', () => {
    expect(branchGreen([{ base: 0, branch: 1 }, { base: 1, branch: 0 }])).toBe(false);
  });

  it('is red when nothing that failed at the base passes on the branch (the fix changed nothing)', () => {
    expect(branchGreen([{ base: 1, branch: 1 }, { base: 0, branch: 0 }])).toBe(false);
  });
});
