import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApprovalInboxResponse, ErrorBody, TaskApprovalsResponse, type Task } from '@dockhand/protocol';
import { parseRepoPolicy } from '../policy';
import type { ApprovalKind } from '../store/types';
import { harness, type Harness } from './test-support';

/*
 * The approvals inbox and `canDecide`. bob owns /srv/repos/app.git (its policy names him);
 * /srv/repos/other.git lists carol. alice is a developer with tasks on both.
 */

const APP = '/srv/repos/app.git';
const OTHER = '/srv/repos/other.git';

let h: Harness;
beforeEach(async () => {
  h = await harness({
    deps: {
      repoPolicy: async (task) => parseRepoPolicy(task.context.repo === APP ? 'owners: [bob]\n' : task.context.repo === OTHER ? 'owners: [carol]\n' : undefined),
    },
  });
});
afterEach(async () => { await h.close(); });

/** A task of `owner` on `repo`, waiting in `state` with one pending approval of `kind`. */
async function waiting(owner: 'alice' | 'bob', kind: ApprovalKind, repo = APP, title = `${kind} on ${repo}`): Promise<{ task: Task; approvalId: string }> {
  const task = await h.createTask(owner, { context: { repo, baseSha: 'a'.repeat(40) }, ticket: { kind: 'text', title } });
  const state = kind === 'command' ? 'awaiting_approval' : 'awaiting_review';
  await h.events.append(task.id, { type: 'task.state', data: { state } });
  const { approval } = await h.store.requestApproval(task.id, { kind, reason: `why ${kind}`, ...(kind === 'command' ? { command: 'npm install left-pad' } : {}) });
  return { task, approvalId: approval.id };
}

async function inbox(who: 'alice' | 'bob' | 'admin', query = ''): Promise<ApprovalInboxResponse> {
  const res = await h.app.inject({ url: `/v1/approvals?state=pending${query}`, headers: h.auth(who) });
  expect(res.statusCode).toBe(200);
  return ApprovalInboxResponse.parse(JSON.parse(res.body));
}

async function taskApprovals(who: 'alice' | 'bob', taskId: string) {
  const res = await h.app.inject({ url: `/v1/tasks/${taskId}/approvals`, headers: h.auth(who) });
  expect(res.statusCode).toBe(200);
  return TaskApprovalsResponse.parse(JSON.parse(res.body));
}

