import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFixtureRepos, INTERNAL_SET, materializeInstances } from '../../scripts/eval/internal-set';
import { readInstances, writeInstances } from '../../server/src/eval/formats';
import { gradePredictions } from '../../server/src/eval/grade';
import { runEvaluation } from '../../server/src/eval/run';
import { SqliteStore } from '../../server/src/store/sqlite';

/*
 * `dockhand eval` end to end on two instances of the internal set (buggy-calc, node:test: one
 * planted bug, one from its history), through the real pieces: the CLI process, SQLite, the
 * fleet's scheduler and leases, the agent loop against the replay model, gVisor sandboxes, the
 * verified stop and the policy gate, then grading in fresh sandboxes.
 * - The CLI's `eval run --mode gold` is killed (SIGKILL) once the first instance has its result;
 *   running it again resumes: the finished instance is not run again (its result file is the same
 *   bytes, its ticket has one task), the other one is finished, and grading resolves both.
 * - `--mode null` (claims done, changes nothing) resolves none.
 */

const ROOT = resolve(import.meta.dirname, '../..');
// Two instances whose base has tests: an instance whose visible tree runs no test (h001's tests arrive only with its
// test patch) cannot be verified and stops as test_infrastructure (issue 27: a suite that ran no test verifies nothing).
const IDS = ['dockhand-eval__buggy-calc-p001', 'dockhand-eval__buggy-calc-p002'];

let scratch: string;
let reposDir: string;
let dataDir: string;
let instancesFile: string;
let child: ChildProcess | undefined;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'dockhand-eval-e2e-'));
  reposDir = join(scratch, 'repos');
  dataDir = join(scratch, 'data');
  const repos = buildFixtureRepos(reposDir);
  const chosen = readInstances(readFileSync(INTERNAL_SET, 'utf8')).records.filter((instance) => IDS.includes(instance.instance_id));
  expect(chosen.map((instance) => instance.instance_id).sort()).toEqual([...IDS].sort());
  const committed = join(scratch, 'committed.jsonl');
  writeFileSync(committed, writeInstances(chosen));
  instancesFile = materializeInstances(committed, reposDir, repos);
  // A killed run's task is resumed once its lease runs out: a short lease keeps the test short.
  process.env.DOCKHAND_LEASE_SECONDS = '3';
  process.env.DOCKHAND_POLL_MS = '200';
});

afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function resultFiles(runDir: string): string[] {
  const dir = join(runDir, 'results');
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.json')) : [];
}

/** `dockhand eval run` as a user runs it, killed with SIGKILL as soon as one instance has its result. */
async function runAndKill(runDir: string): Promise<{ output: string; killed: boolean }> {
  let output = '';
  child = spawn(process.execPath, ['--import', 'tsx', 'server/src/cli/bin.ts', 'eval', 'run', instancesFile, '--run-dir', runDir, '--mode', 'gold', '--repos-dir', reposDir, '--data-dir', dataDir, '--concurrency', '1'], {
    cwd: ROOT,
    env: { ...process.env, DOCKHAND_LEASE_SECONDS: '3', DOCKHAND_POLL_MS: '200', DOCKHAND_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const running = child;
  const exited = new Promise<void>((done) => running.once('exit', () => done()));
  const started = Date.now();
  while (running.exitCode === null && resultFiles(runDir).length === 0) await new Promise((done) => setTimeout(done, 250));
  process.stdout.write(`[eval e2e] first result after ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  const killed = running.exitCode === null;
  if (killed) running.kill('SIGKILL');
  await exited;
  return { output, killed };
}

describe('dockhand eval on the internal set (buggy-calc, gVisor)', () => {
  it('gold: killed mid-run, resumed without re-running the finished instance, graded resolved; null: resolved by none', async () => {
    const goldDir = join(scratch, 'run-gold');
    const crashed = await runAndKill(goldDir);
    expect(crashed.killed, crashed.output).toBe(true);
    const [finishedFile, ...others] = resultFiles(goldDir);
    expect(others, crashed.output).toEqual([]);
    const finishedPath = join(goldDir, 'results', finishedFile ?? '');
    const finishedBytes = readFileSync(finishedPath, 'utf8');
    const finishedAt = statSync(finishedPath).mtimeMs;

    const lines: string[] = [];
    const say = (line: string) => {
      lines.push(line);
      process.stdout.write(`[eval e2e] ${line}\n`);
    };
    say(`killed after ${finishedFile}`);
    const resumed = await runEvaluation({ instancesFile, runDir: goldDir, mode: 'gold', reposDir, dataDir, concurrency: 2, onProgress: say });
    expect(resumed.resumedDone, lines.join('\n')).toBe(1);
    expect(resumed.settled, lines.join('\n')).toBe(1);
    expect(readFileSync(finishedPath, 'utf8')).toBe(finishedBytes);
    expect(statSync(finishedPath).mtimeMs).toBe(finishedAt);
    expect(resultFiles(goldDir).sort()).toHaveLength(2);
    expect(resumed.results.every((result) => result.reachedReview), JSON.stringify(resumed.results, null, 2)).toBe(true);

    // One task per instance in the store, whatever the kill did.
    const store = new SqliteStore(join(dataDir, 'dockhand.db'));
    try {
      const tasks = (await store.listTasks({ limit: 100 })).tasks.filter((task) => task.ticket.kind === 'issue');
      for (const id of IDS) expect(tasks.filter((task) => task.ticket.kind === 'issue' && task.ticket.id === id), id).toHaveLength(1);
    } finally {
      await store.close();
    }

    const gold = await gradePredictions({ instancesFile, predictionsFile: resumed.predictionsFile, dataDir, reposDir, concurrency: 2, onProgress: say });
    expect(gold.grades.map((grade) => `${grade.instance_id} ${grade.status}`).sort(), JSON.stringify(gold.grades, null, 2)).toEqual(IDS.map((id) => `${id} resolved`).sort());

    const nullRun = await runEvaluation({ instancesFile, runDir: join(scratch, 'run-null'), mode: 'null', reposDir, dataDir, concurrency: 2, onProgress: say });
    expect(nullRun.results.filter((result) => result.reachedReview), JSON.stringify(nullRun.results, null, 2)).toEqual([]);
    const none = await gradePredictions({ instancesFile, predictionsFile: nullRun.predictionsFile, dataDir, reposDir, concurrency: 2 });
    expect(none.resolved).toBe(0);
    expect(none.grades.map((grade) => grade.status)).toEqual(['empty_patch', 'empty_patch']);
  }, 10 * 60_000);
});
