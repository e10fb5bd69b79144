/**
 * What `BENCH_DEBUG=1 npm run bench:scale` prints beyond its figures, to find where a slow claim or
 * fan-out came from: claims per 30 submitted tasks, fan-out per 10 s, the slowest 1% of live events
 * by type, the Postgres statements that took longest in all (pg_stat_statements, which the bench's
 * private Postgres preloads under BENCH_DEBUG) and the fan-out split (write: the event's ts → its
 * NOTIFY heard by the bench; delivery: → the client's socket).
 */
import pg from 'pg';
import type { TaskEvent } from '@dockhand/protocol';

export interface DebugTask {
  createdAt: number;
  events: TaskEvent[];
  /** The fan-out of the event at each index of `events` (live events only). */
  fanoutAt?: Array<number | undefined>;
}

export interface FanoutSplit {
  write: number[];
  delivery: number[];
  /** [fan-out, write, event type] of each live event. */
  slowest: Array<[number, number, string]>;
}

/** A connection that reads pg_stat_statements (the extension created in the bench's database). */
export async function openStatements(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return client;
}

export async function printDebug(input: {
  tasks: DebugTask[];
  started: number;
  split: FanoutSplit;
  statements: pg.Client;
  out: (line: string) => void;
  percentile: (values: number[], p: number) => number;
}): Promise<void> {
  const { tasks, started, split, statements, out, percentile } = input;
  const claimOf = (task: DebugTask) => {
    const first = task.events.find((e) => e.type === 'task.state' && e.data.state === 'provisioning');
    return first ? [Date.parse(first.ts) - task.createdAt] : [];
  };
  for (let b = 0; b < tasks.length; b += 30) {
    const bucket = tasks.slice(b, b + 30).flatMap(claimOf);
    out(`  tasks ${b}-${b + 29}: submitted at ${((tasks[b]!.createdAt - started) / 1000).toFixed(1)} s, claim p50 ${percentile(bucket, 50)} max ${percentile(bucket, 100)}`);
  }
  const byTime = new Map<number, number[]>();
  for (const task of tasks) for (const [i, e] of task.events.entries()) {
    const age = task.fanoutAt?.[i];
    if (age === undefined) continue;
    const slot = Math.floor((Date.parse(e.ts) - started) / 10_000);
    byTime.set(slot, [...(byTime.get(slot) ?? []), age]);
  }
  for (const [slot, ages] of [...byTime].sort((a, b) => a[0] - b[0])) out(`  events at ${slot * 10}-${slot * 10 + 10} s: ${ages.length}, fan-out p50 ${percentile(ages, 50)} p99 ${percentile(ages, 99)}`);
  const types = new Map<string, number>();
  for (const [, , type] of [...split.slowest].sort((a, b) => b[0] - a[0]).slice(0, Math.ceil(split.slowest.length / 100))) types.set(type, (types.get(type) ?? 0) + 1);
  out(`  the slowest 1% by type: ${[...types].map(([type, n]) => `${type} ${n}`).join(', ')}`);
  const top = await statements.query<{ calls: string; total_ms: number; mean_ms: number; rows: string; query: string }>(
    'SELECT calls, total_exec_time::float8 AS total_ms, mean_exec_time::float8 AS mean_ms, rows, query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12',
  );
  out('  Postgres, the statements that took longest in all:');
  for (const row of top.rows) out(`    ${Math.round(row.total_ms)} ms in ${row.calls} calls (${row.mean_ms.toFixed(2)} ms each, ${row.rows} rows): ${row.query.replace(/\s+/g, ' ').slice(0, 160)}`);
  out(`  split of ${split.write.length} live events: write (ts → notice) p50 ${percentile(split.write, 50)} p99 ${percentile(split.write, 99)}; delivery (notice → socket) p50 ${percentile(split.delivery, 50)} p99 ${percentile(split.delivery, 99)}`);
}
