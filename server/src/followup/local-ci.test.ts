import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, type TaskEvent } from '@dockhand/protocol';
import type { FeedbackEngine, TestReport } from '../feedback/types';
import { PullRequestThreads } from '../forge/comments';
import { LocalForge } from '../forge/local-forge';
import { branchName, pushChange } from '../forge/push';
import { git } from '../forge/testing/repo';
import { FileCheckpointStore } from '../runner/checkpoints';
import { FakeSandboxProvider, type MemorySandbox } from '../runner/testing/fakes';
import type { EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import { forgeApp } from './testing/forge-app';
import { PullRequestFollower } from './follower';
import { LOCAL_CHECK, LocalCi } from './local-ci';

/*
 * The local forge's own CI check on a PR head (real git and SQLite; the sandbox and the test run
 * are fakes whose verdict the test scripts): a red run is run again and at the base, so the
 * follower's triage tells flaky and pre-existing from caused.
 */

let store: SqliteStore;
let log: EventLog;
let forge: LocalForge;
let threads: PullRequestThreads;
let baseSha: string;
let dataDir: string;

beforeEach(async () => {
  ({ store, log, forge, threads, baseSha, dataDir } = await forgeApp('dockhand-local-ci'));
});
afterEach(async () => {
  await store.close();
});

/** A task whose PR holds `two → TWO`, in pr_open. */
async function openTask() {
  const request = CreateTaskRequest.parse({ ticket: { kind: 'text', title: 'Make two loud' }, context: { repo: 'app', baseSha } });
  const { task } = await store.createTask('alice', request);
  const diff = 'diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n';
  const branch = branchName('t', 'make two loud', task.id);
  await pushChange({ cloneDir: `${dataDir}/clone`, remoteUrl: forge.repositoryPath('app'), baseSha, diff, branch, message: 'two' });
  const pr = await forge.openPullRequest({ repo: 'app', branch, base: 'main', title: 'Make two loud', body: '' });
  await log.setResult(task.id, { diff, summary: 'made two loud' });
  for (const state of ['provisioning', 'running', 'awaiting_review', 'pushing'] as const) await log.append(task.id, { type: 'task.state', data: { state } });
  await log.append(task.id, { type: 'pr.opened', data: { number: pr.number, url: pr.url, branch, headSha: pr.headSha } });
  await log.append(task.id, { type: 'task.state', data: { state: 'pr_open' } });
  return { task, pr };
}

/** Test runs whose verdicts come in the order given; each sees the sandbox's src/a.ts. */
function scriptedEngine(verdicts: boolean[], seen: string[]): FeedbackEngine {
  return {
    async runTests(sandbox) {
      seen.push((sandbox as MemorySandbox).files.get('src/a.ts') ?? '');
      const green = verdicts.shift() ?? true;
      return { command: 'npm test', scope: 'full', selectionReason: 'full', passed: green ? 3 : 2, failed: green ? 0 : 1, skipped: 0, ok: green, quarantined: [], output: green ? 'ok' : ' FAIL  test/a.test.ts > a', durationMs: 5, cases: [] } satisfies TestReport;
    },
    async diagnostics() {
      return [];
    },
  };
}

async function follow(verdicts: boolean[]) {
  const seen: string[] = [];
  const sandboxes = new FakeSandboxProvider();
  const localCi = new LocalCi({ sandboxes, feedback: () => scriptedEngine(verdicts, seen), threads, threadStore: store.prThreads });
  const follower = new PullRequestFollower({ log, threads, threadStore: store.prThreads, checkpoints: new FileCheckpointStore({ dataDir }), wake: () => undefined, localCi, flakyStore: store.flaky });
  const { task, pr } = await openTask();
  await follower.pollOnce();
  // The check runs in the background; the follower looks again when it is done.
  for (let i = 0; i < 100 && localCi.isRunning(pr); i++) await new Promise((done) => setTimeout(done, 20));
  await follower.pollOnce();
  const events: TaskEvent[] = await store.listEvents(task.id);
  const feedback = events.filter((e) => e.type === 'pr.feedback').at(-1);
  return { seen, sandboxes, pr, feedback, checks: await store.prThreads.listChecks('app', pr.headSha), base: await store.prThreads.listChecks('app', baseSha) };
}

describe('the local forge runs the repository\'s tests as a check on each PR head', () => {
  it('green: one run on the base snapshot with the PR applied, recorded as dockhand/tests, no round', async () => {
    const { seen, checks, feedback, sandboxes } = await follow([true]);
    expect(seen).toEqual(['one\nTWO\nthree\n']);
    expect(checks.map((c) => `${c.name}:${c.conclusion}:${c.postedBy}`)).toEqual([`${LOCAL_CHECK}:success:dockhand`]);
    expect(feedback).toMatchObject({ data: { kind: 'seen' } });
    expect(sandboxes.released).toHaveLength(1);
  });

  it('red then green at the same commit: flaky, no round; the failing test is quarantined', async () => {
    const { checks, feedback } = await follow([false, true]);
    expect(checks.map((c) => c.conclusion)).toEqual(['success', 'failure']);
    expect(feedback).toMatchObject({ data: { kind: 'triaged', check: { triage: 'flaky' } } });
    expect((await store.flaky.list('app')).map((test) => test.testId)).toEqual(['test/a.test.ts > a']);
  });

  it('red twice and red at the base: pre-existing, no round', async () => {
    const { checks, base, feedback, seen } = await follow([false, false, false]);
    expect(seen.at(-1)).toBe('one\ntwo\nthree\n');
    expect(base.map((c) => c.conclusion)).toEqual(['failure']);
    expect(checks.map((c) => c.conclusion)).toEqual(['failure', 'failure']);
    expect(feedback).toMatchObject({ data: { kind: 'triaged', check: { triage: 'pre_existing' } } });
  });

  it('red twice and green at the base: caused by the PR, a round starts', async () => {
    const { feedback } = await follow([false, false, true]);
    expect(feedback).toMatchObject({ data: { kind: 'round', round: 2, check: { name: LOCAL_CHECK, triage: 'caused' } } });
  });
});
