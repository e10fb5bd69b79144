/**
 * Runs corpus repositories through a real `dockhand serve` (gVisor sandboxes, SQLite, the local
 * forge, the replay model): shared by `npm run bench:repos` and the CI check in this folder.
 *
 * The replay model sits behind a small router: every task's ticket ends with a reference line
 * (`corpus task <id>-<kind>`), and the router sends each Messages API request to the cassette
 * session of that task (`<id>-<kind>`, or `<id>-<kind>-review` for the self-review call, which
 * the server makes with the key `replay:<session>-review`). One server thus plays every
 * repository's oracle and null cassettes.
 */
import { appendFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { loadCassette } from '../../server/src/model/replay/cassette';
import { startReplayServer } from '../../server/src/model/replay/server';
import type { CorpusEntry } from '../../scripts/corpus/build';
import { packageScripts, resolveChain, stepText } from '../../server/src/feedback/test-command';
import { shellQuote } from '../../server/src/feedback/runners';
import { corpusRepo, ticketOf } from './repos';
import { freePort, runCli, startDockhandServe, type DockhandServe } from '../support/local-server';

const ROOT = resolve(import.meta.dirname, '../..');
const CASSETTES = join(ROOT, 'test/corpus/cassettes');
export type TaskKind = 'oracle' | 'null';

export interface CorpusServer {
  url: string;
  token: string;
  dataDir: string;
  serve: DockhandServe;
  /** Runs the dockhand CLI against this server and data dir. */
  cli(args: string[], timeoutMs?: number): Promise<{ code: number; output: string; seconds: number }>;
  close(): Promise<void>;
}

function startRouter(target: string): Promise<{ url: string; server: Server }> {
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      const task = /corpus task ([\w.-]+-(?:oracle|null))\b/.exec(body.toString('utf8'))?.[1];
      const key = String(incoming.headers['x-api-key'] ?? incoming.headers.authorization ?? '');
      const headers: Record<string, string | string[] | undefined> = { ...incoming.headers, host: new URL(target).host };
      if (task) headers['x-replay-session'] = `${task}${key.endsWith('-review') ? '-review' : ''}`;
      const forward = httpRequest(new URL(incoming.url ?? '/', target), { method: incoming.method, headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      });
      forward.on('error', (error) => {
        outgoing.writeHead(502, { 'content-type': 'application/json' });
        outgoing.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: `corpus router: ${error.message}` } }));
      });
      forward.end(body);
    });
  });
  return new Promise((done) => server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    done({ url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, server });
  }));
}

// The CLI as it ships (the esbuild bundle): under tsx at load 20 one `repo add` died in tsx's own pipe (F14).
const cli = (args: string[], env: Record<string, string>, timeoutMs: number) => runCli(args, { env, timeoutMs });

