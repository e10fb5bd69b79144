import { createTwoFilesPatch } from 'diff';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TaskDiffResponse, TaskFileResponse, type Task, type TaskEvent } from '@dockhand/protocol';
import { buildPullRequestBody } from '../forge/pr-body';
import { leftOutFiles, splitDiff, withoutFiles } from '../runner/review-files';
import { TaskRunner } from '../runner/task-runner';
import type { PublisherPort, PublishResult } from '../runner/ports';
import { FakePolicy, FakeSandboxProvider, ScriptedAgent, editLikeTheAgent, type AgentScript } from '../runner/testing/fakes';
import { harness, type Harness } from './test-support';

/*
 * Accept per file and review rounds through the API with the real runner, store and event hub
 * (scripted agent, in-memory sandbox): a rejected file's changes are not in what is pushed, the
 * policy's push check or the PR; a request for changes records the diff it was made on, so the
 * next round's own changes can be told from the whole diff.
 */

class RecordingPublisher implements PublisherPort {
  diffs: string[] = [];
  async publish(input: { task: Task; diff: string }): Promise<PublishResult> {
    this.diffs.push(input.diff);
    return { number: 1, url: 'dockhand-local://app/pulls/1', branch: `dockhand/${input.task.id}`, headSha: 'c'.repeat(40) };
  }
}

let h: Harness;
let policy: FakePolicy;
let publisher: RecordingPublisher;
beforeEach(async () => {
  h = await harness();
  policy = new FakePolicy();
  publisher = new RecordingPublisher();
});
afterEach(async () => { await h.close(); });

/** Round 1 edits src/a.ts and adds src/b.ts; round 2 (after a request for changes) edits src/a.ts again. */
const twoFiles: AgentScript = async (input, call) => {
  if (call === 1) {
    await editLikeTheAgent(input, 'two', 'TWO');
    await input.sandbox.writeFile('src/b.ts', 'export const b = 1;\n');
    // As write_file records it, so a new sandbox for round 2 gets the file back.
    await input.events.append({ type: 'file.changed', data: { path: 'src/b.ts', change: 'added', patch: createTwoFilesPatch('/dev/null', 'b/src/b.ts', '', 'export const b = 1;\n') } });
  } else {
    await editLikeTheAgent(input, 'three', 'THREE');
  }
  return { outcome: 'finished', summary: `round ${call}`, diff: await input.sandbox.diff() };
};

function makeRunner(): TaskRunner {
  return new TaskRunner({ log: h.events, sandboxes: new FakeSandboxProvider(), agent: new ScriptedAgent(twoFiles), policy, publisher });
}
const review = (id: string, payload: object) => h.app.inject({ method: 'POST', url: `/v1/tasks/${id}/review`, headers: h.auth('alice'), payload });
const run = (runner: TaskRunner, id: string) => runner.run(id, new AbortController().signal);
const events = (id: string): Promise<TaskEvent[]> => h.store.listEvents(id);

async function inReview(): Promise<{ task: Task; runner: TaskRunner }> {
  const task = await h.createTask('alice');
  const runner = makeRunner();
  await run(runner, task.id);
  expect((await h.store.getTask(task.id))?.state).toBe('awaiting_review');
  return { task, runner };
}

