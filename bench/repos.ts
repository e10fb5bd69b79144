/**
 * Real-repository benchmark: `npm run bench:repos [-- --only minimist,bytes] [--concurrency 2] [--data-dir D]`.
 *
 * Builds the corpus (scripts/corpus/build.ts: real projects from the npm registry and Debian, each
 * with a planted bug verified on the host), starts a real `dockhand serve` (gVisor sandboxes,
 * SQLite, the local forge, the replay model routed per task), and per repository:
 *  1. registers it: `dockhand repo add <id> --from <corpus path>`;
 *  2. readiness: `dockhand repo check <id> --json` (builds the snapshot cold: its build time);
 *  3. the oracle task (cassette `<id>-oracle`: explores, fixes through edit_file, finishes) → a PR,
 *     approved at review; its branch is then checked out afresh in a new sandbox of the snapshot
 *     (the snapshot start time) and the repository's own full test command must pass there;
 *  4. the null task (cassette `<id>-null`: claims done with no change) → must end without a PR;
 *  5. `--starts N` (default 2) more starts of a new sandbox from the snapshot: the snapshot start
 *     time is the median of those and the PR branch check's.
 * Prints a table, then one JSON line: repos, ready, oracle_prs, null_prs, infra_failures,
 * median_cold_build_s, median_snapshot_start_s, cold_over_snapshot, median_task_s, ...
 * Targets: ready = oracle_prs = repos, null_prs = 0, infra_failures = 0, cold_over_snapshot >= 50.
 *
 * `--with-earlier` (with `--data-dir`): the table and JSON line also take, for every corpus
 * repository this run did not run, its latest row in that data dir's bench-rows.jsonl at the
 * repository's current base commit (marked "earlier"), so a rerun of failed repositories with
 * `--only` gives the figures of the whole corpus.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { buildCorpus, corpusDir, type CorpusEntry } from '../scripts/corpus/build';
import { CORPUS } from '../test/corpus/repos';
import { checkBranch, measureSnapshotStarts, runTask, startCorpusServer, type BranchCheck, type CorpusServer, type TaskOutcome } from '../test/corpus/harness';
import { readinessOf, registerRepo } from '../test/corpus/registration';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    concurrency: { type: 'string', default: '1' },
    'data-dir': { type: 'string' },
    keep: { type: 'boolean', default: false },
    'with-earlier': { type: 'boolean', default: false },
    /** Extra starts from the snapshot per repository (after its tasks); the snapshot start is the median of all. */
    starts: { type: 'string', default: '2' },
  },
  strict: true,
});

interface Row {
  id: string;
  /** When the row was made, and the base commit it was made at (a rebuilt repository has another). */
  at: string;
  baseSha: string;
  registered: string;
  ready: boolean;
  readiness: string;
  coldBuildS?: number;
  snapshotStartS?: number;
  /** Every start from the snapshot measured (seconds): the PR branch check's and the extra ones. */
  snapshotStarts?: number[];
  oracle?: TaskOutcome;
  branch?: BranchCheck;
  nullTask?: TaskOutcome;
  notes: string[];
}

const median = (values: number[]) => {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};
const round = (value: number, digits = 1) => (Number.isFinite(value) ? Number(value.toFixed(digits)) : null);
const say = (line: string) => process.stdout.write(`${line}\n`);