describe('GET /v1/approvals (the inbox)', () => {
  it("lists a repo owner's overrides and a developer's own push and command approvals, and nothing else", async () => {
    const override = await waiting('alice', 'policy_override', APP, 'Touch the CI config');
    const otherOverride = await waiting('alice', 'policy_override', OTHER);
    const push = await waiting('alice', 'push');
    const command = await waiting('alice', 'command');
    const bobsPush = await waiting('bob', 'push');

    const forBob = await inbox('bob');
    expect(forBob.approvals.map((a) => a.approvalId)).toEqual([bobsPush.approvalId, override.approvalId]);
    expect(forBob.approvals[1]).toEqual({
      approvalId: override.approvalId,
      taskId: override.task.id,
      taskTitle: 'Touch the CI config',
      taskOwner: 'alice',
      repo: APP,
      kind: 'policy_override',
      reason: 'why policy_override',
      requestedAt: expect.any(String),
      canDecide: true,
    });
    expect(forBob.nextCursor).toBeNull();

    // alice requested the overrides but owns neither repo: she sees her push and command approvals only.
    const forAlice = await inbox('alice');
    expect(forAlice.approvals.map((a) => [a.kind, a.approvalId])).toEqual([['command', command.approvalId], ['push', push.approvalId]]);
    expect(forAlice.approvals[0]).toMatchObject({ command: 'npm install left-pad', taskOwner: 'alice', canDecide: true });
    expect(forAlice.approvals.some((a) => a.approvalId === otherOverride.approvalId)).toBe(false);
  });

  it('drops an approval once it is decided, and one whose task stopped waiting', async () => {
    const command = await waiting('alice', 'command');
    const push = await waiting('alice', 'push');
    expect((await inbox('alice')).approvals).toHaveLength(2);
    const decided = await h.app.inject({ method: 'POST', url: `/v1/tasks/${command.task.id}/approvals/${command.approvalId}`, headers: h.auth('alice'), payload: { decision: 'denied', comment: 'no' } });
    expect(decided.statusCode).toBe(200);
    expect(JSON.parse(decided.body)).toMatchObject({ state: 'denied', decidedBy: 'alice', canDecide: false });
    expect((await inbox('alice')).approvals.map((a) => a.approvalId)).toEqual([push.approvalId]);

    await h.events.append(push.task.id, { type: 'task.state', data: { state: 'cancelled', reason: 'interrupted' } });
    expect((await inbox('alice')).approvals).toEqual([]);
  });

  it('pages newest first with a cursor, skipping overrides on repos the caller does not own', async () => {
    const mine: string[] = [];
    for (let i = 0; i < 5; i++) {
      mine.push((await waiting('alice', 'policy_override', APP, `task ${i}`)).approvalId);
      await waiting('alice', 'policy_override', OTHER, `not bob's ${i}`);
    }
    const seen: string[] = [];
    let cursor: string | null | undefined;
    const pages: number[] = [];
    do {
      const page = await inbox('bob', `&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      pages.push(page.approvals.length);
      seen.push(...page.approvals.map((a) => a.approvalId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages).toEqual([2, 2, 1]);
    expect(seen).toEqual([...mine].reverse());
  });

  it('names the cursor when it is not one the server gave out, and accepts only state=pending', async () => {
    const bad = await h.app.inject({ url: '/v1/approvals?cursor=bm9wZQ', headers: h.auth('alice') });
    expect(bad.statusCode).toBe(400);
    expect(ErrorBody.parse(JSON.parse(bad.body)).error).toMatchObject({ code: 'bad_request', field: 'cursor' });
    const decided = await h.app.inject({ url: '/v1/approvals?state=approved', headers: h.auth('alice') });
    expect(decided.statusCode).toBe(400);
    expect(ErrorBody.parse(JSON.parse(decided.body)).error.field).toBe('state');
  });
});

describe('canDecide on a task\'s approvals', () => {
  it('is true for the repo owner on an override and for the requester on her own approvals, with who may decide', async () => {
    const { task, approvalId } = await waiting('alice', 'policy_override');
    const { approval: command } = await h.store.requestApproval(task.id, { kind: 'command', reason: 'network', command: 'curl x' });

    const { approvals: asAlice, canReview: aliceReviews } = await taskApprovals('alice', task.id);
    expect(aliceReviews).toBe(true);
    expect(asAlice.find((a) => a.id === approvalId)).toMatchObject({ kind: 'policy_override', canDecide: false, deciders: ['bob'] });
    expect(asAlice.find((a) => a.id === command.id)).toMatchObject({ kind: 'command', canDecide: true, deciders: ['alice'] });

    // bob reads the task as its repo's owner: the override is his to decide, the command is not.
    const { approvals: asBob, canReview: bobReviews } = await taskApprovals('bob', task.id);
    expect(bobReviews).toBe(false);
    expect(asBob.find((a) => a.id === approvalId)).toMatchObject({ canDecide: true, deciders: ['bob'] });
    expect(asBob.find((a) => a.id === command.id)).toMatchObject({ canDecide: false, deciders: ['alice'] });
  });

  it('lets a repo owner open the task and its events (to see what he decides); others still get 404', async () => {
    const { task } = await waiting('alice', 'policy_override');
    expect((await h.app.inject({ url: `/v1/tasks/${task.id}`, headers: h.auth('bob') })).statusCode).toBe(200);
    expect((await h.app.inject({ url: `/v1/tasks/${task.id}/events`, headers: h.auth('bob') })).statusCode).toBe(200);
    const elsewhere = await waiting('alice', 'policy_override', OTHER);
    expect((await h.app.inject({ url: `/v1/tasks/${elsewhere.task.id}`, headers: h.auth('bob') })).statusCode).toBe(404);
    expect((await h.app.inject({ url: `/v1/tasks/${elsewhere.task.id}/events`, headers: h.auth('bob') })).statusCode).toBe(404);
    expect((await h.app.inject({ url: `/v1/tasks/${elsewhere.task.id}/approvals`, headers: h.auth('bob') })).statusCode).toBe(404);
  });
});
