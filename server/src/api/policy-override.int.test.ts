import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Task, TaskEvent } from '@dockhand/protocol';
import type { LocalForge } from '../forge';
import type { Fleet } from '../runner/fleet';
import { composedFleet, git } from '../runner/testing/composed-fleet';
import { editLikeTheAgent } from '../runner/testing/fakes';

/*
 * Owners' overrides through the API, end to end on the composed fleet (SQLite store, API,
 * scheduler, runner, real policy, local forge, real git push). The repo protects `src/**` and
 * names olive its owner; alice asks for a change to src/a.ts, which the policy blocks.
 */

const POLICY = "owners: [olive]\nprotectedPaths: ['src/**']\n";

let dir: string;
let fleet: Fleet;
let forge: LocalForge;
let bare: string;
let sha: string;
let alice: Record<string, string>;
let olive: Record<string, string>;

beforeEach(async () => {
  let token: string;
  ({ dir, fleet, forge, bare, sha, token } = await composedFleet('dockhand-override-', {
    files: { '.dockhand/policy.yml': POLICY },
    // First run: two → TWO. Sent back by the policy: changes nothing. Sent back by a developer: three → THREE.
    agent: async (input, call) => {
      if (call === 1) await editLikeTheAgent(input, 'two', 'TWO');
      if (call >= 3) await editLikeTheAgent(input, 'three', 'THREE');
      return { outcome: 'finished', summary: 'Made it loud.', diff: await input.sandbox.diff() };
    },
  }));
  alice = { authorization: `Bearer ${token}` };
  await fleet.store.createUser('olive', 'user');
  olive = { authorization: `Bearer ${(await fleet.store.createToken('olive')).token}` };
});
afterEach(async () => {
  await fleet.close();
  rmSync(dir, { recursive: true, force: true });
});

async function submit(): Promise<string> {
  const created = await fleet.app.inject({
    method: 'POST', url: '/v1/tasks', headers: alice,
    payload: { ticket: { kind: 'text', title: 'Make two loud' }, context: { repo: bare, baseSha: sha } },
  });
  expect(created.statusCode).toBe(202);
  return JSON.parse(created.body).id;
}

async function taskAfter(id: string, done: (task: Task, events: TaskEvent[]) => boolean): Promise<{ task: Task; events: TaskEvent[] }> {
  // Read from the store, not polled through the API: a poll every 20 ms meets the API's own rate
  // limit (120 a minute) once the task takes longer than a few seconds, as on a loaded machine.
  for (let i = 0; i < 1500; i++) {
    const task = await fleet.store.getTask(id);
    const events = await fleet.store.listEvents(id);
    if (task && done(task, events)) return { task, events };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`task ${id} never got there`);
}

interface ApprovalJson { id: string; kind: string; state: string; reason: string; decidedBy?: string; comment?: string; canDecide: boolean; deciders: string[] }

async function approvals(id: string, headers = alice): Promise<ApprovalJson[]> {
  const res = await fleet.app.inject({ url: `/v1/tasks/${id}/approvals`, headers });
  expect(res.statusCode).toBe(200);
  return JSON.parse(res.body).approvals;
}

const pendingOverride = async (id: string) => (await approvals(id)).find((a) => a.kind === 'policy_override' && a.state === 'pending');

function decide(id: string, approvalId: string, headers: Record<string, string>, decision: 'approved' | 'denied', comment?: string) {
  return fleet.app.inject({ method: 'POST', url: `/v1/tasks/${id}/approvals/${approvalId}`, headers, payload: { decision, ...(comment ? { comment } : {}) } });
}

const approveReview = (id: string) => fleet.app.inject({ method: 'POST', url: `/v1/tasks/${id}/review`, headers: alice, payload: { action: 'approve' } });
const dockhandBranches = () => git(bare, 'branch', '--list', 'dockhand/*');
const lastReviewCheck = (events: TaskEvent[]) => events.filter((e) => e.type === 'policy.checked' && e.data.stage === 'review').at(-1);

