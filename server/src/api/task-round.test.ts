import { afterEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, TaskListResponse, Task } from '@dockhand/protocol';
import { taskLine } from '../cli/format';
import { harness, type Harness } from './test-support';

/*
 * `dockhand tasks` names a followed PR's round (#26): the task listing and the task carry the
 * latest follow-up round from the task's log, and the CLI's line shows it next to the state.
 */

describe('a followed PR\'s round in the task listing', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('GET /v1/tasks and GET /v1/tasks/:id carry the round; the CLI line reads "running round 2"; a task without a PR has none', async () => {
    h = await harness();
    const request = (title: string) => CreateTaskRequest.parse({ ticket: { kind: 'text', title }, context: { repo: 'app', baseSha: h.repo.sha } });
    const { task } = await h.store.createTask('alice', request('Make two loud'));
    const { task: plain } = await h.store.createTask('alice', request('Another'));
    for (const state of ['running', 'awaiting_review', 'pushing'] as const) await h.events.append(task.id, { type: 'task.state', data: { state } });
    await h.events.append(task.id, { type: 'pr.opened', data: { number: 1, url: 'dockhand-local://app/pull/1', branch: 'dockhand/1-two', headSha: 'a'.repeat(40) } });
    await h.events.append(task.id, { type: 'task.state', data: { state: 'pr_open' } });
    const before = Task.parse((await h.app.inject({ url: `/v1/tasks/${task.id}`, headers: h.auth('alice') })).json());
    expect(before.round).toBeUndefined();
    expect(taskLine(before)).not.toMatch(/round/);

    await h.events.append(task.id, { type: 'pr.feedback', data: { number: 1, kind: 'round', round: 2, seenThrough: 1, checksSeenThrough: 0, comments: [{ id: 1, author: 'alice', body: 'three too' }], ignored: [] } });
    await h.events.append(task.id, { type: 'task.state', data: { state: 'running', reason: 'round 2: review on PR #1' } });
    const list = TaskListResponse.parse((await h.app.inject({ url: '/v1/tasks', headers: h.auth('alice') })).json());
    const followed = list.tasks.find((entry) => entry.id === task.id)!;
    expect(followed.round).toBe(2);
    expect(list.tasks.find((entry) => entry.id === plain.id)!.round).toBeUndefined();
    expect(taskLine(followed)).toMatch(new RegExp(`^${task.id}  running round 2 +\\$0\\.00  Make two loud  dockhand-local://app/pull/1$`));
    expect(Task.parse((await h.app.inject({ url: `/v1/tasks/${task.id}`, headers: h.auth('alice') })).json()).round).toBe(2);
  });
});