describe('accept per file', () => {
  it('pushes only the accepted files; the rejection is in the log, the push check and the PR body', async () => {
    const { task, runner } = await inReview();
    const response = await review(task.id, { action: 'approve', rejectedFiles: ['src/b.ts'] });
    expect(response.statusCode).toBe(200);
    await run(runner, task.id);
    expect((await h.store.getTask(task.id))?.state).toBe('pr_open');
    expect(publisher.diffs).toHaveLength(1);
    expect(splitDiff(publisher.diffs[0]!).map((s) => s.path)).toEqual(['src/a.ts']);
    expect(publisher.diffs[0]).toContain('+TWO');
    expect(publisher.diffs[0]).not.toContain('export const b');
    const pushCheck = policy.checks.find((c) => c.stage === 'push');
    expect(pushCheck?.diff).toBe(publisher.diffs[0]);
    const log = await events(task.id);
    expect(log.find((e) => e.type === 'review.files_rejected')?.data).toEqual({ by: 'alice', rejected: ['src/b.ts'], accepted: ['src/a.ts'] });
    // The whole diff stays what was reviewed.
    expect(splitDiff((await h.store.getResult(task.id))!.diff).map((s) => s.path)).toEqual(['src/a.ts', 'src/b.ts']);
    // The diff route gives the stored decision, so a client shows the file as left out in every later round.
    const diff = TaskDiffResponse.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/diff`, headers: h.auth('alice') })).json());
    expect(diff.leftOut).toEqual(['src/b.ts']);
  });

  it('a file stays left out across approvals until a later approval pushes it', () => {
    const at = (seq: number, rejected: string[], accepted: string[]): TaskEvent => ({ seq, taskId: 't', ts: '2026-01-01T00:00:00.000Z', type: 'review.files_rejected', data: { by: 'alice', rejected, accepted } });
    expect(leftOutFiles([at(1, ['b.ts'], ['a.ts']), at(2, ['c.ts'], ['a.ts'])])).toEqual(['b.ts', 'c.ts']);
    expect(leftOutFiles([at(1, ['b.ts'], ['a.ts']), at(2, ['c.ts'], ['a.ts', 'b.ts'])])).toEqual(['c.ts']);
    expect(leftOutFiles([])).toEqual([]);
  });

  it('an approval without rejections pushes every file', async () => {
    const { task, runner } = await inReview();
    expect((await review(task.id, { action: 'approve' })).statusCode).toBe(200);
    await run(runner, task.id);
    expect(splitDiff(publisher.diffs[0]!).map((s) => s.path)).toEqual(['src/a.ts', 'src/b.ts']);
    expect((await events(task.id)).some((e) => e.type === 'review.files_rejected')).toBe(false);
  });

  it('refuses a file not in the diff, every file rejected, and rejected files with reject, naming the field', async () => {
    const { task } = await inReview();
    const unknown = await review(task.id, { action: 'approve', rejectedFiles: ['src/b.ts', 'src/nope.ts'] });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain('rejectedFiles.1');
    expect(unknown.body).toContain('src/nope.ts is not a file of the diff under review (src/a.ts, src/b.ts)');
    const all = await review(task.id, { action: 'approve', rejectedFiles: ['src/a.ts', 'src/b.ts'] });
    expect(all.statusCode).toBe(400);
    expect(all.body).toContain('every file of the diff is rejected');
    const withReject = await review(task.id, { action: 'reject', rejectedFiles: ['src/b.ts'] });
    expect(withReject.statusCode).toBe(400);
    expect(withReject.body).toContain('a rejected task pushes nothing');
    // Nothing was decided or written by the refusals.
    expect((await h.store.getTask(task.id))?.state).toBe('awaiting_review');
    expect((await events(task.id)).some((e) => e.type === 'review.files_rejected')).toBe(false);
  });

  it('request changes with a file rejected tells the agent to revert it', async () => {
    const { task } = await inReview();
    const response = await review(task.id, { action: 'request_changes', comments: [{ body: 'Keep b out of this.' }], rejectedFiles: ['src/b.ts'] });
    expect(response.statusCode).toBe(200);
    const log = await events(task.id);
    const requested = log.find((e) => e.type === 'review.requested_changes');
    expect(requested?.type === 'review.requested_changes' && requested.data.rejectedFiles).toEqual(['src/b.ts']);
    const message = log.findLast((e) => e.type === 'user.message');
    expect(message?.type === 'user.message' && message.data.text).toBe(
      'The reviewer requested changes:\n- Keep b out of this.\n\nThe reviewer rejected your changes to these files; revert them to the base version:\n- src/b.ts',
    );
  });
});

describe('review rounds', () => {
  it('after a round of changes, the diff of that round alone and the whole diff; the file as reviewed last', async () => {
    const { task, runner } = await inReview();
    const first = TaskDiffResponse.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/diff`, headers: h.auth('alice') })).json());
    expect(first.round).toBe(1);
    expect(first.roundDiff).toBeUndefined();

    expect((await review(task.id, { action: 'request_changes', comments: [{ body: 'three too' }] })).statusCode).toBe(200);
    // While round 2 runs, the files route shows the sandbox as it is, not round 1's stored result.
    h.control.liveDiff = async () => '--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n';
    const live = TaskFileResponse.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/files?path=src/a.ts`, headers: h.auth('alice') })).json());
    expect(live.after).toBe('one\n2\nthree\n');
    delete h.control.liveDiff;
    await run(runner, task.id);
    expect((await h.store.getTask(task.id))?.state).toBe('awaiting_review');

    const second = TaskDiffResponse.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/diff`, headers: h.auth('alice') })).json());
    expect(second.round).toBe(2);
    expect(second.files.map((f) => f.path)).toEqual(['src/a.ts', 'src/b.ts']);
    expect(second.diff).toContain('+TWO');
    expect(second.roundFiles).toEqual([{ path: 'src/a.ts', change: 'modified' }]);
    // This round's change only: three → THREE, with TWO as context (it was there when reviewed).
    expect(second.roundDiff).toContain('-three');
    expect(second.roundDiff).toContain('+THREE');
    expect(second.roundDiff).not.toContain('-two');
    expect(second.roundDiff).not.toContain('src/b.ts');

    const file = TaskFileResponse.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/files?path=src/a.ts`, headers: h.auth('alice') })).json());
    expect(file).toEqual({ path: 'src/a.ts', base: 'one\ntwo\nthree\n', reviewed: 'one\nTWO\nthree\n', after: 'one\nTWO\nTHREE\n' });
    const added = TaskFileResponse.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/files?path=src/b.ts`, headers: h.auth('alice') })).json());
    expect(added).toEqual({ path: 'src/b.ts', base: null, reviewed: 'export const b = 1;\n', after: 'export const b = 1;\n' });
  });
});