/** A server with every cassette of `ids` loaded. */
export async function startCorpusServer(options: { dataDir: string; ids: string[]; concurrency?: number }): Promise<CorpusServer> {
  const cassettes: Record<string, ReturnType<typeof loadCassette>> = {};
  for (const id of options.ids) {
    for (const kind of ['oracle', 'null'] as const) {
      cassettes[`${id}-${kind}`] = loadCassette(join(CASSETTES, `${id}-${kind}.yaml`));
      cassettes[`${id}-${kind}-review`] = loadCassette(join(CASSETTES, `${id}-${kind}-review.yaml`));
    }
  }
  const replay = await startReplayServer({ port: 0, cassettes });
  const router = await startRouter(replay.url);
  const baseEnv = { DOCKHAND_DATA_DIR: options.dataDir, NO_COLOR: '1' };
  const created = await cli(['token', 'create', '--user', 'corpus', '--role', 'admin', '--label', 'corpus'], baseEnv, 240_000);
  const token = created.output.trim().split('\n').at(-1) ?? '';
  if (created.code !== 0 || !token.startsWith('dh_')) throw new Error(`token create failed (exit ${created.code} after ${created.seconds.toFixed(0)} s):\n${created.output}`);
  const serveEnv = {
    ...baseEnv,
    DOCKHAND_MODEL_BASE_URL: router.url,
    DOCKHAND_REPLAY_SESSION: 'corpus',
    DOCKHAND_MODEL_API_KEY: '',
    ANTHROPIC_API_KEY: '',
    DOCKHAND_POLL_MS: '100',
    DOCKHAND_CONCURRENCY: String(options.concurrency ?? 2),
  };
  const serve = await startDockhandServe(await freePort(), serveEnv);
  // The server's log beside its data, for a look after the fact (the bench's output names it).
  const log = join(options.dataDir, 'server.log');
  appendFileSync(log, serve.output());
  serve.child.stdout?.on('data', (chunk: Buffer) => appendFileSync(log, chunk));
  serve.child.stderr?.on('data', (chunk: Buffer) => appendFileSync(log, chunk));
  const clientEnv = { ...baseEnv, DOCKHAND_URL: serve.url, DOCKHAND_TOKEN: token };
  return {
    url: serve.url,
    token,
    dataDir: options.dataDir,
    serve,
    cli: (args, timeoutMs = 30 * 60_000) => cli(args, clientEnv, timeoutMs),
    async close() {
      serve.child.kill('SIGTERM');
      await new Promise((done) => {
        const timer = setTimeout(() => {
          serve.child.kill('SIGKILL');
          done(undefined);
        }, 30_000);
        serve.child.once('exit', () => {
          clearTimeout(timer);
          done(undefined);
        });
      });
      await new Promise((done) => router.server.close(() => done(undefined)));
      await replay.close();
    },
  };
}

