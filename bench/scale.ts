/**
 * `npm run bench:scale` — the design's peak in miniature, on a real Postgres: TASKS concurrent tasks
 * (default 300) across WORKERS worker processes (default 10, `bench/scale/worker.ts`: the real
 * runner, agent loop, policy and local forge; a sandbox stand-in) and 2 API replicas
 * (`dockhand serve --role api`), the replay model (its own process) with an input-tokens-per-minute limit, and the
 * fleet's rate budget in Postgres a little under it. Every task is watched over a WebSocket on one
 * of the two replicas, approved when it reaches review, and pushed. Halfway (half the tasks in
 * review) 2 workers are killed with SIGKILL; their tasks are resumed elsewhere after the lease.
 *
 * Pacing, the design's: 300 sandboxes each taking a turn every ~20 s make ~15 model calls a second,
 * and at ~10-minute tasks ~0.5 of them reach review and push a second. A turn here is the model's
 * time to answer (REPLAY_LATENCY_MS, default 8 s: a real model reading a long prompt) plus the tool
 * it asked for (the sandbox stand-in's command TOOL_MS, default 12 s; the verified stop's test run
 * TEST_MS, 8 s), each 0.5–1.5 × its mean. A task fixes the bug, explores EXPLORE_MIN–EXPLORE_MAX
 * times (3–33, by its id: 5–35 turns, ~2–12 minutes) and finishes, so the 300 tasks are alive at
 * once, as at the peak, not in lockstep, and reach review over ~10 minutes: pushes at the design's
 * rate (`peak_pushes_per_s`). A run takes ~15 minutes. The token limit is scaled to the cassette's
 * request sizes (~2,000–3,700 input tokens a call as a conversation grows) so the fleet's budget
 * binds at the peak (turns wait; no 429s). The shape of sessions 5–7, every task three turns
 * (`EXPLORE_MIN=1 EXPLORE_MAX=1 TOOL_MS=8000 REPLAY_TPM=1800000`), reaches review within ~20 s of
 * the others: ~10 pushes a second, 20 times the design's, which saturated the 2 cores. The
 * compressed pace of earlier runs (REPLAY_LATENCY_MS=0 TOOL_MS=200 TEST_MS=400 with that) runs each
 * task in ~15 s.
 * BENCH_CPU_PROF=dir writes the workers' and the API replicas' CPU profiles there; BENCH_DEBUG
 * prints claims and fan-out per 10 s, the slowest statements and the fan-out split at the notice
 * (worker and commit | replica): `bench/scale/debug.ts`.
 * Then the real-gVisor concurrency probe (`bench/scale/gvisor.ts`; GVISOR_PROBE=0 skips it).
 * The LAST line is one JSON object.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { z } from 'zod';
import { apiJson } from '../test/support/api-json';
import { ServerFrame, Task, type TaskEvent } from '@dockhand/protocol';
import { InMemoryPullRequestStore, LocalForge } from '../server/src/forge';
import { PostgresStore } from '../server/src/store/postgres';
import { createFixtureRepo } from '../test/support/fixture-repo';
import { freePort, startDockhandServe, type DockhandServe } from '../test/support/local-server';
import { startPrivatePostgres } from '../test/support/private-postgres';
import { registerRepo } from '../test/support/register-repo';
import { EXPLORE_MAX, EXPLORE_MIN, unresumablePoints } from './scale/cassette';
import { openStatements, printDebug, type FanoutSplit } from './scale/debug';
import { runGvisorProbe } from './scale/gvisor';

const ROOT = resolve(import.meta.dirname, '..');
const TASKS = Number(process.env.TASKS ?? 300);
const WORKERS = Number(process.env.WORKERS ?? 10);
const KILLS = Number(process.env.KILLS ?? 2);
const TOOL_MS = Number(process.env.TOOL_MS ?? 12_000);
const TEST_MS = Number(process.env.TEST_MS ?? 8_000);
const REPLAY_LATENCY_MS = Number(process.env.REPLAY_LATENCY_MS ?? 8_000);
// The product's default lease (config scheduler.leaseSeconds): on 2 shared cores a 10 s lease was lost to starved heartbeats.
const LEASE_SECONDS = Number(process.env.LEASE_SECONDS ?? 30);
// Scaled to the cassette (~2,000 input tokens a call at a task's start, ~2,850 on average over a
// 35-turn task): ~15 calls a second ask ~1.8M a minute at the start and more as conversations grow
// while the tasks alive fall; the budget (90% of the replay's limit, ~2M) binds in between, so turns
// wait for the budget instead of meeting 429s.
const REPLAY_TPM = Number(process.env.REPLAY_TPM ?? 2_200_000);
const BUDGET_TPM = Math.floor(REPLAY_TPM * 0.9);
const SESSION = 'scale';

const out = (line: string) => process.stdout.write(`${line}\n`);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Tracked {
  id: string;
  createdAt: number;
  replica: number;
  events: TaskEvent[];
  fanout: number[];
  /** The fan-out of the event at each index of `events` (live events only). */
  fanoutAt?: Array<number | undefined>;
  approved: boolean;
}