describe('splitting a git diff per file', () => {
  const diff = [
    'diff --git a/src/a.ts b/src/a.ts',
    'index 1111111..2222222 100644',
    '--- a/src/a.ts',
    '+++ b/src/a.ts',
    '@@ -1,1 +1,1 @@',
    '-one',
    '+ONE',
    'diff --git a/logo.png b/logo.png',
    'new file mode 100644',
    'index 0000000..3333333',
    'Binary files /dev/null and b/logo.png differ',
    'diff --git a/old.txt b/old.txt',
    'deleted file mode 100644',
    'index 4444444..0000000',
    '--- a/old.txt',
    '+++ /dev/null',
    '@@ -1 +0,0 @@',
    '-gone',
    '',
  ].join('\n');

  it('names each section, binary and deleted files included, and drops sections byte for byte', () => {
    expect(splitDiff(diff).map((s) => [s.path, s.change])).toEqual([['src/a.ts', 'modified'], ['logo.png', 'added'], ['old.txt', 'deleted']]);
    const kept = withoutFiles(diff, ['logo.png']);
    expect(kept).toBe(diff.replace(/diff --git a\/logo\.png[\s\S]*?(?=diff --git a\/old)/, ''));
    expect(withoutFiles(diff, [])).toBe(diff);
  });

  it('the PR body lists what was left out', () => {
    const body = buildPullRequestBody({ ticket: { title: 't' }, summary: 's', usage: { turns: 1, inputTokens: 1, outputTokens: 1, costUsd: 0 }, leftOut: { by: ['alice'], files: ['src/b.ts'] } });
    expect(body).toContain('## Left out in review');
    expect(body).toContain('alice did not accept the changes to these files, so they are not in this pull request (the tests ran with them in):\n\n- `src/b.ts`');
  });
});
