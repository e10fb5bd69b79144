import { describe, expect, it } from 'vitest';
import { selectableFiles, selectedPlan, wholeCommandPlan } from './suite-plan';
import { planTestCommand, splitChain } from './test-command';

const pkg = (scripts: Record<string, string>) => JSON.stringify({ name: 'x', scripts });

describe('the repository test command: which runner its script uses', () => {
  it('follows npm test into the script, keeps the runner words and drops a formatter pipe', () => {
    const plan = planTestCommand('npm test', pkg({ test: 'tape test/*.js | tap-spec' }));
    expect(plan.runner).toBe('tape');
    expect(plan.invocation?.paths.map((word) => word.raw)).toEqual(['test/*.js']);
    expect(plan.invocation?.formatter).toBe('tap-spec');
    expect(plan.expanded).toEqual(['test: tape test/*.js | tap-spec']);
    const whole = wholeCommandPlan(plan);
    expect(whole.command).toBe('npm test → tape test/*.js; report read without the formatter `tap-spec`');
    expect(whole.script).toContain('tape test/*.js');
    expect(whole.script).not.toContain('tap-spec');
  });

  it('detects every runner the issue names, through wrappers and script chains', () => {
    const runner = (test: string, command = 'npm test', extra: Record<string, string> = {}) => planTestCommand(command, pkg({ test, ...extra })).runner;
    expect(runner('vitest')).toBe('vitest');
    expect(runner('cross-env NODE_ENV=test jest --coverage')).toBe('jest');
    expect(runner('nyc mocha --require test/setup.js "test/**/*.spec.js"')).toBe('mocha');
    expect(runner('ava --verbose')).toBe('ava');
    expect(runner('node --test test/')).toBe('node-test');
    expect(runner('node --require ./setup.js --test')).toBe('node-test');
    expect(runner('node node_modules/jest/bin/jest.js')).toBe('jest');
    expect(runner('npm run lint && npm run test:unit', 'npm test', { lint: 'eslint .', 'test:unit': 'vitest run' })).toBe('vitest');
    expect(runner('', 'python3 -m pytest -x tests')).toBe('pytest');
    expect(runner('', 'pnpm test', { test: 'pnpm vitest run' })).toBe('vitest');
    expect(runner('make test')).toBe('unknown');
    expect(runner('./scripts/test.sh')).toBe('unknown');
    expect(runner('jest || true')).toBe('unknown');
    expect(runner('', 'npm run nope')).toBe('unknown');
    // A workspace run executes each package's own script, not the root one.
    expect(runner('jest', 'npm test --workspaces')).toBe('unknown');
    expect(runner('npm test --workspaces')).toBe('unknown');
  });

  it('keeps steps around the runner step, and npm pre-scripts', () => {
    const plan = planTestCommand('npm test', pkg({ pretest: 'npm run build', build: 'tsc -p .', test: 'jest --ci && node scripts/after.js' }));
    expect(plan.before).toEqual(['tsc -p .']);
    expect(plan.after).toEqual(['node scripts/after.js']);
    // pnpm does not run pre-scripts (since v7)
    expect(planTestCommand('pnpm test', pkg({ pretest: 'tsc', test: 'jest' })).before).toEqual([]);
  });

  it('tells option values from paths, and leaves out reporter options it replaces', () => {
    const plan = planTestCommand('npm test', pkg({ test: 'mocha --timeout 5000 --require test/setup.js --reporter spec "test/**/*.spec.js"' }));
    expect(plan.invocation?.flags.map((word) => word.raw)).toEqual(['--timeout', '5000', '--require', 'test/setup.js']);
    expect(plan.invocation?.paths.map((word) => word.raw)).toEqual(['"test/**/*.spec.js"']);
    const selected = selectedPlan(plan, [{ file: 'test/a.spec.js' }]);
    expect(selected.command).toBe('mocha --timeout 5000 --require test/setup.js --reporter json --reporter-option output=/tmp/dockhand-test-report.json test/a.spec.js');
  });

  it('passes arguments after npm test -- to the last step', () => {
    const plan = planTestCommand('npm test -- --runInBand', pkg({ test: 'jest' }));
    expect(plan.invocation?.flags.map((word) => word.value)).toEqual(['--runInBand']);
  });

  it('passes selected files only where the script points the runner', () => {
    const tape = planTestCommand('npm test', pkg({ test: 'tape test/*.js | tap-spec' }));
    expect(selectableFiles(tape, ['test/a.js', 'test/unit/b.js', 'tests/c.py'])).toEqual({ files: ['test/a.js'] });
    const built = planTestCommand('npm test', pkg({ test: 'tsc && node --test dist/test' }));
    expect(selectableFiles(built, ['test/a.test.ts'])).toMatchObject({ reason: expect.stringContaining('none of the selected test files') });
    const unknown = planTestCommand('npm test', pkg({ test: 'make check' }));
    expect(selectableFiles(unknown, ['test/a.js'])).toMatchObject({ reason: expect.stringContaining('not one Dockhand can pass files to') });
    expect(selectableFiles(planTestCommand('npx vitest run', undefined), ['src/a.test.ts'])).toEqual({ files: ['src/a.test.ts'] });
  });

  it('runs node --test with TAP, and vitest once rather than in watch mode', () => {
    expect(wholeCommandPlan(planTestCommand('npm test', pkg({ test: 'node --test --test-reporter=spec' }))).command).toBe('npm test → node --test --test-reporter=tap');
    expect(selectedPlan(planTestCommand('npm test', pkg({ test: 'vitest' })), [{ file: 'a.test.ts' }]).command).toBe(
      'vitest run --reporter=json --outputFile=/tmp/dockhand-test-report.json a.test.ts',
    );
  });

  it('runs a selection without the coverage wrapper, whose threshold is the whole suite\'s', () => {
    const c8 = planTestCommand('npm test', pkg({ test: 'c8 --100 node --test && tstyche' }));
    expect(selectedPlan(c8, [{ file: 'test/index.test.js' }]).command).toBe('node --test --test-reporter=tap test/index.test.js');
    expect(wholeCommandPlan(c8).command).toBe('npm test → c8 --100 node --test --test-reporter=tap && tstyche');
    const nyc = planTestCommand('npm test', pkg({ test: "npx nyc --check-coverage --lines=90 tape 'test/**/*.js'" }));
    expect(selectedPlan(nyc, [{ file: 'test/a.js' }]).command).toBe('tape test/a.js');
  });

  it('does not model what it cannot see', () => {
    expect(splitChain('jest $(cat files)')).toBeUndefined();
    expect(splitChain('jest > out.txt')).toBeUndefined();
    expect(splitChain('a && b; c | d')?.length).toBe(3);
  });
});