/** The replay server in its own process (`bench/scale/replay.ts`): its URL, and its 429 count on request. */
async function startReplayProcess(children: ChildProcess[]): Promise<{ url: string; rateLimited(): Promise<number> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/scale/replay.ts'], { cwd: ROOT, env: { ...process.env, REPLAY_TPM: String(REPLAY_TPM), REPLAY_LATENCY_MS: String(REPLAY_LATENCY_MS) }, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const waiting: Array<(line: unknown) => void> = [];
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) waiting.shift()?.(JSON.parse(line));
  });
  const next = () => new Promise<unknown>((resolve, reject) => {
    waiting.push(resolve);
    child.once('exit', (code) => reject(new Error(`the replay server exited (${code})`)));
  });
  const { url } = z.object({ url: z.string() }).parse(await next());
  return {
    url,
    async rateLimited() {
      const answer = next();
      child.stdin?.write('stats\n');
      return z.object({ rateLimited: z.number() }).parse(await answer).rateLimited;
    },
  };
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'dockhand-bench-scale-'));
  // BENCH_DEBUG also prints where Postgres spent its time (pg_stat_statements, Debian's package has it).
  const postgres = await startPrivatePostgres({ listen: [], trustNetwork: '127.0.0.1/32', ...(process.env.BENCH_DEBUG ? { settings: { shared_preload_libraries: 'pg_stat_statements' } } : {}) });
  const children: ChildProcess[] = [];
  const replay = await startReplayProcess(children);
  try {
    const fixture = createFixtureRepo('buggy-calc');
    // The script must carry a task killed at any point to its end (else a kill shows up as model_refused).
    const unresumable = await unresumablePoints(fixture.path);
    if (unresumable.length > 0) throw new Error(`the bench's cassette cannot resume a task killed at every point:\n${unresumable.join('\n')}`);
    const bare = await new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() }).createRepository('calc', fixture.path);
    const setup = await PostgresStore.open({ url: postgres.url('127.0.0.1'), poolSize: 2 });
    const statements = process.env.BENCH_DEBUG ? await openStatements(postgres.url('127.0.0.1')) : undefined;
    await setup.createUser('alice', 'user');
    const token = (await setup.createToken('alice')).token;
    await setup.createUser('root', 'admin');
    const adminToken = (await setup.createToken('root')).token;
    const dataDir = (name: string) => {
      const dir = join(root, name);
      mkdirSync(dir, { recursive: true });
      symlinkSync(join(root, 'forge'), join(dir, 'forge'));
      return dir;
    };
    const common = {
      DOCKHAND_DATABASE_URL: postgres.url('127.0.0.1'),
      DOCKHAND_MODEL_BASE_URL: replay.url,
      DOCKHAND_REPLAY_SESSION: SESSION,
      DOCKHAND_LEASE_SECONDS: String(LEASE_SECONDS),
      DOCKHAND_LOG_LEVEL: 'warn',
      DOCKHAND_RATE_LIMIT_PER_MINUTE: '100000',
    };
    out(`starting 2 API replicas and ${WORKERS} workers (model answers in ${REPLAY_LATENCY_MS} ms, tool call ${TOOL_MS} ms, test run ${TEST_MS} ms, ${EXPLORE_MIN}–${EXPLORE_MAX} explorations a task, replay limit ${REPLAY_TPM} input tokens/min, budget ${BUDGET_TPM})…`);
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', resolve(process.env.BENCH_CPU_PROF)] : [];
    const apis: DockhandServe[] = await Promise.all([0, 1].map(async (i) => startDockhandServe(await freePort(), { ...common, DOCKHAND_DATA_DIR: dataDir(`api-${i}`), DOCKHAND_ROLE: 'api' }, { nodeArgs: profile })));
    children.push(...apis.map((a) => a.child));
    await registerRepo(apis[0]!.url, adminToken, 'calc', fixture.path);
    const budget = new Map<number, { budgetWaits: number; budgetWaitedMs: number }>();
    const workers = await Promise.all(Array.from({ length: WORKERS }, async (_, i) => {
      const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'bench/scale/worker.ts'], {
        cwd: ROOT,
        env: {
          ...process.env, ...common, DOCKHAND_DATA_DIR: dataDir(`worker-${i}`), DOCKHAND_ROLE: 'worker',
          DOCKHAND_CONCURRENCY: String(Math.ceil(TASKS / WORKERS)),
          BENCH_TOOL_MS: String(TOOL_MS), BENCH_TEST_MS: String(TEST_MS), BENCH_BUDGET_TPM: String(BUDGET_TPM), BENCH_FIXTURE: fixture.path,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let errors = '';
      child.stderr?.on('data', (chunk: Buffer) => (errors = (errors + chunk.toString()).slice(-4000)));
      let buffered = '';
      let started = false;
      child.stdout?.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          const parsed = z.object({ budgetWaits: z.number(), budgetWaitedMs: z.number() }).safeParse(JSON.parse(line.startsWith('{') ? line : '{}'));
          if (parsed.success) {
            budget.set(i, parsed.data);
            started = true;
          }
        }
      });
      const end = Date.now() + 300_000;
      while (!started) {
        if (child.exitCode !== null) throw new Error(`worker ${i} exited: ${errors}`);
        if (Date.now() > end) throw new Error(`worker ${i} did not start: ${errors}`);
        await sleep(200);
      }
      return child;
    }));
    const probe = setup;
    // The bench LISTENs too, so each live event's fan-out (its ts → a client's socket) splits at its
    // notice heard here: the write (the worker's pool wait, statement and commit: ts → NOTIFY) and
    // the delivery (NOTIFY → an API replica → the socket).
    const noticedAt = new Map<string, number>();
    const listener = new pg.Client({ connectionString: postgres.url('127.0.0.1') });
    await listener.connect();
    listener.on('notification', (message) => {
      const notice = z.object({ taskId: z.string(), seq: z.number() }).safeParse(JSON.parse(message.payload ?? '{}'));
      if (notice.success) noticedAt.set(`${notice.data.taskId}:${notice.data.seq}`, Date.now());
    });
    for (const channel of [setup.channel, setup.heldChannel]) await listener.query(`LISTEN ${channel}`);

    // Submit everything, each task watched on one replica (alternating) from its first event.
    const tracked = new Map<string, Tracked>();
    const sockets: WebSocket[] = [];
    const request = <T>(replica: number, method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> =>
      apiJson(apis[replica]!.url, token, method, path, schema, body);
    const approve = (task: Tracked) => {
      if (task.approved) return;
      task.approved = true;
      void request(1 - task.replica, 'POST', `/v1/tasks/${task.id}/review`, Task, { action: 'approve', comments: [] }).catch((error: unknown) => {
        task.approved = false;
        out(`approve ${task.id}: ${String(error)}`);
      });
    };
    const watch = (task: Tracked) => {
      const after = task.events.at(-1)?.seq ?? 0;
      const socket = new WebSocket(`${apis[task.replica]!.url.replace('http', 'ws')}/v1/tasks/${task.id}/events?after=${after}&token=${token}`);
      sockets.push(socket);
      socket.on('error', () => undefined);
      // Fan-out is measured on live events only: the replay before the `live` frame delivers events
      // written before this socket connected, whose age is not a delivery delay.
      let replayed = false;
      socket.on('message', (data: Buffer) => {
        const frame = ServerFrame.parse(JSON.parse(data.toString()));
        if (frame.kind === 'live') replayed = true;
        if (frame.kind !== 'event') return;
        const age = Date.now() - Date.parse(frame.event.ts);
        task.events.push(frame.event);
        if (replayed && age >= 0) task.fanout.push(age);
        (task.fanoutAt ??= [])[task.events.length - 1] = replayed && age >= 0 ? age : undefined;
        if (frame.event.type === 'task.state' && frame.event.data.state === 'awaiting_review') approve(task);
      });
    };
    const started = Date.now();
    out(`submitting ${TASKS} tasks…`);
    for (let i = 0; i < TASKS; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, TASKS - i) }, async (_, k) => {
        const replica = (i + k) % 2;
        const { id } = await request(replica, 'POST', '/v1/tasks', z.object({ id: z.string() }), {
          ticket: { kind: 'text', title: `average() is off by one (${i + k})`, body: 'average([1, 2, 3]) should be 2.' },
          context: { repo: 'calc', baseSha: fixture.sha },
        });
        const task: Tracked = { id, createdAt: 0, replica, events: [], fanout: [], approved: false };
        tracked.set(id, task);
        watch(task);
      }));
    }
    const state = (task: Tracked) => [...task.events].reverse().find((e) => e.type === 'task.state');
    const inState = (states: string[]) => [...tracked.values()].filter((t) => {
      const last = state(t);
      return last?.type === 'task.state' && states.includes(last.data.state);
    });
    // Halfway: kill KILLS workers (SIGKILL) with the tasks they hold.
    while (inState(['awaiting_review', 'pushing', 'pr_open']).length < TASKS / 2) await sleep(200);
    const held = new Map<string, string>();
    for (const task of tracked.values()) {
      const lease = await probe.getLease(task.id);
      if (lease && lease.expiresAt > Date.now()) held.set(task.id, lease.workerId);
    }
    const victims = workers.slice(0, KILLS);
    for (const victim of victims) victim.kill('SIGKILL');
    const killedAt = Date.now();
    out(`killed ${KILLS} workers at ${((killedAt - started) / 1000).toFixed(1)} s (${held.size} tasks held by the fleet then)`);
    const deadline = Date.now() + Number(process.env.TIMEOUT_S ?? 3600) * 1000;
    while (inState(['pr_open', 'failed', 'cancelled', 'budget_exhausted']).length < TASKS && Date.now() < deadline) {
      for (const task of inState(['awaiting_review'])) approve(task);
      await sleep(500);
    }
    const elapsedS = (Date.now() - started) / 1000;
    // The store's log is the truth; the clients' copies must equal it.
    let gaps = 0;
    let events = 0;
    const pushes: number[] = [];
    let resumed = 0;
    let handedBack = 0;
    let modelRetried = 0;
    let modelCalls = 0;
    const turnTokens: Array<[number, number]> = [];
    const pushedAt: number[] = [];
    let budgetWaitEvents = 0;
    const alive: Array<[number, number]> = [];
    for (const task of tracked.values()) {
      task.createdAt = Date.parse((await probe.getTask(task.id))?.createdAt ?? '');
      const log = await probe.listEvents(task.id);
      events += log.length;
      if (log.map((e) => e.seq).join() !== task.events.map((e) => e.seq).join()) gaps += 1;
      pushes.push(log.filter((e) => e.type === 'pr.opened').length);
      for (const e of log) if (e.type === 'pr.opened') pushedAt.push(Date.parse(e.ts));
      if (log.filter((e) => e.type === 'sandbox.ready').length > 1) resumed += 1;
      if (log.some((e) => e.type === 'task.state' && e.data.state === 'queued' && (e.data.reason ?? '').includes('back in the queue'))) handedBack += 1;
      if (log.some((e) => e.type === 'task.state' && (e.data.reason ?? '').includes('unreachable'))) modelRetried += 1;
      modelCalls += log.filter((e) => e.type === 'model.turn').length;
      budgetWaitEvents += log.filter((e) => e.type === 'model.budget_wait' && e.data.phase === 'done').length;
      // Alive: from its first claim to its first review (the part of a task that holds a sandbox).
      const claimedAt = log.find((e) => e.type === 'task.state' && e.data.state === 'provisioning');
      const reviewAt = log.find((e) => e.type === 'task.state' && e.data.state === 'awaiting_review');
      if (claimedAt && reviewAt) alive.push([Date.parse(claimedAt.ts), 1], [Date.parse(reviewAt.ts), -1]);
      for (const e of log) if (e.type === 'model.turn') turnTokens.push([Date.parse(e.ts), e.data.usage.inputTokens + e.data.usage.cacheReadTokens + e.data.usage.cacheWriteTokens]);
    }
    const finals = inState(['pr_open']).length;
    const failed = inState(['failed', 'cancelled', 'budget_exhausted']).length;
    // Why tasks did not reach a PR: the failure code and the first words of its message, counted.
    const causes = new Map<string, number>();
    for (const task of inState(['failed', 'cancelled', 'budget_exhausted'])) {
      const log = await probe.listEvents(task.id);
      const failure = log.find((e) => e.type === 'task.failed');
      const cause = failure?.type === 'task.failed' ? `${failure.data.code}: ${failure.data.message.slice(0, 600)}` : 'ended without task.failed';
      causes.set(cause, (causes.get(cause) ?? 0) + 1);
    }
    for (const [cause, count] of [...causes].sort((a, b) => b[1] - a[1])) out(`  ${count} × ${cause}`);
    const claims = [...tracked.values()].flatMap((t) => {
      const first = t.events.find((e) => e.type === 'task.state' && e.data.state === 'provisioning');
      return first ? [Date.parse(first.ts) - t.createdAt] : [];
    });
    const fanout = [...tracked.values()].flatMap((t) => t.fanout);
    let maxAlive = 0;
    alive.sort((a, b) => a[0] - b[0] || a[1] - b[1]).reduce((n, [, d]) => {
      maxAlive = Math.max(maxAlive, n + d);
      return n + d;
    }, 0);
    // The busiest minute's input tokens (uncached, cache reads and writes: what the replay limit counts), from the turns' ends.
    turnTokens.sort((a, b) => a[0] - b[0]);
    let peakTokensPerMinute = 0;
    let peakCallsPerMinute = 0;
    for (let i = 0, j = 0, sum = 0; i < turnTokens.length; i++) {
      sum += turnTokens[i]![1];
      while (turnTokens[j]![0] <= turnTokens[i]![0] - 60_000) sum -= turnTokens[j++]![1];
      peakTokensPerMinute = Math.max(peakTokensPerMinute, sum);
      peakCallsPerMinute = Math.max(peakCallsPerMinute, i - j + 1);
    }
    // The busiest minute's pushes (the design's peak: ~0.5 a second).
    pushedAt.sort((a, b) => a - b);
    let peakPushesPerMinute = 0;
    for (let i = 0, j = 0; i < pushedAt.length; i++) {
      while (pushedAt[j]! <= pushedAt[i]! - 60_000) j++;
      peakPushesPerMinute = Math.max(peakPushesPerMinute, i - j + 1);
    }
    // The split: ts → the notice heard here (worker: pool wait, statement, commit) and notice → socket (replica).
    const split: FanoutSplit = { write: [], delivery: [], slowest: [] };
    for (const t of tracked.values()) for (const [i, e] of t.events.entries()) {
      const age = t.fanoutAt?.[i];
      const heard = noticedAt.get(`${t.id}:${e.seq}`);
      if (age === undefined || heard === undefined) continue;
      const write = heard - Date.parse(e.ts);
      split.write.push(write);
      split.delivery.push(age - write);
      split.slowest.push([age, write, e.type]);
    }
    if (statements) {
      await printDebug({ tasks: [...tracked.values()], started, split, statements, out, percentile });
      await statements.end();
    }
    const waits = [...budget.values()].reduce((sum, b) => sum + b.budgetWaits, 0);
    out(`${finals}/${TASKS} PRs open, ${failed} failed, ${events} events in ${elapsedS.toFixed(1)} s; ${resumed} tasks resumed on another worker; clients with a log unlike the store's: ${gaps}`);
    out(`claim p50 ${percentile(claims, 50)} ms p99 ${percentile(claims, 99)} ms; fan-out p50 ${percentile(fanout, 50)} ms p99 ${percentile(fanout, 99)} ms (write p99 ${percentile(split.write, 99)}, delivery p99 ${percentile(split.delivery, 99)}); ${waits} turns waited for the rate budget; ${await replay.rateLimited()} 429s`);
    for (const socket of sockets) socket.close();
    await listener.end();
    await setup.close();
    // The second phase, on a quiet machine: real gVisor sandboxes running a real test suite.
    const rateLimited429s = await replay.rateLimited();
    // BENCH_CPU_PROF=dir: the surviving workers exit cleanly so node writes their CPU profiles there.
    if (process.env.BENCH_CPU_PROF) {
      for (const worker of workers.slice(KILLS)) worker.kill('SIGUSR2');
      // The replicas drain on SIGTERM and exit, which writes theirs.
      for (const api of apis) api.child.kill('SIGTERM');
      await sleep(5000);
    }
    for (const child of children) child.kill('SIGKILL');
    const gvisor = process.env.GVISOR_PROBE === '0' ? undefined : await runGvisorProbe(out);
    out(JSON.stringify({
      bench: 'scale',
      tasks: TASKS,
      workers: WORKERS,
      api_replicas: 2,
      workers_killed: KILLS,
      model_latency_ms: REPLAY_LATENCY_MS,
      tool_ms: TOOL_MS,
      test_ms: TEST_MS,
      elapsed_s: Math.round(elapsedS),
      events_per_s: Math.round(events / elapsedS),
      model_calls_per_s: Math.round((modelCalls / elapsedS) * 10) / 10,
      claim_p50_ms: percentile(claims, 50),
      claim_p99_ms: percentile(claims, 99),
      fanout_p50_ms: percentile(fanout, 50),
      fanout_p99_ms: percentile(fanout, 99),
      fanout_write_p99_ms: percentile(split.write, 99),
      fanout_delivery_p99_ms: percentile(split.delivery, 99),
      peak_model_calls_per_s: Math.round((peakCallsPerMinute / 60) * 10) / 10,
      peak_input_tokens_per_min: peakTokensPerMinute,
      peak_pushes_per_s: Math.round((peakPushesPerMinute / 60) * 10) / 10,
      explorations: `${EXPLORE_MIN}-${EXPLORE_MAX}`,
      budget_tpm: BUDGET_TPM,
      max_tasks_alive: maxAlive,
      budget_waits: waits,
      budget_wait_events: budgetWaitEvents,
      rate_limited_429s: rateLimited429s,
      resumed,
      tasks_with_model_retries: modelRetried,
      handed_back: handedBack,
      max_pushes_per_task: Math.max(0, ...pushes),
      lost_tasks: TASKS - finals - failed,
      failed_tasks: failed,
      client_logs_unlike_store: gaps,
      max_concurrent_gvisor_tasks: gvisor?.max_concurrent_gvisor_tasks ?? null,
      gvisor_mib_per_sandbox: gvisor?.gvisor_mib_per_sandbox ?? null,
      gvisor_levels: gvisor?.gvisor_levels.map((level) => `${level.n}:${level.ok ? 'ok' : level.why}`) ?? null,
    }));
  } finally {
    for (const child of children) child.kill('SIGKILL');
    postgres.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
