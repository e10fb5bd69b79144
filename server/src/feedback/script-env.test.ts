import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { scriptEnvironmentShell, type ScriptToolchain } from './script-env';
import { selectedPlan, selectedWorkspacePlans, wholeCommandPlan, wholeWorkspacePlans } from './suite-plan';
import { runSuite, type SuiteRun } from './suite-run';
import { planTestCommand } from './test-command';

/*
 * The steps of `npm test` run one by one by the engine get the environment npm would have given
 * them (FINDINGS F19: template-oss-check refused to run without npm_config_local_prefix). Each
 * repository here is real files on the host run by real bash and node through HostSandbox; its
 * scripts write what they were given to out/<event>.json.
 */

const NAMES = [
  'npm_lifecycle_event', 'npm_lifecycle_script', 'npm_package_json', 'npm_package_name', 'npm_package_version', 'npm_package_engines_node',
  'npm_package_config_port', 'npm_config_local_prefix', 'npm_config_global_prefix', 'npm_config_user_agent', 'npm_command', 'npm_execpath',
  'npm_node_execpath', 'NODE', 'INIT_CWD', 'PNPM_SCRIPT_SRC_DIR', 'PROJECT_CWD',
];
const DUMP = `const { mkdirSync, writeFileSync } = require('node:fs');
const seen = Object.fromEntries(${JSON.stringify(NAMES)}.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]]));
seen.PATH = process.env.PATH;
mkdirSync('out', { recursive: true });
writeFileSync('out/' + process.env.npm_lifecycle_event + '.json', JSON.stringify(seen));
`;
// What template-oss's bin/npm-template-check.js does first.
const TEMPLATE_CHECK = `if (!process.env.npm_config_local_prefix) { console.error('Error: This package requires npm >7.21.1'); process.exit(1); }
if (process.env.npm_lifecycle_event !== 'postlint') { console.error('not run as postlint: ' + process.env.npm_lifecycle_event); process.exit(1); }
`;
const TEST = `const { test } = require('node:test');
require('../dump.js');
test('runs', () => {});
`;
const NPM: ScriptToolchain = { node: '22.11.0', packageManager: { name: 'npm', version: '10.9.2' } };
const PLATFORM = `${process.platform} ${process.arch}`;

let repo: string;
beforeEach(() => {
  repo = realpathSync(mkdtempSync(join(tmpdir(), 'dockhand-script-env-')));
});
afterEach(() => rmSync(repo, { recursive: true, force: true }));

function write(files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  }
}

function seen(path: string): Record<string, string> {
  return JSON.parse(readFileSync(join(repo, path), 'utf8')) as Record<string, string>;
}

/** Where HostSandbox's PATH (the host's) finds a command, as bash's hash does (empty when it finds none). */
function onPath(command: string): string {
  return execFileSync('bash', ['-c', `command -v ${command} || true`], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: repo } }).trim();
}

async function run(plan: ReturnType<typeof wholeCommandPlan>): Promise<SuiteRun> {
  return runSuite(new HostSandbox(repo, 'HEAD'), plan, { files: new Set(['test/a.test.js', 'packages/a/test/a.test.js']), changed: [], timeoutSeconds: 60 });
}

function failing(result: SuiteRun): string[] {
  return result.cases.filter((testCase) => testCase.outcome === 'failed').map((testCase) => testCase.id);
}

const ini = {
  name: 'ini-like',
  version: '1.2.3',
  engines: { node: '>=18' },
  config: { port: 8080 },
  scripts: {
    pretest: 'node dump.js',
    test: 'node --test --test-reporter=tap test/',
    posttest: 'npm run lint',
    lint: 'node dump.js',
    postlint: 'node dump.js && node template-check.js',
  },
};