async function benchRepo(server: CorpusServer, entry: CorpusEntry): Promise<Row> {
  const row: Row = { id: entry.id, at: new Date().toISOString(), baseSha: entry.baseSha, registered: '', ready: false, readiness: '', notes: [] };
  const registration = await registerRepo(server, entry);
  row.registered = registration.how;
  if (!registration.ok) {
    const lines = registration.output.trim().split('\n');
    // A crash prints its stack last: keep the error's own line too.
    const error = lines.find((line) => /\b\w*Error\b|error:/.test(line));
    row.notes.push(`registration failed: ${[...(error ? [error] : []), ...lines.slice(-3)].join(' | ')}`);
    return row;
  }
  const readiness = await readinessOf(server, entry.id);
  row.ready = readiness.ready;
  row.readiness = readiness.summary;
  if (readiness.coldBuildSeconds !== undefined) row.coldBuildS = readiness.coldBuildSeconds;
  say(`  ${entry.id}: registered (${row.registered}); readiness ${row.ready ? 'ready' : 'NOT ready'}: ${row.readiness}`);

  row.oracle = await runTask(server, entry, 'oracle');
  const cold = row.oracle.sandbox.find((start) => start.source === 'cold');
  if (row.coldBuildS === undefined && cold) row.coldBuildS = cold.startMs / 1000;
  say(`  ${entry.id}: oracle ${row.oracle.state}${row.oracle.pr ? ` PR #${row.oracle.pr.number}` : ''} in ${row.oracle.seconds.toFixed(0)} s${row.oracle.failure ? ` (${row.oracle.failure.slice(0, 200)})` : ''}`);
  if (row.oracle.pr) {
    try {
      row.branch = await checkBranch(server.dataDir, entry, row.oracle.pr.headSha);
      if (row.branch.source === 'snapshot') row.snapshotStartS = row.branch.startMs / 1000;
      const steps = Object.entries(row.branch.steps).map(([step, ms]) => `${step.replace(/Ms$/, '')} ${(ms / 1000).toFixed(2)}`).join(', ');
      say(`  ${entry.id}: PR branch afresh in a new sandbox (${row.branch.source}, ${(row.branch.startMs / 1000).toFixed(2)} s: ${steps}): \`${row.branch.command}\` exit ${row.branch.exitCode}`);
      if (!row.branch.ok) row.notes.push(`PR branch suite failed: ${row.branch.tail.split('\n').slice(-3).join(' | ')}`);
    } catch (error) {
      row.notes.push(`PR branch check failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  row.nullTask = await runTask(server, entry, 'null');
  const fromSnapshot = row.nullTask.sandbox.find((start) => start.source === 'snapshot');
  if (row.snapshotStartS === undefined && fromSnapshot) row.snapshotStartS = fromSnapshot.startMs / 1000;
  say(`  ${entry.id}: null ${row.nullTask.state}${row.nullTask.pr ? ` PR #${row.nullTask.pr.number} (should be none)` : ', no PR'} in ${row.nullTask.seconds.toFixed(0)} s`);
  const extra = Math.max(0, Number(values.starts));
  if (extra > 0 && row.ready) {
    try {
      const starts = (await measureSnapshotStarts(server.dataDir, entry, extra)).filter((start) => start.source === 'snapshot').map((start) => start.startMs / 1000);
      row.snapshotStarts = [...(row.snapshotStartS !== undefined ? [row.snapshotStartS] : []), ...starts];
      if (row.snapshotStarts.length > 0) row.snapshotStartS = median(row.snapshotStarts);
      say(`  ${entry.id}: starts from the snapshot ${row.snapshotStarts.map((start) => start.toFixed(2)).join(', ')} s (median ${row.snapshotStartS?.toFixed(2)})`);
    } catch (error) {
      row.notes.push(`snapshot starts not measured: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return row;
}

async function main(): Promise<void> {
  const only = values.only?.split(',').map((id) => id.trim()).filter(Boolean);
  say('building the corpus (cached by recipe hash)');
  const entries = buildCorpus({ ...(only ? { only } : {}), say: (line) => say(`  ${line}`) });
  const dataDir = values['data-dir'] ? resolve(values['data-dir']) : mkdtempSync(join(tmpdir(), 'dockhand-bench-repos-'));
  const concurrency = Math.max(1, Number(values.concurrency));
  say(`dockhand serve on data dir ${dataDir} (gVisor, SQLite, local forge, replay model; log server.log, rows bench-rows.jsonl); ${concurrency} repositories at a time`);
  const server = await startCorpusServer({ dataDir, ids: entries.map((entry) => entry.id), concurrency: Math.max(2, concurrency) });
  const rows: Row[] = [];
  try {
    const queue = [...entries];
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (let entry = queue.shift(); entry; entry = queue.shift()) {
        try {
          const row = await benchRepo(server, entry);
          rows.push(row);
          appendFileSync(join(dataDir, 'bench-rows.jsonl'), `${JSON.stringify(row)}\n`);
        } catch (error) {
          rows.push({ id: entry.id, at: new Date().toISOString(), baseSha: entry.baseSha, registered: '', ready: false, readiness: '', notes: [`bench error: ${error instanceof Error ? error.message : String(error)}`] });
        }
      }
    }));
  } finally {
    await server.close();
    if (!values.keep && !values['data-dir']) rmSync(dataDir, { recursive: true, force: true });
  }
  const order = (id: string) => CORPUS.findIndex((repo) => repo.id === id);
  const table: SummaryRow[] = [...rows];
  if (values['with-earlier'] && values['data-dir']) {
    const ranNow = new Set(rows.map((row) => row.id));
    const earlier = earlierRows(dataDir, new Set());
    table.push(...earlier.filter((row) => !ranNow.has(row.id)));
    // A repository run again on an engine that has its snapshot builds nothing: its cold build is the earlier run's.
    for (const row of table) {
      if (row.earlier || row.coldBuildS !== undefined) continue;
      const before = earlier.find((other) => other.id === row.id && other.coldBuildS !== undefined);
      if (before?.coldBuildS !== undefined) {
        row.coldBuildS = before.coldBuildS;
        row.notes.push(`cold build ${before.coldBuildS.toFixed(1)} s measured by the run of ${before.coldAt ?? 'an earlier run'} (the snapshot existed this time)`);
      }
    }
  }
  table.sort((a, b) => order(a.id) - order(b.id));
  report(table, rows.length);
}

const StoredTask = z.object({ state: z.string(), seconds: z.number(), pr: z.object({ number: z.number() }).optional(), infrastructure: z.string().optional(), failure: z.string().optional() });
const StoredRow = z.object({
  id: z.string(),
  at: z.string().optional(),
  baseSha: z.string().optional(),
  registered: z.string(),
  ready: z.boolean(),
  readiness: z.string(),
  coldBuildS: z.number().optional(),
  snapshotStartS: z.number().optional(),
  oracle: StoredTask.optional(),
  branch: z.object({ ok: z.boolean() }).optional(),
  nullTask: StoredTask.optional(),
  notes: z.array(z.string()),
  earlier: z.boolean().optional(),
  /** When the cold build time was measured (a later row at the same base found the snapshot built). */
  coldAt: z.string().optional(),
});
/** What the table and the JSON line read: a row of this run, or one kept from an earlier run. */
type SummaryRow = z.infer<typeof StoredRow>;

/** The latest stored row (with a cold build time when any row has one) of every corpus repository not in `skip`, at its current base commit. */
function earlierRows(dataDir: string, skip: Set<string>): SummaryRow[] {
  const file = join(dataDir, 'bench-rows.jsonl');
  if (!existsSync(file)) return [];
  const latest = new Map<string, SummaryRow>();
  for (const line of readFileSync(file, 'utf8').split('\n').filter((text) => text.trim() !== '')) {
    const parsed = StoredRow.safeParse(JSON.parse(line));
    if (!parsed.success || skip.has(parsed.data.id)) continue;
    const build = join(corpusDir(), parsed.data.id, 'build.json');
    const baseSha = existsSync(build) ? z.object({ baseSha: z.string() }).safeParse(JSON.parse(readFileSync(build, 'utf8'))) : undefined;
    // A row made before the repository was rebuilt (another base commit) is not its result now.
    if (parsed.data.baseSha && baseSha?.success && baseSha.data.baseSha !== parsed.data.baseSha) continue;
    const previous = latest.get(parsed.data.id);
    const cold = parsed.data.coldBuildS !== undefined ? { coldBuildS: parsed.data.coldBuildS, coldAt: parsed.data.at } : previous?.coldBuildS !== undefined ? { coldBuildS: previous.coldBuildS, coldAt: previous.coldAt } : {};
    latest.set(parsed.data.id, { ...parsed.data, ...cold, earlier: true });
  }
  return [...latest.values()];
}

function report(rows: SummaryRow[], ranNow: number): void {
  say('');
  if (rows.length > ranNow) say(`${ranNow} repositories run now; ${rows.length - ranNow} rows (marked *) from earlier runs in this data dir at the same base commit`);
  say(`${'repo'.padEnd(22)} ${'ready'.padEnd(6)} ${'cold s'.padStart(7)} ${'snap s'.padStart(7)} ${'oracle'.padEnd(16)} ${'branch'.padEnd(7)} ${'null'.padEnd(16)} ${'task s'.padStart(7)}`);
  for (const row of rows) {
    const oracle = row.oracle ? (row.oracle.pr ? `PR #${row.oracle.pr.number}` : row.oracle.state) : '-';
    const nullTask = row.nullTask ? (row.nullTask.pr ? `PR #${row.nullTask.pr.number}!` : `no PR (${row.nullTask.state})`) : '-';
    say(`${`${row.id}${row.earlier ? ' *' : ''}`.padEnd(22)} ${(row.ready ? 'yes' : 'no').padEnd(6)} ${(row.coldBuildS?.toFixed(1) ?? '-').padStart(7)} ${(row.snapshotStartS?.toFixed(2) ?? '-').padStart(7)} ${oracle.padEnd(16)} ${(row.branch ? (row.branch.ok ? 'green' : 'RED') : '-').padEnd(7)} ${nullTask.padEnd(16)} ${(row.oracle?.seconds.toFixed(0) ?? '-').padStart(7)}`);
    for (const note of [...row.notes, ...(row.oracle?.failure ? [`oracle: ${row.oracle.failure}`] : []), ...(row.oracle?.infrastructure ? [`oracle infrastructure: ${row.oracle.infrastructure}`] : []), ...(row.nullTask?.infrastructure ? [`null infrastructure: ${row.nullTask.infrastructure}`] : [])]) {
      say(`    ${note.replace(/\s+/g, ' ').slice(0, 300)}`);
    }
  }
  const coldBuild = median(rows.map((row) => row.coldBuildS ?? Number.NaN));
  const snapshotStart = median(rows.map((row) => row.snapshotStartS ?? Number.NaN));
  const tasks = rows.flatMap((row) => [row.oracle, row.nullTask]).filter((task) => task !== undefined);
  const summary = {
    repos: rows.length,
    ready: rows.filter((row) => row.ready).length,
    oracle_prs: rows.filter((row) => row.oracle?.pr && row.branch?.ok).length,
    oracle_prs_opened: rows.filter((row) => row.oracle?.pr).length,
    null_prs: rows.filter((row) => row.nullTask?.pr).length,
    infra_failures: tasks.filter((task) => task.infrastructure !== undefined).length,
    median_cold_build_s: round(coldBuild),
    median_snapshot_start_s: round(snapshotStart, 2),
    cold_over_snapshot: round(coldBuild / snapshotStart),
    median_task_s: round(median(tasks.map((task) => task.seconds))),
    cold_builds_measured: rows.filter((row) => row.coldBuildS !== undefined).length,
    from_earlier_runs: rows.length - ranNow,
    registered_with: [...new Set(rows.map((row) => row.registered).filter(Boolean))],
  };
  say(JSON.stringify(summary));
}

await main();
