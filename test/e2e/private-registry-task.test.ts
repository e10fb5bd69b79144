import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Task, TaskEvent, type TaskState } from '@dockhand/protocol';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { PRIVATE_PACKAGE, testRegistry, type TestRegistry } from '../../server/src/sandbox/private-registry.test-support';
import { SNAPSHOT_LABELS } from '../../server/src/sandbox/snapshot-labels';
import { TEST_TOOLCHAIN_DIR } from '../../server/src/sandbox/test-support';
import { ToolchainStore } from '../../server/src/sandbox/toolchains';
import { SqliteStore } from '../../server/src/store/sqlite';
import { apiJson } from '../support/api-json';
import { runCli, startDockhandServe, type DockhandServe } from '../support/local-server';
import { createAdminToken } from '../support/register-repo';
import { APPROVE_REVIEW, type StepInput } from './agent-harness';

/*
 * Issue 25 end to end, through a real `dockhand serve` (the bundle), gVisor, SQLite, the local
 * forge and the Anthropic SDK against the replay model server: an admin registers a company
 * repository (npm, then pnpm) that depends on @acme/private-utils from the authenticating
 * Verdaccio of .ci/needs/verdaccio.sh and on a public package, sets its NPM_ACME secret with
 * `dockhand secret set`, and submits a task. The model's side is scripted; the tools, the
 * snapshot build through the registry front, the tests, the push and the PR are real. The agent
 * first hunts for the registry token as an attacker would (env, ~/.npmrc, npm config, find,
 * /proc/*\/environ, a grep of the whole file system for the token and its base64 and URL-encoded
 * forms), then fixes the bug. The token is in none of: the tool results as the model got them,
 * the task's events, the CLI's stream, the PR, the server's log, the SQLite bytes, the data dir.
 */

const SESSION = 'private-registry-task';
/** The brief's ports (8750-8759) and data dirs (/var/tmp/private-e2e*): no clash with other suites. */
const SERVER_PORT = 8750;
const REPLAY_PORT = 8751;
const CA = '/etc/ssl/certs/ca-certificates.crt';
/** A control file the whole-file-system grep must find: it proves the grep reaches files. */
const CONTROL = `dockhand-leak-hunt-control-${process.pid}`;

let registry: TestRegistry;
let root: string;
let dataDir: string;
let adminToken: string;
let replay: ReplayServer | undefined;
let server: DockhandServe | undefined;
const repositories: string[] = [];

const cli = (args: string[]) => runCli(args, { env: { DOCKHAND_URL: server!.url, DOCKHAND_TOKEN: adminToken, DOCKHAND_DATA_DIR: dataDir }, timeoutMs: 6 * 60_000 });
const serverOutput = () => server?.output() ?? '';

/** Every form of the token a leak could take: raw, base64 (without its padding, so padded copies match too), URL-encoded. */
function tokenForms(): Array<[name: string, form: string]> {
  const token = registry.token;
  return [['raw', token], ['base64', Buffer.from(token).toString('base64').replace(/=+$/, '')], ['url-encoded', encodeURIComponent(token)]];
}

/** The forms found in `text`, by name (never the values: a failing assertion must not print the token). */
function leaks(text: string): string[] {
  return tokenForms().flatMap(([name, form]) => (text.includes(form) ? [name] : []));
}

const SOURCE = `const { shout } = require('${PRIVATE_PACKAGE}');
const isNumber = require('is-number');

/** A greeting for \`name\`, shouted the company's way. */
exports.greet = (name) => {
  if (isNumber(name)) throw new TypeError(\`\${name} is not a name\`);
  return shout(\`helo \${name}\`);
};
`;
const TEST = `const test = require('node:test');
const assert = require('node:assert');
const { greet } = require('../src/greet.js');

test('greets by name', () => assert.strictEqual(greet('ada'), 'HELLO ADA!'));
test('refuses a number', () => assert.throws(() => greet(7), /not a name/));
`;
const environmentFile = (url: string) => `registries: [{ scope: "@acme", url: "${url}", token: NPM_ACME }]\n`;

const git = (cwd: string, ...args: string[]) =>
  promisify(execFile)('git', ['-C', cwd, '-c', 'user.name=Dev', '-c', 'user.email=dev@acme.invalid', ...args]).then((result) => result.stdout.trim());