async function api(server: CorpusServer, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(new URL(path, server.url), {
    method,
    headers: { authorization: `Bearer ${server.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

const record = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null ? Object.fromEntries(Object.entries(value)) : {});

export interface TaskOutcome {
  kind: TaskKind;
  taskId?: string;
  state: string;
  seconds: number;
  pr?: { number: number; branch: string; headSha: string };
  sandbox: { source: string; startMs: number }[];
  /** An infrastructure result (runner could not start, snapshot build failed, …), if any. */
  infrastructure?: string;
  failure?: string;
  tests: { passed: number; failed: number; scope: string }[];
}

const ENDS = new Set(['pr_open', 'merged', 'closed', 'reverted', 'failed', 'cancelled', 'budget_exhausted']);

/** Submits the repository's ticket with `kind`'s cassette; approves at review; waits for the end. */
export async function runTask(server: CorpusServer, entry: CorpusEntry, kind: TaskKind, timeoutMs = 40 * 60_000): Promise<TaskOutcome> {
  const ticket = ticketOf(corpusRepo(entry.id));
  const started = Date.now();
  const created = await api(server, 'POST', '/v1/tasks', {
    ticket: { kind: 'text', title: ticket.title, body: `${ticket.body}\n\n(corpus task ${entry.id}-${kind})` },
    context: { repo: entry.id, baseSha: entry.baseSha },
  });
  const taskId = record(created.json).id;
  if (created.status !== 202 || typeof taskId !== 'string') {
    return { kind, state: 'rejected', seconds: 0, sandbox: [], tests: [], failure: `POST /v1/tasks answered ${created.status}: ${JSON.stringify(created.json)}` };
  }
  let state = 'queued';
  let approved = false;
  while (Date.now() - started < timeoutMs) {
    const task = record((await api(server, 'GET', `/v1/tasks/${taskId}`)).json);
    state = String(task.state ?? state);
    if (state === 'awaiting_review' && !approved) {
      approved = true;
      await api(server, 'POST', `/v1/tasks/${taskId}/review`, { action: 'approve', comments: [] });
    }
    if (ENDS.has(state)) break;
    await new Promise((done) => setTimeout(done, 1000));
  }
  const outcome: TaskOutcome = { kind, taskId, state, seconds: (Date.now() - started) / 1000, sandbox: [], tests: [] };
  const events = record((await api(server, 'GET', `/v1/tasks/${taskId}/events?after=0`)).json).events;
  for (const event of Array.isArray(events) ? events : []) {
    const { type } = record(event);
    const data = record(record(event).data);
    if (type === 'sandbox.ready') outcome.sandbox.push({ source: String(data.source), startMs: Number(data.startMs) });
    if (type === 'pr.opened') outcome.pr = { number: Number(data.number), branch: String(data.branch), headSha: String(data.headSha) };
    if (type === 'tests.finished') outcome.tests.push({ passed: Number(data.passed), failed: Number(data.failed), scope: String(data.scope) });
    if (type === 'tests.runner_failed') outcome.infrastructure ??= `test runner ${String(data.kind)}: ${String(data.message)}`;
    if (type === 'task.failed') {
      outcome.failure = `${String(data.code)}: ${String(data.message)}`;
      if (data.code === 'test_infrastructure' || data.code === 'sandbox_unavailable' || /snapshot|install/i.test(String(data.message))) outcome.infrastructure ??= outcome.failure;
    }
  }
  if (!ENDS.has(state)) outcome.failure ??= `still ${state} after ${timeoutMs / 60_000} minutes`;
  return outcome;
}

export interface BranchCheck {
  ok: boolean;
  /** The branch's exit status: 0, or the first step's that fails on the branch. */
  exitCode: number;
  command: string;
  /** How the fresh sandbox started (snapshot: a new container of the repository's snapshot). */
  source: string;
  startMs: number;
  /** Where startMs went (SandboxService.acquire's steps). */
  steps: { reconcileMs: number; mirrorMs: number; snapshotMs: number; containerMs: number };
  /** Each step of the repository's test command at the base and on the branch (exit statuses). */
  parts: { name: string; base: number; branch: number }[];
  seconds: number;
  tail: string;
}

/**
 * An owner id of its own for each sandbox service the harness makes. bench:repos runs two
 * repositories at once in one process, and a service's start-up reconcile removes every container
 * labelled with its owner id that its own driver does not hold ("our own unheld containers"): two
 * services sharing `corpus-check-<pid>` removed each other's sandboxes mid-check (qs's PR branch
 * check failed with Docker's 409 "removal of container … is already in progress").
 */
export function ownerIdFor(kind: 'starts' | 'check', entry: Pick<CorpusEntry, 'id'>): string {
  return `corpus-${kind}-${process.pid}-${entry.id}-${Date.now().toString(36)}`;
}

/**
 * Starts of a new sandbox of the repository's snapshot at its base (each released at once), as a
 * task's start would be with no warm pool: the figures bench:repos takes the median of.
 */
export async function measureSnapshotStarts(dataDir: string, entry: CorpusEntry, count: number): Promise<Array<{ source: string; startMs: number; steps: BranchCheck['steps'] }>> {
  const { createSandboxService } = await import('../../server/src/sandbox/create');
  const service = await createSandboxService({ dataDir, ownerId: ownerIdFor('starts', entry) });
  const starts: Array<{ source: string; startMs: number; steps: BranchCheck['steps'] }> = [];
  try {
    for (let index = 0; index < count; index++) {
      const acquired = await service.acquire({ repo: entry.id, baseSha: entry.baseSha, taskId: `corpus-start-${entry.id}-${Date.now()}` });
      starts.push({ source: acquired.source, startMs: acquired.startMs, steps: acquired.steps });
      await service.release(acquired.sandbox);
    }
  } finally {
    await service.shutdown();
  }
  return starts;
}

/**
 * The steps of the repository's test command as the server runs them: its CI's steps when the
 * recipe has them, else the command's `&&` chain with npm's pre/post scripts expanded (the
 * feedback engine's own reading), else the whole command as one step.
 */
export function testSteps(command: string, recipeSteps: readonly { name: string; command: string; cwd?: string; env?: Record<string, string> }[] | undefined, packageJson: string | undefined): { name: string; command: string }[] {
  const inDir = (step: { command: string; cwd?: string; env?: Record<string, string> }) => {
    const env = Object.entries(step.env ?? {}).map(([key, value]) => `export ${key}=${shellQuote(value)}; `).join('');
    return `${step.cwd && step.cwd !== '.' ? `cd ${shellQuote(step.cwd)} && ` : ''}${env}${step.command}`;
  };
  if (recipeSteps && recipeSteps.length > 0) return recipeSteps.map((step) => ({ name: step.name, command: inDir(step) }));
  const chain = resolveChain(command, packageScripts(packageJson));
  if (!chain || chain.steps.length === 0) return [{ name: command, command }];
  return chain.steps.map((step) => ({ name: stepText(step), command: inDir({ command: stepText(step), ...(step.cwd ? { cwd: step.cwd } : {}) }) }));
}

/** Every step green at the base stays green, and some step red at the base (the bug's) turns green. */
export function branchGreen(parts: readonly { base: number; branch: number }[]): boolean {
  return parts.every((part) => part.base !== 0 || part.branch === 0) && parts.some((part) => part.base !== 0 && part.branch === 0);
}

/**
 * The PR's branch checked out afresh: a new sandbox of the repository's snapshot at the base, the
 * repository's own test command run step by step there, then the branch's changes applied from
 * the local forge and the same steps again. Green as its CI counts it with pre-existing failures:
 * every step that passes at the base passes on the branch, and at least one step that fails at
 * the base (the planted bug's) passes on the branch. A step that fails at both (an `npm audit`
 * with no network in the sandbox, a linter newer than the code) does not make the branch red.
 */
export async function checkBranch(dataDir: string, entry: CorpusEntry, headSha: string): Promise<BranchCheck> {
  const { createSandboxService } = await import('../../server/src/sandbox/create');
  const { execFileSync } = await import('node:child_process');
  const service = await createSandboxService({ dataDir, ownerId: ownerIdFor('check', entry) });
  const started = Date.now();
  try {
    const acquired = await service.acquire({ repo: entry.id, baseSha: entry.baseSha, taskId: `corpus-check-${entry.id}-${Date.now()}` });
    try {
      const test = acquired.sandbox.environment?.test;
      const command = test?.command ?? entry.test;
      let packageJson: string | undefined;
      try {
        packageJson = execFileSync('git', ['-C', entry.path, 'show', `${entry.baseSha}:package.json`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      } catch {
        packageJson = undefined;
      }
      const steps = testSteps(command, test?.steps, packageJson);
      // Not a login shell: /etc/profile resets PATH, dropping the snapshot's Node/pnpm/yarn toolchains.
      const runAll = async () => {
        const results: { code: number; output: string }[] = [];
        for (const step of steps) {
          const result = await acquired.sandbox.exec({ cmd: ['bash', '--noprofile', '--norc', '-eo', 'pipefail', '-c', step.command], timeoutMs: 30 * 60_000, outputCapBytes: 16 * 1024 });
          results.push({ code: result.exitCode, output: `${result.stdout}\n${result.stderr}`.trim() });
        }
        return results;
      };
      const base = await runAll();
      const diff = execFileSync('git', ['-C', join(dataDir, 'forge', `${entry.id}.git`), 'diff', '--binary', entry.baseSha, headSha], { encoding: 'utf8' });
      const applied = await acquired.sandbox.exec({ cmd: ['git', 'apply', '--whitespace=nowarn', '-'], stdin: diff, timeoutMs: 60_000 });
      if (applied.exitCode !== 0) throw new Error(`git apply of the PR branch failed: ${applied.stderr}`);
      const branch = await runAll();
      const parts = steps.map((step, index) => ({ name: step.name.split('\n')[0] ?? step.name, base: base[index]?.code ?? -1, branch: branch[index]?.code ?? -1 }));
      const failing = branch.find((result) => result.code !== 0);
      const tail = (failing ?? branch.at(-1))?.output ?? '';
      return {
        ok: branchGreen(parts),
        exitCode: failing?.code ?? 0,
        command,
        source: acquired.source,
        startMs: acquired.startMs,
        steps: acquired.steps,
        parts,
        seconds: (Date.now() - started) / 1000,
        tail: [`steps (base → branch exit): ${parts.map((part) => `${part.name.slice(0, 60)} ${part.base}→${part.branch}`).join('; ')}`, ...tail.split('\n').slice(-15)].join('\n'),
      };
    } finally {
      await service.release(acquired.sandbox);
    }
  } finally {
    await service.shutdown();
  }
}