describe('policy overrides through the approvals API', () => {
  it('a repo owner overrides the blocked diff and the task pushes; a non-owner gets 403 and nothing is pushed', async () => {
    const id = await submit();
    await taskAfter(id, (task) => task.state === 'awaiting_review');
    const request = await pendingOverride(id);
    expect(request?.reason).toBe("1 policy violation blocks this diff: protected-path (src/a.ts); a repo owner (olive) may override them for this exact diff");
    // No push approval is asked for while the override is pending, and approving the review is refused.
    expect((await approvals(id)).filter((a) => a.kind === 'push')).toEqual([]);
    const early = await approveReview(id);
    expect(early.statusCode).toBe(409);
    expect(JSON.parse(early.body).error.message).toMatch(/breaks repository policy and policy override apr_\w+ is still pending/);

    // The owner finds it in her inbox, with the policy read from the repo at the base SHA; alice
    // sees whom it waits for, and no button of hers would be honoured.
    const inbox = async (headers: Record<string, string>) => JSON.parse((await fleet.app.inject({ url: '/v1/approvals?state=pending', headers })).body).approvals;
    expect(await inbox(olive)).toMatchObject([{ approvalId: request!.id, taskId: id, taskOwner: 'alice', repo: 'app', kind: 'policy_override', canDecide: true }]);
    expect(await inbox(alice)).toEqual([]);
    expect(await pendingOverride(id)).toMatchObject({ canDecide: false, deciders: ['olive'] });
    expect((await approvals(id, olive)).find((a) => a.id === request!.id)).toMatchObject({ canDecide: true });

    // alice asked for the task but does not own the repo.
    const refused = await decide(id, request!.id, alice, 'approved', 'I need it');
    expect(refused.statusCode).toBe(403);
    expect(JSON.parse(refused.body).error).toMatchObject({
      code: 'forbidden',
      message: `alice may not decide policy override ${request!.id}: only an owner of app may (olive)`,
    });
    expect((await pendingOverride(id))?.id).toBe(request!.id);
    expect(dockhandBranches()).toBe('');

    // olive owns the repo: she sees the task's approvals and diff although the task is alice's.
    expect((await fleet.app.inject({ url: `/v1/tasks/${id}/diff`, headers: olive })).statusCode).toBe(200);
    expect((await fleet.app.inject({ url: `/v1/tasks/${id}/interrupt`, method: 'POST', headers: olive })).statusCode).toBe(404);
    const decided = await decide(id, request!.id, olive, 'approved', 'src is ours to change');
    expect(decided.statusCode).toBe(200);
    expect(JSON.parse(decided.body)).toMatchObject({ state: 'approved', decidedBy: 'olive', comment: 'override of protected-path (src/a.ts): src is ours to change' });

    // The override is in the log (who, when, which violations), then review → push as usual.
    expect((await approvals(id)).filter((a) => a.kind === 'push' && a.state === 'pending')).toHaveLength(1);
    expect(await inbox(olive)).toEqual([]);
    expect(await inbox(alice)).toMatchObject([{ taskId: id, kind: 'push', canDecide: true }]);
    expect((await approveReview(id)).statusCode).toBe(200);
    const { task, events } = await taskAfter(id, (t) => t.state === 'pr_open');
    const resolved = events.find((e) => e.type === 'approval.resolved' && e.data.approvalId === request!.id);
    expect(resolved).toMatchObject({ data: { decision: 'approved', by: 'olive', comment: expect.stringContaining('protected-path (src/a.ts)') }, ts: expect.any(String) });
    expect(events.find((e) => e.type === 'policy.checked' && e.data.stage === 'push')).toMatchObject({
      data: { ok: false, overridden: true, overriddenBy: 'olive', violations: [{ rule: 'protected-path', path: 'src/a.ts' }] },
    });
    const opened = events.find((e) => e.type === 'pr.opened');
    if (opened?.type !== 'pr.opened') throw new Error('no pr.opened');
    expect(git(bare, 'show', `${opened.data.branch}:src/a.ts`)).toBe('one\nTWO\nthree');
    expect(task.prUrl).toBe('dockhand-local://app/pulls/1');
    const pr = await forge.getPullRequest('app', 1);
    expect(pr.body).toContain('## Policy overridden');
    expect(pr.body).toContain('overridden by olive, a repo owner:\n\n- `protected-path` `src/a.ts`');
  });

  it('an override given for one diff does not apply after the diff changes; a denial leaves the task blocked with the reason', async () => {
    const id = await submit();
    await taskAfter(id, (task) => task.state === 'awaiting_review');
    const first = await pendingOverride(id);
    expect((await decide(id, first!.id, olive, 'approved', 'two may be loud')).statusCode).toBe(200);

    // alice asks for more: the agent changes the diff, so olive's override no longer covers it.
    await fleet.app.inject({ method: 'POST', url: `/v1/tasks/${id}/messages`, headers: alice, payload: { text: 'make three loud too' } });
    const { events } = await taskAfter(id, (task, log) => task.state === 'awaiting_review' && log.filter((e) => e.type === 'approval.requested' && e.data.kind === 'policy_override').length === 2);
    const check = lastReviewCheck(events);
    expect(check).toMatchObject({ data: { ok: false, violations: [{ rule: 'protected-path', path: 'src/a.ts' }] } });
    expect(check?.type === 'policy.checked' && check.data.overridden).toBeFalsy();
    const second = await pendingOverride(id);
    expect(second?.id).not.toBe(first!.id);
    expect((await approvals(id)).find((a) => a.id === first!.id)?.state).toBe('approved');
    expect((await approveReview(id)).statusCode).toBe(409);

    const denied = await decide(id, second!.id, olive, 'denied', 'three stays quiet');
    expect(denied.statusCode).toBe(200);
    const { task, events: after } = await taskAfter(id, () => true);
    expect(task.state).toBe('awaiting_review');
    expect(after.filter((e) => e.type === 'task.state').at(-1)).toMatchObject({
      data: { state: 'awaiting_review', reason: 'blocked by policy: protected-path (src/a.ts); override denied by olive: three stays quiet' },
    });
    const blocked = await approveReview(id);
    expect(blocked.statusCode).toBe(409);
    expect(JSON.parse(blocked.body).error.message).toContain('olive denied the override: three stays quiet');
    expect(dockhandBranches()).toBe('');
    expect(after.some((e) => e.type === 'pr.opened')).toBe(false);
  });
});