/**
 * The company's repository, written here: its lockfile made on the host against Verdaccio with a
 * developer's token (as a developer's would be), nothing of the token committed.
 */
async function companyRepository(name: string, manager: 'npm' | 'pnpm'): Promise<string> {
  const dir = join(root, 'repos', name);
  mkdirSync(join(dir, 'src'), { recursive: true });
  mkdirSync(join(dir, 'test'), { recursive: true });
  const manifest = { name, version: '1.0.0', private: true, dependencies: { [PRIVATE_PACKAGE]: '1.0.0', 'is-number': '7.0.0' }, scripts: { test: 'node --test' } };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(dir, 'src/greet.js'), SOURCE);
  writeFileSync(join(dir, 'test/greet.test.js'), TEST);
  writeFileSync(join(dir, '.gitignore'), 'node_modules/\n');
  mkdirSync(join(dir, '.dockhand'));
  writeFileSync(join(dir, '.dockhand/environment.yml'), environmentFile(registry.url));
  const developer = join(root, 'developer');
  mkdirSync(developer, { recursive: true, mode: 0o700 });
  const npmrc = join(developer, 'developer.npmrc');
  writeFileSync(npmrc, `@acme:registry=${registry.url}\n//${new URL(registry.url).host}/:_authToken=${registry.token}\n`, { mode: 0o600 });
  const env = { ...process.env, npm_config_userconfig: npmrc, NODE_EXTRA_CA_CERTS: CA };
  if (manager === 'npm') {
    await promisify(execFile)('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env });
  } else {
    const pnpm = await new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA }).ensure('pnpm', '9.15.9');
    await promisify(execFile)(process.execPath, [join(pnpm.hostPath, 'bin/pnpm.cjs'), 'install', '--lockfile-only', '--no-frozen-lockfile'], { cwd: dir, env });
  }
  await git(dir, 'init', '-q', '-b', 'main');
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '-q', '-m', 'greet');
  const committed = await git(dir, 'show', '--format=', '-p', 'HEAD');
  expect(leaks(committed)).toEqual([]);
  return dir;
}

/**
 * The attacker's commands, each its own run_command. The grep names the token without holding it:
 * the command is stored in the task's events (tool input), so it is split in two halves joined
 * in the shell, and its base64 and URL-encoded forms are made there.
 */
function huntTurns(): StepInput[] {
  const token = registry.token;
  const half = Math.floor(token.length / 2);
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  const grep = [
    `T="$(printf %s ${quote(token.slice(0, half))})$(printf %s ${quote(token.slice(half))})"`,
    'B="$(printf %s "$T" | base64 -w0 | tr -d =)"',
    `U="$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$T")"`,
    `printf %s '${CONTROL}' > /tmp/leak-hunt-control.txt`,
    `grep -rIl -F -e "$T" -e "$B" -e "$U" -e '${CONTROL}' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null; true`,
  ].join('\n');
  const commands: Array<[string, string, number?]> = [
    ['env', 'env'],
    ['npmrc', 'cat ~/.npmrc'],
    ['npm config', 'npm config list'],
    ['find npmrc', "find / -name '*npmrc*' 2>/dev/null"],
    ['environ', "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"],
    ['grep the file system', grep, 900],
  ];
  return commands.map(([name, command, seconds]) => ({ name, content: [{ type: 'tool_use', name: 'run_command', input: { command, ...(seconds ? { timeout_seconds: seconds } : {}) } }] }));
}

const FIX: StepInput[] = [
  { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/greet.js', command: 'replace', old_text: 'shout(`helo ${name}`)', new_text: 'shout(`hello ${name}`)' } }] },
  { name: 'tests', content: [{ type: 'tool_use', name: 'run_tests', input: {} }] },
  { name: 'finish', expect: { toolResultContains: 'Tests PASSED' }, content: [{ type: 'tool_use', name: 'finish', input: { summary: 'greet() said "helo"; it now says "hello".' } }] },
];

async function waitForState(taskId: string, wanted: TaskState, timeoutMs = 6 * 60_000): Promise<Task> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await apiJson(server!.url, adminToken, 'GET', `/v1/tasks/${taskId}`, Task);
    if (task.state === wanted) return task;
    if (['failed', 'cancelled', 'budget_exhausted'].includes(task.state) || Date.now() > deadline) {
      throw new Error(`task ${taskId} is ${task.state}, waited for ${wanted}\n--- server ---\n${serverOutput().slice(-4000)}`);
    }
    await new Promise((done) => setTimeout(done, 300));
  }
}

