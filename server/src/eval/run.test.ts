import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentInput, AgentResult } from '../runner/ports';
import { FakeSandboxProvider, ScriptedAgent, editLikeTheAgent } from '../runner/testing/fakes';
import { SqliteStore } from '../store/sqlite';
import { runEvaluation } from './run';

/*
 * `eval run` through the real fleet (SQLite store, API, scheduler, leases, task runner, policy
 * gate, registry and local forge), with the in-memory sandbox and a scripted agent in place of
 * gVisor and the loop: runs that share a data directory stay apart, and results are written as
 * tasks settle, not after every instance was submitted.
 */

const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();

let dir: string;
let instancesFile: string;
const saved = { lease: process.env.DOCKHAND_LEASE_SECONDS, poll: process.env.DOCKHAND_POLL_MS };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'dockhand-eval-run-'));
  const repoPath = join(dir, 'repo');
  mkdirSync(join(repoPath, 'src'), { recursive: true });
  writeFileSync(join(repoPath, 'src/a.ts'), 'one\ntwo\nthree\n');
  git(repoPath, 'init', '-q', '-b', 'main');
  git(repoPath, 'add', '-A');
  git(repoPath, 'commit', '-q', '-m', 'base');
  const sha = git(repoPath, 'rev-parse', 'HEAD');
  const instance = (id: string) => JSON.stringify({
    repo: 'owner/lib', instance_id: id, base_commit: sha, problem_statement: `Fix ${id}`, test_patch: '',
    FAIL_TO_PASS: '["a.test.ts > two is loud"]', PASS_TO_PASS: '[]', dockhand: { repo_path: 'repo' },
  });
  instancesFile = join(dir, 'instances.jsonl');
  writeFileSync(instancesFile, `${instance('lib-1')}\n${instance('lib-2')}\n`);
  process.env.DOCKHAND_LEASE_SECONDS = '3';
  process.env.DOCKHAND_POLL_MS = '50';
});

afterAll(() => {
  process.env.DOCKHAND_LEASE_SECONDS = saved.lease;
  process.env.DOCKHAND_POLL_MS = saved.poll;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const urlOf = (input: AgentInput) => (input.task.ticket.kind === 'issue' ? input.task.ticket.url ?? '' : '');
const finish = async (input: AgentInput): Promise<AgentResult> => {
  await editLikeTheAgent(input, 'two', 'Two');
  return { outcome: 'finished', summary: 'Made two Two.', diff: await input.sandbox.diff() };
};
const partsOf = (agent: ScriptedAgent) => ({ sandboxes: { provider: new FakeSandboxProvider(), close: async () => undefined }, agent });

async function until(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

describe('eval run on the fleet', () => {
  it('a second run on the same data directory runs only its own tasks; the first, stopped, resumes its own', { timeout: 90_000 }, async () => {
    const dataDir = join(dir, 'shared-data');
    const runA = join(dir, 'run-a');
    const runB = join(dir, 'run-b');
    // Run A: its lib-1 task hangs until the run is stopped.
    const stopA = new AbortController();
    const agentA = new ScriptedAgent(async (input) => {
      stopA.abort();
      await new Promise((done) => input.signal.addEventListener('abort', done, { once: true }));
      return { outcome: 'cancelled', summary: 'stopped', diff: '' };
    });
    await runEvaluation({ instancesFile, runDir: runA, dataDir, mode: 'model', only: ['lib-1'], concurrency: 1, signal: stopA.signal, sessionParts: partsOf(agentA) });
    expect(agentA.calls.map(urlOf)).toEqual([expect.stringContaining('run-a')]);

    // Run B on the same data directory: A's task is runnable (its lease was handed back), older than B's.
    const agentB = new ScriptedAgent(finish);
    const second = await runEvaluation({ instancesFile, runDir: runB, dataDir, mode: 'model', only: ['lib-1'], concurrency: 1, sessionParts: partsOf(agentB) });
    expect(agentB.calls.map(urlOf)).toEqual([expect.stringContaining('run-b')]);
    expect(second.results.map((result) => [result.instance_id, result.reachedReview])).toEqual([['lib-1', true]]);
    const store = new SqliteStore(join(dataDir, 'dockhand.db'));
    const tasks = (await store.listTasks({ limit: 10 })).tasks;
    await store.close();
    const taskOfA = tasks.find((task) => task.ticket.kind === 'issue' && task.ticket.url?.includes('run-a'));
    expect(taskOfA?.state).not.toBe('awaiting_review');
    expect(taskOfA?.state).not.toBe('failed');

    // Run A again: it resumes its own task, nothing of B's.
    const agentA2 = new ScriptedAgent(finish);
    const resumed = await runEvaluation({ instancesFile, runDir: runA, dataDir, mode: 'model', only: ['lib-1'], concurrency: 1, sessionParts: partsOf(agentA2) });
    expect(agentA2.calls.map((input) => [input.task.id, urlOf(input).includes('run-a')])).toEqual([[taskOfA?.id, true]]);
    expect(resumed.results.map((result) => [result.instance_id, result.taskId, result.reachedReview])).toEqual([['lib-1', taskOfA?.id, true]]);
  });

  it('writes an instance\'s result as soon as its task settles, while later instances are still being registered', { timeout: 60_000 }, async () => {
    const runDir = join(dir, 'run-incremental');
    const agent = new ScriptedAgent(finish);
    const lines: string[] = [];
    const summary = await runEvaluation({
      instancesFile, runDir, mode: 'model', concurrency: 2, sessionParts: partsOf(agent), onProgress: (line) => lines.push(line),
      // lib-2's registration goes on until lib-1's result is on disk.
      beforeRegistering: async (instance) => {
        if (instance.instance_id === 'lib-2') await until(() => existsSync(join(runDir, 'results', 'lib-1.json')), "lib-1's result");
      },
    });
    expect(summary.results.map((result) => [result.instance_id, result.reachedReview])).toEqual([['lib-1', true], ['lib-2', true]]);
    expect(lines.findIndex((line) => line.startsWith('lib-1: reached review'))).toBeLessThan(lines.findIndex((line) => line.startsWith('lib-2: task')));
  });
});
