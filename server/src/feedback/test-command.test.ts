import { describe, expect, it } from 'vitest';
import { toRepoPath } from './runners';
import { selectableFiles, selectedPlan, selectedWorkspacePlans, wholeCommandPlan, wholeWorkspacePlans } from './suite-plan';
import { planTestCommand, runsInWorkspaces, splitChain, workspaceCall } from './test-command';
import { workspaceDirs, workspaceGlobs } from './workspaces';

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
    // The formatter does not run (npm_lifecycle_script still shows the script as written).
    expect(whole.script).toMatch(/; tape test\/\*\.js$/);
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
    expect(plan.before.map((step) => step.text)).toEqual(['tsc -p .']);
    expect(plan.after.map((step) => step.text)).toEqual(['node scripts/after.js']);
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

  it("keeps npm's own options npm's: only positional words and what follows -- reach the script (census: tap got --ignore-scripts)", () => {
    const scripts = pkg({ pretest: 'npm run lint', lint: 'eslint .', test: 'tap test/*.js', posttest: 'node after.js' });
    const plan = planTestCommand('npm test --ignore-scripts', scripts);
    expect(plan.step?.text).toBe('tap test/*.js');
    expect(plan.invocation?.flags.map((word) => word.value)).toEqual([]);
    // npm's ignore-scripts runs the named script without its pre and post scripts.
    expect(plan.before).toEqual([]);
    expect(plan.after).toEqual([]);
    const mixed = planTestCommand('npm test --loglevel warn --ignore-scripts -- --bail test/a.js', pkg({ test: 'tap' }));
    expect(mixed.step?.text).toBe('tap --bail test/a.js');
    expect(mixed.invocation?.origin?.script).toBe('tap --bail test/a.js');
    // pnpm and yarn pass the words after the script's name to it as they are.
    expect(planTestCommand('pnpm test --bail', pkg({ test: 'tap' })).step?.text).toBe('tap --bail');
    expect(planTestCommand('npm run test:unit -- --bail', pkg({ 'test:unit': 'tap' })).step?.text).toBe('tap --bail');
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

describe('workspace commands: each package its own runner', () => {
  const members = [
    { dir: 'packages/a', packageJson: pkg({ test: 'mocha --check-leaks test/' }) },
    { dir: 'packages/b', packageJson: pkg({ test: 'jest' }) },
    { dir: 'packages/docs', packageJson: pkg({ build: 'tsc' }) },
  ];

  it('recognises the package managers’ workspace runs, and leaves what it does not model alone', () => {
    const words = (line: string) => splitChain(line)?.[0]?.segments[0] ?? [];
    expect(workspaceCall(words('npm test --workspaces'))).toEqual({ manager: 'npm', script: 'test' });
    expect(workspaceCall(words('npm run test:unit -ws --if-present'))).toEqual({ manager: 'npm', script: 'test:unit' });
    expect(workspaceCall(words('pnpm -r test'))).toEqual({ manager: 'pnpm', script: 'test' });
    expect(workspaceCall(words('pnpm --recursive run check'))).toEqual({ manager: 'pnpm', script: 'check' });
    expect(workspaceCall(words('yarn workspaces run test'))).toEqual({ manager: 'yarn', script: 'test' });
    expect(workspaceCall(words('yarn workspaces foreach -A --parallel run test'))).toEqual({ manager: 'yarn', script: 'test' });
    expect(workspaceCall(words('npm test'))).toBeUndefined();
    expect(workspaceCall(words('pnpm -r --filter ./packages/a test'))).toBeUndefined();
    expect(workspaceCall(words('npm test --workspace=packages/a'))).toBeUndefined();
    expect(workspaceCall(words('yarn workspaces foreach --since run test'))).toBeUndefined();
  });

  it('tells a command that runs in the workspace packages (their package.json files are read only then)', () => {
    expect(runsInWorkspaces('npm test', pkg({ test: 'npm run lint && npm test --workspaces', lint: 'eslint .' }))).toBe(true);
    expect(runsInWorkspaces('pnpm -r test', pkg({}))).toBe(true);
    expect(runsInWorkspaces('npm test', pkg({ test: 'jest' }))).toBe(false);
    expect(runsInWorkspaces('make test', pkg({}))).toBe(false);
  });

  it('plans each member that has the script with its own runner, in its own directory, the root steps around them', () => {
    const plan = planTestCommand('npm test', pkg({ test: 'npm run lint && npm test --workspaces', lint: 'eslint .' }), members);
    expect(plan.workspaces?.members.map((member) => [member.dir, member.plan.runner])).toEqual([['packages/a', 'mocha'], ['packages/b', 'jest']]);
    expect(plan.runner).toBe('unknown');
    const whole = wholeWorkspacePlans(plan);
    expect(whole.map((suite) => [suite.cwd, suite.runner])).toEqual([['packages/a', 'mocha'], ['packages/b', 'jest']]);
    expect(whole[0]?.before.map((step) => step.text)).toEqual(['eslint .']);
    expect(whole[0]?.script).toContain('cd packages/a || exit 127;');
    // The member's script as written; the side channel (NODE_OPTIONS' preload) reads mocha's results.
    expect(whole[0]?.script).toMatch(/NODE_OPTIONS="--require [^"]*preload\.cjs[\s\S]*; mocha --check-leaks test\/\n/);
    // The root's node_modules/.bin is on PATH too (binaries are hoisted).
    expect(whole[0]?.script.indexOf('export PATH="$PWD/node_modules/.bin:$PATH"; cd')).toBe(0);
    expect(whole[1]?.command).toMatch(/^packages\/b: npm run test → jest$/);
    // Without members the step stays a command only its exit status judges.
    expect(planTestCommand('npm test --workspaces', pkg({})).runner).toBe('unknown');
    expect(planTestCommand('npm test --workspaces', pkg({})).workspaces).toBeUndefined();
  });

  it('sends a selection to the members that hold its files, as paths relative to each member', () => {
    const plan = planTestCommand('npm test --workspaces', pkg({}), members);
    const selected = selectedWorkspacePlans(plan, ['packages/a/test/one.js', 'packages/b/src/x.test.js', 'test/root.js']);
    if ('reason' in selected) throw new Error(selected.reason);
    expect(selected.left).toBe(1);
    expect(selected.plans.map((suite) => suite.cwd)).toEqual(['packages/a', 'packages/b']);
    expect(selected.plans[0]?.script).toContain(' test/one.js');
    expect(selected.plans[0]?.script).not.toContain('packages/a/test/one.js');
    // A rerun of one failing test narrows within its member.
    const rerun = selected.plans[1]?.narrow?.([{ file: 'packages/b/src/x.test.js', names: ['adds'] }]);
    expect(rerun?.cwd).toBe('packages/b');
    expect(rerun?.script).toContain(' src/x.test.js');
    expect(selectedWorkspacePlans(plan, ['test/root.js'])).toHaveProperty('reason');
  });

  it('maps the paths a member runner prints back to repository paths', () => {
    const files = new Set(['packages/a/test/one.js', 'test/one.js']);
    expect(toRepoPath('test/one.js', files, 'packages/a')).toBe('packages/a/test/one.js');
    expect(toRepoPath('/workspace/packages/a/test/one.js', files, 'packages/a')).toBe('packages/a/test/one.js');
    expect(toRepoPath('test/one.js', files)).toBe('test/one.js');
  });

  it('finds the members from package.json workspaces or pnpm-workspace.yaml, with exclusions', () => {
    const files = ['package.json', 'packages/a/package.json', 'packages/b/package.json', 'packages/b/node_modules/x/package.json', 'packages/old/package.json', 'tools/c/package.json', 'packages/a/index.js'];
    expect(workspaceDirs(workspaceGlobs(JSON.stringify({ workspaces: ['packages/*', '!packages/old'] }), undefined), files)).toEqual(['packages/a', 'packages/b']);
    expect(workspaceDirs(workspaceGlobs(JSON.stringify({ workspaces: { packages: ['tools/*'] } }), undefined), files)).toEqual(['tools/c']);
    expect(workspaceDirs(workspaceGlobs(undefined, "packages:\n  - 'packages/**'\n  - '!**/old'\n"), files)).toEqual(['packages/a', 'packages/b']);
    expect(workspaceGlobs('not json', ': not yaml: [')).toEqual([]);
  });
});