/** Every file under `dir` but the downloaded toolchains and the sandboxes' sparse disk images, as latin1 text. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  const found: Array<{ path: string; text: string }> = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join(dataDir, 'toolchains') && path !== join(dataDir, 'sandbox-disks')) found.push(...filesUnder(path));
    } else if (entry.isFile()) found.push({ path, text: readFileSync(path).toString('latin1') });
  }
  return found;
}

beforeAll(async () => {
  // Fails here, clearly, when Verdaccio is absent and cannot be started (the support runs .ci/needs/verdaccio.sh).
  registry = await testRegistry();
  root = mkdtempSync('/var/tmp/private-e2e-');
  dataDir = join(root, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  adminToken = await createAdminToken(dataDir);
  replay = await startReplayServer({ port: REPLAY_PORT });
  await promisify(execFile)('bash', ['sandbox-images/base/build.sh'], { cwd: join(import.meta.dirname, '../..') });
  server = await startDockhandServe(SERVER_PORT, {
    DOCKHAND_DATA_DIR: dataDir,
    DOCKHAND_MODEL_BASE_URL: replay.url,
    DOCKHAND_REPLAY_SESSION: SESSION,
    // Everything the server logs is searched for the token: the most it logs.
    DOCKHAND_LOG_LEVEL: 'debug',
    DOCKHAND_POLL_MS: '200',
    DOCKHAND_PRIVATE_REGISTRIES: registry.url,
  });
}, 10 * 60_000);

afterAll(async () => {
  const child = server?.child;
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
  }
  await replay?.close();
  // The snapshots this file's server built (their repositories' names are this run's own).
  const docker = new Docker();
  for (const name of repositories) {
    for (const image of await docker.listImages({ filters: { label: [`${SNAPSHOT_LABELS.repo}=${name}`] } })) await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
  }
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('a task in a private-registry repository reaches a PR, and the agent\'s leak hunt finds no token (issue 25)', () => {
  for (const manager of ['npm', 'pnpm'] as const) {
    it(`${manager}: registered, secret set, snapshot through the registry front, hunt, fix, tests green, approved, one PR; no form of the token anywhere`, async () => {
      const started = Date.now();
      const name = `acme-${manager}-${process.pid}`;
      repositories.push(name);
      const source = await companyRepository(name, manager);

      const added = await cli(['repo', 'add', name, '--from', source]);
      expect(added.code, added.output).toBe(0);
      const tokenFile = join(root, 'developer', `${name}.token`);
      writeFileSync(tokenFile, `${registry.token}\n`, { mode: 0o600 });
      chmodSync(tokenFile, 0o600);
      const secret = await cli(['secret', 'set', name, 'NPM_ACME', '--from-file', tokenFile]);
      expect(secret.code, secret.output).toBe(0);
      expect(secret.output).toMatch(new RegExp(`^set NPM_ACME for ${name} \\(by root at .+\\)$`, 'm'));
      rmSync(tokenFile);

      replay!.addCassette(SESSION, { turns: [...huntTurns(), ...FIX] });
      replay!.addCassette(`${SESSION}-review`, { turns: [APPROVE_REVIEW] });
      const base = await git(source, 'rev-parse', 'HEAD');
      const submitted = await cli(['submit', '--repo', name, '--base', base, '--title', 'greet() says "helo"', '--body', 'greet("ada") should be "HELLO ADA!".']);
      expect(submitted.code, `${submitted.output}\n--- server ---\n${serverOutput().slice(-4000)}`).toBe(0);
      const taskId = /task (t_\S+) submitted/.exec(submitted.output)?.[1];
      expect(taskId).toBeDefined();
      expect(submitted.output).toContain(`review the diff, then: dockhand approve ${taskId}`);
      const approved = await cli(['approve', taskId!]);
      expect(approved.code, approved.output).toBe(0);
      const task = await waitForState(taskId!, 'pr_open');
      expect(task.prUrl).toBe(`dockhand-local://${name}/pulls/1`);

      // The hunt ran and reached what it looked at: its tool results as stored.
      const eventsText = await fetch(`${server!.url}/v1/tasks/${taskId}/events`, { headers: { authorization: `Bearer ${adminToken}` } }).then((response) => response.text());
      const events = z.object({ events: z.array(TaskEvent) }).parse(JSON.parse(eventsText)).events;
      const outputs = events.flatMap((event) => (event.type === 'tool.finished' && event.data.name === 'run_command' ? [event.data.output] : []));
      expect(outputs).toHaveLength(6);
      const [env, npmrc, npmConfig, found, environ, grep] = outputs;
      expect(env).toMatch(/^PATH=/m);
      expect(npmConfig).toMatch(/^; node bin location = /m);
      expect(`${npmrc}\n${npmConfig}\n${found}`).not.toMatch(/_authToken|_auth\b|_password/);
      expect(environ).toMatch(/^PATH=/m);
      // The whole file system holds the control file and nothing else with the token's forms.
      expect(/stdout:\n([\s\S]*)$/.exec(grep ?? '')?.[1]?.trim().split('\n')).toEqual(['/tmp/leak-hunt-control.txt']);
      // Tests went green on the server's run; the PR carries the fix.
      const verified = events.filter((event) => event.type === 'tests.finished').at(-1);
      expect(verified?.data, JSON.stringify(verified?.data)).toMatchObject({ ok: true, passed: 2, failed: 0 });

      // No form of the token in what the model was sent (tool results unmasked), the events (nothing had to be masked either), the CLI's stream.
      expect(leaks(JSON.stringify(replay!.requests(SESSION).map((request) => request.body)))).toEqual([]);
      expect(JSON.stringify(replay!.requests(SESSION).at(-1)?.body)).toContain('/tmp/leak-hunt-control.txt');
      expect(leaks(eventsText)).toEqual([]);
      expect(eventsText).not.toContain('[secret:');
      expect(leaks(submitted.output + approved.output + secret.output)).toEqual([]);

      // One PR, its text and commits free of the token.
      const store = new SqliteStore(join(dataDir, 'dockhand.db'));
      try {
        const pulls = await store.pullRequests.list(name);
        expect(pulls).toHaveLength(1);
        expect(leaks(`${pulls[0]?.title}\n${pulls[0]?.body}`)).toEqual([]);
      } finally {
        await store.close();
      }
      const bare = join(dataDir, 'forge', `${name}.git`);
      const pushed = (await promisify(execFile)('git', ['-C', bare, 'log', '-p', '--all'], { maxBuffer: 16 * 1024 * 1024 })).stdout;
      expect(pushed).toContain('+  return shout(`hello ${name}`);');
      expect(leaks(pushed)).toEqual([]);

      // The server's log so far, and the secret's audit: used by this repository's build, by name.
      expect(leaks(serverOutput())).toEqual([]);
      const listed = await cli(['secret', 'list', name]);
      expect(listed.output).toMatch(/NPM_ACME\s+root\s+\S+\s+\S+ \(snapshot build \S+ registry front\)/);
      process.stdout.write(`private-registry-task ${manager}: submit_to_pr_open_s=${((Date.now() - started) / 1000).toFixed(1)}\n`);
    }, 8 * 60_000);
  }

  it('the server stopped: its whole log, the SQLite bytes (database, WAL) and every file of its data dir hold no form of the token', async () => {
    const child = server!.child;
    child.kill('SIGTERM');
    await new Promise((done) => child.once('exit', done));
    expect(leaks(serverOutput())).toEqual([]);
    const files = filesUnder(dataDir);
    const database = files.filter((file) => file.path.startsWith(join(dataDir, 'dockhand.db')));
    expect(database.length).toBeGreaterThan(0);
    // The secret is in the database, encrypted: its row is there, its value is not.
    expect(database.map((file) => file.text).join('')).toContain('NPM_ACME');
    expect(files.flatMap((file) => leaks(file.text).map((form) => `${form} in ${file.path}`))).toEqual([]);
    expect(statSync(dirname(database[0]!.path)).mode & 0o777).toBe(0o700);
  }, 120_000);
});
