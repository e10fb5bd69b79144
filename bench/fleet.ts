/**
 * `npm run bench:fleet` — the fleet server's event path over real sockets on 127.0.0.1.
 *
 *  1. fan-out latency: 100 WebSocket subscribers on one task; events appended one at a time
 *     (paced, like a live task); latency = append start → frame parsed by each subscriber.
 *  2. throughput: a burst of events appended back to back; events/s until every subscriber has
 *     every event.
 *  3. overhead per agent turn: store append + fan-out of a typical turn's events (model.turn,
 *     assistant.text, tool.called, tool.finished, file.changed), against the same appends into the
 *     store alone (the baseline, same run).
 *
 * Subscribers run in a worker thread (bench/fleet-subscribers.mjs) on the same machine: their
 * parsing does not share the server's event loop, but the two cores are shared.
 * The LAST line is one JSON object.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { CreateTaskRequest, type NewEvent } from '@dockhand/protocol';
import { buildApp } from '../server/src/app';
import { RepoRegistry } from '../server/src/runner/registry';
import { RepoMirror } from '../server/src/sandbox/mirror';
import { EventHub, EventLog } from '../server/src/store/hub';
import { SqliteStore } from '../server/src/store/sqlite';

const SUBSCRIBERS = Number(process.env.SUBSCRIBERS ?? 100);
const PACED_EVENTS = 300;
const BURST_EVENTS = 2000;
const TURNS = 200;

const out = (line: string) => process.stdout.write(`${line}\n`);
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};
const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

function turnEvents(turn: number): NewEvent[] {
  const text = 'I will look at paginate() and fix the off-by-one. '.repeat(6);
  return [
    {
      type: 'model.turn',
      data: {
        turn, model: 'claude-sonnet-4-5', costUsd: 0.02, stopReason: 'tool_use', contextTokens: 60_000,
        usage: { inputTokens: 6000, outputTokens: 1000, cacheReadTokens: 54_000, cacheWriteTokens: 0 },
        content: [{ type: 'text', text }, { type: 'tool_use', id: `tu${turn}`, name: 'read_file', input: { path: 'src/paginate.ts' } }],
      },
    },
    { type: 'assistant.text', data: { turn, text } },
    { type: 'tool.called', data: { turn, toolUseId: `tu${turn}`, name: 'read_file', input: { path: 'src/paginate.ts' } } },
    { type: 'tool.finished', data: { toolUseId: `tu${turn}`, name: 'read_file', isError: false, output: 'export function paginate() {}\n'.repeat(130), truncated: false, durationMs: 12 } },
    { type: 'file.changed', data: { path: 'src/paginate.ts', change: 'modified', patch: '@@ -1,3 +1,3 @@\n-a\n+b\n'.repeat(40) } },
  ];
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-bench-fleet-'));
  const store = new SqliteStore(join(dir, 'dockhand.db'));
  const hub = new EventHub();
  const log = new EventLog(store, hub);
  // Tasks are stored directly (no submission), so the registry is never asked.
  const repos = new RepoRegistry({ store, mirror: new RepoMirror(dir) });
  const app = await buildApp({ store, repos, hub, events: log, control: { wake() {}, interrupt() {} }, limits: { ratePerMinute: 1_000_000 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  await store.createUser('bench', 'user');
  const { token } = await store.createToken('bench');
  const request = CreateTaskRequest.parse({ ticket: { kind: 'text', title: 'bench' }, context: { repo: '/srv/app.git', baseSha: 'a'.repeat(40) } });
  const { task } = await store.createTask('bench', request);

  const worker = new Worker(new URL('./fleet-subscribers.mjs', import.meta.url), {
    workerData: { url: `ws://127.0.0.1:${address.port}/v1/tasks/${task.id}/events`, protocols: ['dockhand.v1', `dockhand.bearer.${token}`], count: SUBSCRIBERS },
  });
  let delivered = 0;
  let waiters: Array<() => void> = [];
  let receiptsReply: ((r: Array<[number, number[]]>) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: { kind: string; seq?: number; receipts?: Array<[number, number[]]>; message?: string }) => {
      if (message.kind === 'ready') resolve();
      if ((message.kind === 'progress' || message.kind === 'ready') && message.seq !== undefined) {
        delivered = Math.max(delivered, message.seq);
        const current = waiters;
        waiters = [];
        for (const wake of current) wake();
      }
      if (message.kind === 'receipts' && message.receipts) receiptsReply?.(message.receipts);
      if (message.kind === 'resync') reject(new Error('a subscriber was sent resync'));
      if (message.kind === 'error') reject(new Error(message.message));
    });
  });
  await ready;
  const waitAll = async (seq: number) => {
    while (delivered < seq) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const now = () => performance.timeOrigin + performance.now();
  out(`${SUBSCRIBERS} subscribers connected (in a worker thread)`);

  // 1. paced fan-out latency
  const sentAt = new Map<number, number>();
  worker.postMessage('record');
  for (let i = 0; i < PACED_EVENTS; i++) {
    const seq = task.lastSeq + i + 1;
    sentAt.set(seq, now());
    await log.append(task.id, { type: 'assistant.text', data: { turn: 1, text: `progress ${i}` } });
    await waitAll(seq);
  }
  const receipts = await new Promise<Array<[number, number[]]>>((resolve) => {
    receiptsReply = resolve;
    worker.postMessage('stop-recording');
  });
  const latencies = receipts.flatMap(([seq, times]) => times.map((t) => t - (sentAt.get(seq) ?? t)));
  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);
  out(`fan-out latency to ${SUBSCRIBERS} subscribers over ${PACED_EVENTS} events (${latencies.length} deliveries): p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms`);

  // 2. burst throughput
  let last = (await store.getTask(task.id))?.lastSeq ?? 0;
  const burstStart = performance.now();
  for (let i = 0; i < BURST_EVENTS; i++) {
    await log.append(task.id, { type: 'assistant.text', data: { turn: 1, text: `burst ${i}` } });
    if (i % 50 === 49) await new Promise((r) => setImmediate(r));
  }
  last += BURST_EVENTS;
  await waitAll(last);
  const burstSeconds = (performance.now() - burstStart) / 1000;
  const eventsPerSecond = BURST_EVENTS / burstSeconds;
  out(`throughput: ${BURST_EVENTS} events to ${SUBSCRIBERS} subscribers in ${burstSeconds.toFixed(2)} s = ${eventsPerSecond.toFixed(0)} events/s (${(eventsPerSecond * SUBSCRIBERS).toFixed(0)} frames/s)`);

  // 3. overhead per agent turn, with fan-out vs the store alone
  const turnStart = performance.now();
  let serverSide = 0;
  for (let turn = 1; turn <= TURNS; turn++) {
    const appendStart = performance.now();
    for (const event of turnEvents(turn)) await log.append(task.id, event);
    serverSide += performance.now() - appendStart;
    last += 5;
    await waitAll(last);
  }
  const perTurnWithFanout = (performance.now() - turnStart) / TURNS;
  const perTurnServerSide = serverSide / TURNS;
  const { task: plain } = await store.createTask('bench', request);
  const storeStart = performance.now();
  for (let turn = 1; turn <= TURNS; turn++) for (const event of turnEvents(turn)) await store.appendEvent(plain.id, event);
  const perTurnStoreOnly = (performance.now() - storeStart) / TURNS;
  out(`per agent turn (5 events): store + fan-out until all ${SUBSCRIBERS} have them = ${perTurnWithFanout.toFixed(3)} ms (server's own part: ${perTurnServerSide.toFixed(3)} ms); store alone = ${perTurnStoreOnly.toFixed(3)} ms; ratio ${(perTurnWithFanout / perTurnStoreOnly).toFixed(2)}x`);
  out(`(a model turn takes seconds; ${perTurnWithFanout.toFixed(2)} ms is ${((perTurnWithFanout / 5000) * 100).toFixed(3)}% of a 5 s turn)`);

  await worker.terminate();
  await app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  out(JSON.stringify({
    subscribers: SUBSCRIBERS,
    fanout_p50_ms: round(p50),
    fanout_p99_ms: round(p99),
    events_per_s: Math.round(eventsPerSecond),
    overhead_per_turn_ms: round(perTurnWithFanout),
    server_side_per_turn_ms: round(perTurnServerSide),
    store_only_per_turn_ms: round(perTurnStoreOnly),
    fanout_over_store_only: round(perTurnWithFanout / perTurnStoreOnly, 2),
  }));
}

await main();
