#!/usr/bin/env node
// `npm start`: the whole main job on this machine, on embedded defaults, in one command.
//   1. host: Docker + gVisor (scripts/setup-host.sh, as root) and the sandbox base image
//   2. the server bundle (server/dist/cli.js), rebuilt when its sources are newer
//   3. the sample repository (examples/sample-repo) on the local forge, with its issue
//   4. the fleet server: real gVisor sandboxes, local forge, SQLite, and the model — Claude when
//      ANTHROPIC_API_KEY is set, else the replay model server playing examples/sample-repo.cassette.yaml
//   5. a token, the ticket submitted, the trajectory streamed, the diff shown and approved
//   6. the PR, the totals, the API URL + token; the server stops (unless --keep-serving)
// Options: --keep-serving, --data-dir <dir> (or DOCKHAND_DATA_DIR), --port <n>, --yes (approve
// without asking), --skip-host-setup. Not interactive when stdin is not a TTY (approves, saying so).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { missingDependencies } from './dependencies.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: options } = parseArgs({
  options: {
    'keep-serving': { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    port: { type: 'string' },
    yes: { type: 'boolean', short: 'y', default: false },
    'skip-host-setup': { type: 'boolean', default: false },
  },
  strict: true,
});

const REPO_NAME = 'sample-repo';
const SESSION = 'sample-repo';
const dataDir = resolve(root, options['data-dir'] ?? process.env.DOCKHAND_DATA_DIR ?? '.dockhand-data');
const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code) => (text) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
const bold = paint('1');
const dim = paint('2');
const green = paint('32');
const red = paint('31');
const cyan = paint('36');
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
const say = (line = '') => process.stdout.write(`${line}\n`);
const step = (n, text) => say(`${bold(`[${n}/6]`)} ${text} ${dim(`(${elapsed()})`)}`);

class StartError extends Error {
  constructor(message, hint) {
    super(message);
    this.hint = hint;
  }
}

/** Runs a command, streaming its output indented; throws with the command's tail on failure. */
function run(command, args, { env = process.env, cwd = root, quiet = false } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = (chunk) => {
      const text = chunk.toString();
      output = (output + text).slice(-8000);
      if (!quiet) for (const line of text.split('\n')) if (line.trim()) say(dim(`      ${line}`));
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(output);
      else reject(new StartError(`${command} ${args.join(' ')} exited with ${code}\n${output.trim().split('\n').slice(-15).join('\n')}`));
    });
  });
}

const git = (cwd, ...args) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

function hasCommit(repo, sha) {
  try {
    git(repo, 'cat-file', '-e', `${sha}^{commit}`);
    return true;
  } catch {
    return false;
  }
}

function dockerUsable() {
  try {
    const runtimes = execFileSync('docker', ['info', '--format', '{{json .Runtimes}}'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return runtimes.includes('"runsc"');
  } catch {
    return false;
  }
}

// 1. Host ---------------------------------------------------------------------------------------
async function prepareHost() {
  step(1, 'host: Docker engine + gVisor (runsc), sandbox base image');
  const isRoot = process.getuid?.() === 0;
  if (options['skip-host-setup'] || !isRoot) {
    if (!dockerUsable()) {
      throw new StartError(
        'the Docker engine with the gVisor runtime (runsc) is not usable here (`docker info` failed or does not list runsc)',
        'run once as root: sudo bash scripts/setup-host.sh   (then `npm start` again, as root or as a member of the docker group)',
      );
    }
    say(`      Docker + runsc ready${isRoot ? '' : ' (not root: host set-up skipped)'}`);
  } else {
    say(dim('      scripts/setup-host.sh (idempotent; installs docker.io, runsc, debootstrap on a fresh machine)'));
    await run('bash', ['scripts/setup-host.sh']);
  }
  say(dim('      sandbox-images/base/build.sh (cached by recipe hash; a few minutes the first time)'));
  await run('bash', ['sandbox-images/base/build.sh']);
}

// 2. Server bundle ------------------------------------------------------------------------------
function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    newest = Math.max(newest, newestMtime(join(path, entry)));
  }
  return newest;
}

async function buildServer() {
  step(2, 'server bundle: server/dist/cli.js');
  const bundle = join(root, 'server/dist/cli.js');
  const sources = Math.max(newestMtime(join(root, 'server/src')), newestMtime(join(root, 'protocol/src')), newestMtime(join(root, 'server/package.json')));
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= sources) {
    say('      up to date');
    return bundle;
  }
  await run(process.execPath, ['scripts/build-server.mjs'], { quiet: true });
  say('      built');
  return bundle;
}