describe("npm test's steps run in npm's script environment", () => {
  it('pretest, test, posttest and the scripts it calls each get their own lifecycle event, the package and the local prefix', async () => {
    write({ 'package.json': JSON.stringify(ini), 'dump.js': DUMP, 'template-check.js': TEMPLATE_CHECK, 'test/a.test.js': TEST });
    const plan = wholeCommandPlan(planTestCommand('npm test', JSON.stringify(ini)), { toolchain: NPM });
    const result = await run(plan);
    // Before: 'node dump.js && node template-check.js (exited with 1)', npm's refusal in its output.
    expect(failing(result)).toEqual([]);
    expect(result.cases.filter((testCase) => testCase.outcome === 'passed').length).toBeGreaterThan(0);
    const node = onPath('node');
    const { PATH, ...pretest } = seen('out/pretest.json');
    expect(pretest).toEqual({
      npm_lifecycle_event: 'pretest',
      npm_lifecycle_script: 'node dump.js',
      npm_package_json: join(repo, 'package.json'),
      npm_package_name: 'ini-like',
      npm_package_version: '1.2.3',
      npm_package_engines_node: '>=18',
      npm_package_config_port: '8080',
      npm_config_local_prefix: repo,
      npm_config_global_prefix: dirname(dirname(node)),
      npm_config_user_agent: `npm/10.9.2 node/v22.11.0 ${PLATFORM} workspaces/false`,
      npm_command: 'test',
      npm_execpath: onPath('npm'),
      npm_node_execpath: node,
      NODE: node,
      INIT_CWD: repo,
    });
    // node_modules/.bin of the package and of every directory above it, as npm puts them.
    const bins = [];
    for (let dir = repo; dir !== '/'; dir = dirname(dir)) bins.push(join(dir, 'node_modules/.bin'));
    bins.push('/node_modules/.bin');
    expect(PATH?.split(':').slice(0, bins.length)).toEqual(bins);
    expect(seen('out/test.json')).toMatchObject({ npm_lifecycle_event: 'test', npm_lifecycle_script: 'node --test --test-reporter=tap test/', npm_command: 'test' });
    expect(seen('out/lint.json')).toMatchObject({ npm_lifecycle_event: 'lint', npm_lifecycle_script: 'node dump.js', npm_command: 'run-script' });
    expect(seen('out/postlint.json')).toMatchObject({ npm_lifecycle_event: 'postlint', npm_lifecycle_script: 'node dump.js && node template-check.js', npm_config_local_prefix: repo });
  });

  it("a selection runs the runner step alone, as before, in the test script's environment", async () => {
    write({ 'package.json': JSON.stringify(ini), 'dump.js': DUMP, 'template-check.js': TEMPLATE_CHECK, 'test/a.test.js': TEST });
    const plan = selectedPlan(planTestCommand('npm test -- --test-timeout=5000', JSON.stringify(ini)), [{ file: 'test/a.test.js' }], { toolchain: NPM });
    expect(plan.command).toBe('node --test --test-reporter=tap --test-timeout=5000 test/a.test.js');
    const result = await run(plan);
    expect(failing(result)).toEqual([]);
    // npm appends the arguments after -- to the script it runs.
    expect(seen('out/test.json')).toMatchObject({ npm_lifecycle_event: 'test', npm_lifecycle_script: 'node --test --test-reporter=tap test/ --test-timeout=5000', npm_config_local_prefix: repo });
    expect(() => seen('out/pretest.json')).toThrow();
  });

  it('a workspace member runs in its package (its package.json, its .bin first) under the root prefix', async () => {
    const root = { name: 'mono', private: true, workspaces: ['packages/*'], scripts: { test: 'npm test --workspaces' } };
    const member = { name: '@mono/a', version: '0.1.0', scripts: { test: 'node --test --test-reporter=tap test/', posttest: 'node ../../dump.js' } };
    write({ 'package.json': JSON.stringify(root), 'packages/a/package.json': JSON.stringify(member), 'dump.js': DUMP, 'packages/a/test/a.test.js': TEST.replace('../dump.js', '../../../dump.js') });
    const plan = planTestCommand('npm test', JSON.stringify(root), [{ dir: 'packages/a', packageJson: JSON.stringify(member) }]);
    const result = (await Promise.all(wholeWorkspacePlans(plan, { toolchain: NPM }).map(run)))[0];
    expect(result && failing(result)).toEqual([]);
    const member_ = join(repo, 'packages/a');
    const { PATH, ...posttest } = seen('packages/a/out/posttest.json');
    expect(posttest).toMatchObject({
      npm_lifecycle_event: 'posttest',
      npm_package_json: join(member_, 'package.json'),
      npm_package_name: '@mono/a',
      npm_config_local_prefix: repo,
      INIT_CWD: repo,
      npm_config_user_agent: `npm/10.9.2 node/v22.11.0 ${PLATFORM} workspaces/true`,
    });
    expect(PATH?.split(':').slice(0, 3)).toEqual([join(member_, 'node_modules/.bin'), join(repo, 'packages/node_modules/.bin'), join(repo, 'node_modules/.bin')]);
    const selected = selectedWorkspacePlans(plan, ['packages/a/test/a.test.js'], { toolchain: NPM });
    if ('reason' in selected) throw new Error(selected.reason);
    rmSync(join(member_, 'out'), { recursive: true });
    const rerun = selected.plans[0];
    expect(rerun && failing(await run(rerun))).toEqual([]);
    expect(seen('packages/a/out/test.json')).toMatchObject({ npm_lifecycle_event: 'test', npm_package_name: '@mono/a', npm_config_local_prefix: repo });
  });

  it("pnpm's scripts get pnpm's variables, not npm's prefix", async () => {
    const pkg = { name: 'p', version: '2.0.0', config: { port: 1 }, scripts: { test: 'node dump.js && node --test --test-reporter=tap test/' } };
    write({ 'package.json': JSON.stringify(pkg), 'dump.js': DUMP, 'test/a.test.js': TEST.replace("require('../dump.js');\n", '') });
    const plan = wholeCommandPlan(planTestCommand('pnpm test', JSON.stringify(pkg)), { toolchain: { node: '22.11.0', packageManager: { name: 'pnpm', version: '9.15.0' } } });
    expect(failing(await run(plan))).toEqual([]);
    const { PATH, ...test } = seen('out/test.json');
    expect(PATH?.startsWith(`${join(repo, 'node_modules/.bin')}:`)).toBe(true);
    expect(test).toEqual({
      npm_lifecycle_event: 'test',
      npm_lifecycle_script: 'node dump.js && node --test --test-reporter=tap test/',
      npm_package_json: join(repo, 'package.json'),
      npm_package_name: 'p',
      npm_package_version: '2.0.0',
      npm_config_user_agent: `pnpm/9.15.0 npm/? node/v22.11.0 ${PLATFORM}`,
      npm_execpath: onPath('pnpm'),
      npm_node_execpath: onPath('node'),
      NODE: onPath('node'),
      INIT_CWD: repo,
      PNPM_SCRIPT_SRC_DIR: repo,
    });
  });

  it("yarn berry's and classic's variables, by the recipe's package manager", () => {
    const env = (toolchain: ScriptToolchain) =>
      '\n' +
      execFileSync('bash', ['-c', `${scriptEnvironmentShell({ manager: 'yarn', event: 'test', script: 'jest', command: 'run-script' }, { npm_package_name: 'y', npm_package_config_a: 'b' }, toolchain, { dir: 'packages/y', workspaces: true })}env`], {
        cwd: (mkdirSync(join(repo, 'packages/y'), { recursive: true }), join(repo, 'packages/y')),
        // Not this process's environment: vitest under npm has npm's variables.
        // (bash on a socket reads HOME's .bashrc: HOME is the repository.)
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: repo },
        encoding: 'utf8',
      });
    const berry = env({ node: '20.1.0', packageManager: { name: 'yarn-berry', version: '4.5.0' } });
    expect(berry).toContain(`\nPROJECT_CWD=${repo}\n`);
    expect(berry).toContain(`\nINIT_CWD=${repo}\n`);
    expect(berry).toContain(`\nnpm_config_user_agent=yarn/4.5.0 npm/? node/v20.1.0 ${PLATFORM}\n`);
    expect(berry).not.toContain('npm_lifecycle_script=');
    expect(berry).not.toContain('npm_config_local_prefix=');
    const classic = env({ node: '20.1.0', packageManager: { name: 'yarn', version: '1.22.22' } });
    expect(classic).toContain('\nnpm_lifecycle_script=jest\n');
    expect(classic).toContain('\nnpm_package_config_a=b\n');
    expect(classic).toContain(`\nnpm_config_user_agent=yarn/1.22.22 npm/? node/v20.1.0 ${PLATFORM}\n`);
    expect(classic).not.toContain('PROJECT_CWD=');
  });
});