// 3. Sample repository + issue on the local forge -------------------------------------------------
async function prepareSample(tsImport) {
  step(3, `sample repository "${REPO_NAME}" and its issue on the local forge`);
  const { LocalForge } = await tsImport('../server/src/forge/local-forge.ts', import.meta.url);
  // Only the repository and issue files are touched here; pull requests live in the server's store.
  const forge = new LocalForge({ dataDir: join(dataDir, 'forge'), store: {} });
  const bare = forge.repositoryPath(REPO_NAME);
  const upstream = join(dataDir, 'sample-upstream', `${REPO_NAME}.git`);
  const work = mkdtempSync(join(tmpdir(), 'dockhand-sample-'));
  let sampleSha;
  try {
    cpSync(join(root, 'examples/sample-repo'), work, { recursive: true });
    // A fixed identity and date: the same sample always makes the same commit, so a second run
    // finds it in the forge and starts from it again, even after its PR was merged.
    const env = { ...process.env, GIT_AUTHOR_NAME: 'Invoice Kit', GIT_AUTHOR_EMAIL: 'dev@invoice-kit.invalid', GIT_COMMITTER_NAME: 'Invoice Kit', GIT_COMMITTER_EMAIL: 'dev@invoice-kit.invalid', GIT_AUTHOR_DATE: '2026-11-01T09:00:00Z', GIT_COMMITTER_DATE: '2026-11-01T09:00:00Z' };
    execFileSync('git', ['init', '-q', '-b', 'main', work]);
    execFileSync('git', ['-C', work, 'add', '-A'], { env });
    execFileSync('git', ['-C', work, 'commit', '-q', '-m', 'invoice-kit: totals, VAT, payment terms'], { env });
    sampleSha = git(work, 'rev-parse', 'HEAD');
    // The team's repository the registration names (a source outside the local forge, whose own
    // copies the server refuses as sources); main follows examples/sample-repo.
    if (!existsSync(join(upstream, 'HEAD'))) {
      mkdirSync(dirname(upstream), { recursive: true });
      execFileSync('git', ['init', '-q', '--bare', '-b', 'main', upstream]);
    }
    execFileSync('git', ['-C', work, 'push', '-q', '--force', upstream, 'main:main']);
    if (!existsSync(join(bare, 'HEAD'))) {
      await forge.createRepository(REPO_NAME, work);
      say(`      created ${bare}`);
    } else if (!hasCommit(bare, sampleSha)) {
      // examples/sample-repo changed since this data dir was made: its main starts over from it.
      await forge.createRepository(REPO_NAME, work);
      say(`      updated ${bare}: main reset to the current examples/sample-repo`);
    } else {
      say(`      exists: ${bare}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const ticket = JSON.parse(readFileSync(join(root, 'examples/sample-repo.issue.json'), 'utf8'));
  let issue = (await forge.listOpenIssues(REPO_NAME)).find((open) => open.title === ticket.title);
  if (issue) say(`      issue #${issue.number} is open: ${issue.title}`);
  else {
    issue = await forge.createIssue(REPO_NAME, ticket);
    say(`      opened issue #${issue.number}: ${issue.title}`);
  }
  return { bare, upstream, issue, baseSha: sampleSha };
}

// 4. Model + server ------------------------------------------------------------------------------
function freePort(preferred) {
  const attempt = (port) => new Promise((resolvePort) => {
    const probe = createServer();
    probe.once('error', () => resolvePort(undefined));
    probe.listen(port, '127.0.0.1', () => {
      const { port: bound } = probe.address();
      probe.close(() => resolvePort(bound));
    });
  });
  return attempt(preferred).then((port) => port ?? attempt(0));
}

async function startModel(tsImport) {
  const key = process.env.ANTHROPIC_API_KEY ?? '';
  if (key !== '') {
    say(`      model: Claude through the Anthropic API (ANTHROPIC_API_KEY is set)`);
    return { env: { DOCKHAND_MODEL_API_KEY: key }, close: async () => undefined, replay: false };
  }
  const { startReplayServer } = await tsImport('../server/src/model/replay/server.ts', import.meta.url);
  const { loadCassette } = await tsImport('../server/src/model/replay/cassette.ts', import.meta.url);
  const replay = await startReplayServer({
    port: 0,
    cassettes: {
      [SESSION]: loadCassette(join(root, 'examples/sample-repo.cassette.yaml')),
      [`${SESSION}-review`]: loadCassette(join(root, 'examples/sample-repo.review.cassette.yaml')),
    },
  });
  say(`      model: replay model server ${replay.url} playing examples/sample-repo.cassette.yaml ${dim('(set ANTHROPIC_API_KEY to use Claude)')}`);
  return {
    env: { DOCKHAND_MODEL_BASE_URL: replay.url, DOCKHAND_REPLAY_SESSION: SESSION, DOCKHAND_MODEL_API_KEY: '' },
    close: () => replay.close(),
    replay: true,
  };
}

async function startFleet(bundle, modelEnv) {
  const port = await freePort(Number(options.port ?? process.env.DOCKHAND_PORT ?? 8737));
  const url = `http://127.0.0.1:${port}`;
  const logPath = join(dataDir, 'server.log');
  const env = {
    ...process.env,
    DOCKHAND_DATA_DIR: dataDir,
    DOCKHAND_HOST: '127.0.0.1',
    DOCKHAND_PORT: String(port),
    DOCKHAND_POLL_MS: '100',
    ...modelEnv,
  };
  const log = createWriteStream(logPath, { flags: 'a' });
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [bundle, 'serve'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  let exited;
  const exit = new Promise((resolveExit) => child.on('exit', (code, signal) => {
    exited = { code, signal };
    resolveExit(exited);
  }));
  const tail = () => {
    try {
      return readFileSync(logPath, 'utf8').trim().split('\n').slice(-10).join('\n');
    } catch {
      return '';
    }
  };
  for (let i = 0; ; i++) {
    if (exited) throw new StartError(`the server exited (${exited.code ?? exited.signal}) while starting:\n${tail()}`, `see ${logPath}`);
    try {
      const response = await fetch(`${url}/readyz`);
      const body = await response.json();
      if (response.ok) break;
      if (i > 100) throw new StartError(`the server is not ready: ${JSON.stringify(body.checks)}`, `see ${logPath}`);
    } catch (error) {
      if (error instanceof StartError) throw error;
      if (i > 150) throw new StartError(`the server did not answer on ${url}`, `see ${logPath}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  say(`      dockhand serve on ${url} ${dim(`(ready in ${((Date.now() - spawnedAt) / 1000).toFixed(1)}s; pid ${child.pid}; log ${logPath})`)}`);
  return {
    url,
    logPath,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exit;
      clearTimeout(timer);
      log.end();
    },
  };
}

function createToken(bundle) {
  const output = execFileSync(process.execPath, [bundle, 'token', 'create', '--local', '--user', 'developer', '--role', 'admin', '--label', 'npm start'], {
    cwd: root,
    env: { ...process.env, DOCKHAND_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  const token = output.trim().split('\n').at(-1);
  if (!token) throw new StartError(`token create printed nothing usable:\n${output}`);
  return token;
}

// 5. Submit, stream, review ----------------------------------------------------------------------
async function api(url, token, method, path, body) {
  const response = await fetch(new URL(path, url), {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw new StartError(`${method} ${path} answered ${response.status}: ${json?.error?.message ?? text}`, json?.error?.hint);
  return json;
}

const oneLine = (text, max = 110) => {
  const flat = String(text).replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

function toolArguments(name, input) {
  if (!input || typeof input !== 'object') return '';
  if (name === 'run_command') return input.command ?? '';
  if (name === 'search') return `${JSON.stringify(input.pattern)}${input.path ? ` in ${input.path}` : ''}`;
  if (name === 'edit_file') return `${input.command ?? 'replace'} ${input.path}`;
  if (name === 'finish') return '';
  if (name === 'run_tests') return input.scope ?? 'selected';
  return input.path ?? oneLine(JSON.stringify(input), 70);
}

function printDiff(diff) {
  for (const line of diff.replace(/\n$/, '').split('\n')) {
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('index ')) say(`      ${bold(line)}`);
    else if (line.startsWith('+')) say(`      ${green(line)}`);
    else if (line.startsWith('-')) say(`      ${red(line)}`);
    else if (line.startsWith('@@')) say(`      ${cyan(line)}`);
    else say(`      ${line}`);
  }
}

async function ask(question) {
  const readline = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await readline.question(question)).trim().toLowerCase();
  } finally {
    readline.close();
  }
}

/** Streams a task's events until `onEvent` returns true (replays from `after`, then live). */
function streamEvents(url, token, taskId, after, onEvent) {
  const wsUrl = new URL(`/v1/tasks/${encodeURIComponent(taskId)}/events?after=${after}`, url);
  wsUrl.protocol = 'ws:';
  return new Promise((resolveStream, reject) => {
    let last = after;
    let chain = Promise.resolve();
    const socket = new WebSocket(wsUrl, ['dockhand.v1'], { headers: { authorization: `Bearer ${token}` } });
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.kind === 'event') {
        // Handlers may prompt; events are handled one at a time, in order.
        chain = chain.then(async () => {
          if (frame.event.seq <= last) return;
          last = frame.event.seq;
          if ((await onEvent(frame.event)) === true) {
            socket.close();
            resolveStream(last);
          }
        }).catch((error) => {
          socket.close();
          reject(error);
        });
      } else if (frame.kind === 'resync') {
        socket.close();
        chain.then(() => streamEvents(url, token, taskId, last, onEvent)).then(resolveStream, reject);
      } else if (frame.kind === 'error') {
        reject(new StartError(`event stream: ${frame.error.code}: ${frame.error.message}`));
      }
    });
    socket.on('unexpected-response', (_request, response) => reject(new StartError(`event stream refused: HTTP ${response.statusCode}`)));
    socket.on('error', reject);
  });
}

const FINAL = new Set(['merged', 'closed', 'reverted', 'failed', 'cancelled', 'budget_exhausted']);

async function runTask(url, token, sample) {
  // A task names a registered repository (`dockhand repo add`) whose source is the sample's upstream;
  // the forge keeps its copy. Registering again with the same source is a refresh, so every run does it.
  const registration = await api(url, token, 'POST', '/v1/repos', { name: REPO_NAME, source: sample.upstream });
  say(`      registered ${registration.name} (default branch ${registration.defaultBranch}) from ${sample.upstream}`);
  step(5, `ticket #${sample.issue.number} → agent → review`);
  const interactive = process.stdin.isTTY && !options.yes;
  const { id } = await api(url, token, 'POST', '/v1/tasks', {
    ticket: { kind: 'issue', id: String(sample.issue.number), title: sample.issue.title, body: sample.issue.body, ...(sample.issue.url ? { url: sample.issue.url } : {}) },
    context: { repo: REPO_NAME, baseSha: sample.baseSha, branch: 'main' },
  });
  taskIds.push(id);
  say(`      task ${id} submitted (repo ${REPO_NAME} at ${sample.baseSha.slice(0, 12)})`);
  const totals = { turns: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
  let pr;
  let finalState;
  let failure;
  let reviewed = false;
  let rejectedByYou = false;
  await streamEvents(url, token, id, 0, async (event) => {
    const data = event.data;
    switch (event.type) {
      case 'task.state':
        if (data.state === 'awaiting_review' && !reviewed) {
          reviewed = true;
          const { diff } = await api(url, token, 'GET', `/v1/tasks/${id}/diff`);
          say(`    ${bold('awaiting review')} — the diff:`);
          printDiff(diff);
          let approve = true;
          if (interactive) {
            const answer = await ask(`    Approve and push? [Y/n] `);
            approve = answer === '' || answer === 'y' || answer === 'yes';
          } else {
            say(`    ${options.yes ? '--yes' : 'stdin is not a terminal'}: approving automatically`);
          }
          if (!approve) {
            await api(url, token, 'POST', `/v1/tasks/${id}/review`, { action: 'reject', comments: [] });
            rejectedByYou = true;
            say('    rejected by you; nothing is pushed');
          } else {
            await api(url, token, 'POST', `/v1/tasks/${id}/review`, { action: 'approve', comments: [] });
            say(`    approved by you → the server pushes once and opens the PR`);
          }
          return false;
        }
        say(`    ${dim('state')} ${data.state}${data.reason ? dim(` (${data.reason})`) : ''}`);
        if (data.state === 'pr_open' || FINAL.has(data.state)) {
          finalState = data.state;
          return true;
        }
        return false;
      case 'sandbox.ready':
        say(`    gVisor sandbox ready: ${data.source === 'cold' ? 'snapshot built for this repo' : data.source === 'snapshot' ? 'snapshot reused' : 'warm pool'} ${dim(`(${(data.startMs / 1000).toFixed(1)}s)`)}`);
        return false;
      case 'model.turn': {
        totals.turns += data.purpose === 'review' || data.purpose === 'compaction' ? 0 : 1;
        totals.input += data.usage.inputTokens;
        totals.output += data.usage.outputTokens;
        totals.cacheRead += data.usage.cacheReadTokens;
        totals.cacheWrite += data.usage.cacheWriteTokens;
        totals.cost += data.costUsd;
        const prompt = data.usage.inputTokens + data.usage.cacheReadTokens + data.usage.cacheWriteTokens;
        const share = prompt > 0 ? Math.round((100 * data.usage.cacheReadTokens) / prompt) : 0;
        const label = data.purpose === 'review' ? 'self-review' : `turn ${data.turn}`;
        say(`  ${cyan(label)} ${dim(`${data.model} · ${prompt} in (${share}% cached) · ${data.usage.outputTokens} out · $${data.costUsd.toFixed(4)} · total $${totals.cost.toFixed(4)}`)}`);
        return false;
      }
      case 'assistant.text':
        say(`    ${oneLine(data.text, 140)}`);
        return false;
      case 'tool.called':
        say(`    → ${bold(data.name)} ${toolArguments(data.name, data.input)}`);
        return false;
      case 'tool.finished':
        if (data.isError) say(`      ${red('✗')} ${oneLine(data.output)}`);
        return false;
      case 'file.changed':
        say(`      ✎ ${data.change} ${data.path}`);
        return false;
      case 'tests.finished':
        // Red while any test fails, also when every failure already fails at the base (then ok is
        // true and the failures do not block, but the ticket's own reproducing test is usually one).
        say(`      ${data.failed === 0 ? green('✓ tests green') : data.ok ? red('✗ tests red (pre-existing at the base, not blocking)') : red('✗ tests red')}: ${data.passed} passed, ${data.failed} failed ${dim(`(${data.scope === 'full' ? 'full suite' : 'tests affected by the change'}${data.command.length <= 60 ? `: ${data.command}` : ''})`)}`);
        return false;
      case 'review.finished':
        say(`    self-review: ${data.approved ? green('approved') : red(`problems: ${data.problems.join('; ')}`)}`);
        return false;
      case 'policy.checked':
        say(`    policy (${data.stage}): ${data.ok ? green('ok') : red(data.violations.map((v) => `${v.rule} ${v.path}`).join(', '))}`);
        return false;
      case 'approval.requested': {
        // The push approval is the review answered above.
        if (data.kind === 'push') return false;
        say(`    ${bold('approval needed')} (${data.kind}): ${data.command ?? data.reason ?? ''}`);
        let decision = 'denied';
        if (interactive) decision = ['y', 'yes'].includes(await ask('    Allow? [y/N] ')) ? 'approved' : 'denied';
        else say('    not a terminal: denied');
        await api(url, token, 'POST', `/v1/tasks/${id}/approvals/${data.approvalId}`, { decision });
        return false;
      }
      case 'budget.exceeded':
        say(red(`    budget exceeded: ${data.budget} (${data.used}/${data.limit})`));
        return false;
      case 'model.fell_back':
        say(`    model fell back ${data.from} → ${data.to}`);
        return false;
      case 'pr.opened':
        pr = data;
        say(`    ${green('PR opened')}: #${data.number} ${data.url}`);
        return false;
      case 'task.failed':
        failure = `${data.code}: ${data.message}`;
        say(red(`    failed: ${failure}`));
        return false;
      default:
        return false;
    }
  });
  const task = await api(url, token, 'GET', `/v1/tasks/${id}`);
  const usage = task.usage ?? {};
  const prompt = (usage.inputTokens ?? totals.input) + (usage.cacheReadTokens ?? totals.cacheRead) + (usage.cacheWriteTokens ?? totals.cacheWrite);
  const cacheShare = prompt > 0 ? (100 * (usage.cacheReadTokens ?? totals.cacheRead)) / prompt : 0;
  return {
    taskId: id,
    // Saying no at the review is a normal end, not a failure.
    ok: (finalState === 'pr_open' && pr !== undefined) || (rejectedByYou && finalState === 'cancelled'),
    state: finalState ?? task.state,
    print() {
      if (pr) {
        say(`${bold('Pull request')}  #${pr.number}  ${pr.url}`);
        say(`  branch   ${pr.branch} @ ${pr.headSha.slice(0, 12)}`);
        say(`  repo     ${sample.bare}  (the local forge's bare repository)`);
        say(`  see it   git -C ${sample.bare} log --stat main..${pr.branch}`);
      } else if (failure) {
        say(red(`  ${failure}`));
      }
      say(`${bold('Totals')}  ${totals.turns} agent turns + self-review (${usage.turns ?? totals.turns} model calls) · ${usage.inputTokens ?? totals.input} input + ${usage.cacheReadTokens ?? totals.cacheRead} cache-read + ${usage.cacheWriteTokens ?? totals.cacheWrite} cache-write tokens (${cacheShare.toFixed(0)}% of the prompt read from cache) · ${usage.outputTokens ?? totals.output} output · $${(usage.costUsd ?? totals.cost).toFixed(4)}`);
      say(`  task     ${id}  (${finalState ?? task.state})`);
    },
  };
}

const taskIds = [];

async function main() {
  say(bold('Dockhand quick start') + dim(` — data dir ${dataDir}`));
  const missing = missingDependencies(root);
  if (missing.length > 0) {
    throw new StartError(`dependencies changed since the last install: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''} not in node_modules`, 'run `npm ci`, then `npm start` again');
  }
  mkdirSync(dataDir, { recursive: true });
  await prepareHost();
  const bundle = await buildServer();
  const { tsImport } = await import('tsx/esm/api');
  const sample = await prepareSample(tsImport);
  step(4, 'fleet server (gVisor sandboxes, local forge, SQLite)');
  const token = createToken(bundle);
  say(`      API token created for user "developer" (admin)`);
  const model = await startModel(tsImport);
  let server;
  try {
    server = await startFleet(bundle, model.env);
  } catch (error) {
    await model.close();
    throw error;
  }
  // From here on Ctrl-C (or SIGTERM) stops the server before leaving.
  const interrupted = new Promise((resolveSignal) => {
    for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => resolveSignal(signal));
  });
  let exitCode = 1;
  try {
    const outcome = await Promise.race([
      runTask(server.url, token, sample),
      interrupted.then((signal) => {
        throw new StartError(`interrupted (${signal})`, 'the task stays in the server\'s store; `npm start -- --keep-serving` to look at it from VS Code');
      }),
    ]);
    exitCode = outcome.ok ? 0 : 1;
    step(6, outcome.ok ? green(outcome.state === 'pr_open' ? 'done' : `done: ${outcome.state}, nothing pushed`) : red(`the task ended ${outcome.state}`));
    outcome.print();
    say();
    say(`${bold('API')}    ${server.url}`);
    say(`${bold('Token')}  ${token}`);
    say(dim(`       VS Code: "Dockhand: Set server URL" → ${server.url}, then "Dockhand: Sign in" with the token${options['keep-serving'] ? '' : ' (start with `npm start -- --keep-serving` to keep the server up)'}`));
    say(dim(`       CLI: DOCKHAND_URL=${server.url} DOCKHAND_TOKEN=<token> node server/dist/cli.js tasks`));
    say(dim(`       the sample in an editor: git clone ${sample.bare} sample-repo && code sample-repo   (its origin is the forge's repo)`));
    if (options['keep-serving']) {
      say();
      say(`${bold('Serving')} until Ctrl-C${model.replay ? ' (the replay model only knows the sample ticket; set ANTHROPIC_API_KEY for your own)' : ''}.`);
      await interrupted;
    }
  } finally {
    say(dim(`stopping the server… (${elapsed()})`));
    await server.stop();
    await model.close();
  }
  const left = taskIds.flatMap(leftoverContainers);
  if (left.length > 0) {
    say(red(`containers left running: ${left.join(', ')}`));
    exitCode = 1;
  } else {
    say(dim(`server stopped, no sandbox containers left (${elapsed()} in all)`));
  }
  return exitCode;
}

/** Containers of this run's task (other servers on the machine may have their own). */
function leftoverContainers(taskId) {
  try {
    const out = execFileSync('docker', ['ps', '-aq', '--filter', `label=dockhand.task=${taskId}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`${red('error:')} ${error instanceof Error ? error.message : String(error)}\n`);
    if (error?.hint) process.stderr.write(`${bold('hint:')} ${error.hint}\n`);
    process.exit(1);
  },
);
