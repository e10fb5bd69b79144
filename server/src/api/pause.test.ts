import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Task, type TaskEvent } from '@dockhand/protocol';
import { TaskRunner } from '../runner/task-runner';
import { pendingPause } from '../runner/steering';
import { CountingPublisher, FakePolicy, FakeSandboxProvider, ScriptedAgent, editLikeTheAgent, type AgentScript } from '../runner/testing/fakes';
import { harness, type Harness } from './test-support';

/*
 * Pause and resume through the API with the real runner, store and event hub (the agent is
 * scripted: it stops where the loop's safe point is, when its steering source says a pause was
 * asked; `loop.test.ts` tests that safe point in the real loop).
 */

let h: Harness;
let sandboxes: FakeSandboxProvider;
beforeEach(async () => {
  h = await harness();
  sandboxes = new FakeSandboxProvider();
});
afterEach(async () => { await h.close(); });

const makeRunner = (script: AgentScript) => {
  const agent = new ScriptedAgent(script);
  return { agent, runner: new TaskRunner({ log: h.events, sandboxes, agent, policy: new FakePolicy(), publisher: new CountingPublisher() }) };
};
const states = (events: TaskEvent[]) => events.flatMap((e) => (e.type === 'task.state' ? [e.data.state] : []));
const post = (id: string, what: string, who: 'alice' | 'bob' = 'alice', payload?: object) =>
  h.app.inject({ method: 'POST', url: `/v1/tasks/${id}/${what}`, headers: h.auth(who), ...(payload ? { payload } : {}) });
const stateOf = async (id: string) => (await h.store.getTask(id))?.state;

/** Waits, like the loop between turns, until the steering source reports a pause. */
async function untilPauseAsked(input: Parameters<AgentScript>[0]): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const by = input.steering.pauseRequested?.();
    if (by !== undefined) return by;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('no pause was asked');
}

describe('pause and resume', () => {
  it('pauses a running task at its safe point keeping the sandbox; a message waits; resume goes on in the same sandbox', async () => {
    const task = await h.createTask('alice');
    let working!: () => void;
    const inLoop = new Promise<void>((resolve) => { working = resolve; });
    const { agent, runner } = makeRunner(async (input, call) => {
      if (call === 1) {
        await editLikeTheAgent(input, 'two', 'TWO');
        working();
        const by = await untilPauseAsked(input);
        return { outcome: 'paused', summary: `Paused by ${by}.`, diff: await input.sandbox.diff() };
      }
      expect(input.steering.pauseRequested?.()).toBeUndefined();
      expect(input.priorEvents.filter((e) => e.type === 'user.message').map((e) => e.type === 'user.message' && e.data.text)).toEqual(['also rename it']);
      await editLikeTheAgent(input, 'three', 'THREE');
      return { outcome: 'finished', summary: 'made two and three loud', diff: await input.sandbox.diff() };
    });
    const first = runner.run(task.id, new AbortController().signal);
    await inLoop;

    const asked = await post(task.id, 'pause');
    expect(asked.statusCode).toBe(202);
    // Asked, not yet reached: the agent finishes what it is doing first.
    expect(Task.parse(JSON.parse(asked.body)).state).toBe('running');
    await first;
    expect(await stateOf(task.id)).toBe('paused');
    expect(sandboxes.released).toEqual([]);
    expect((await h.store.listEvents(task.id)).filter((e) => e.type === 'task.pause_requested')).toHaveLength(1);

    // While paused: a message is kept for the resume, a second pause changes nothing, the worker is free.
    expect((await post(task.id, 'messages', 'alice', { text: 'also rename it' })).statusCode).toBe(202);
    expect(await stateOf(task.id)).toBe('paused');
    expect((await post(task.id, 'pause')).statusCode).toBe(202);
    expect((await h.store.listEvents(task.id)).filter((e) => e.type === 'task.pause_requested')).toHaveLength(1);
    expect((await h.store.listRunnable(10)).map((t) => t.id)).not.toContain(task.id);
    expect((await post(task.id, 'resume', 'bob')).statusCode).toBe(404);

    const wakes = h.control.wakes;
    const resumed = await post(task.id, 'resume');
    expect(resumed.statusCode).toBe(202);
    expect(Task.parse(JSON.parse(resumed.body)).state).toBe('running');
    expect(h.control.wakes).toBe(wakes + 1);
    await runner.run(task.id, new AbortController().signal);

    expect(await stateOf(task.id)).toBe('awaiting_review');
    expect(agent.calls[1]?.sandbox).toBe(agent.calls[0]?.sandbox);
    expect(sandboxes.acquired).toHaveLength(1);
    const events = await h.store.listEvents(task.id);
    expect(states(events)).toEqual(['queued', 'provisioning', 'running', 'paused', 'running', 'awaiting_review']);
    expect(events.find((e) => e.type === 'task.resumed')).toMatchObject({ data: { by: 'alice' } });
    expect((await h.store.getResult(task.id))?.diff).toMatch(/\+TWO[\s\S]*\+THREE/);
    expect((await post(task.id, 'resume')).statusCode).toBe(409);
    expect((await post(task.id, 'pause')).statusCode).toBe(409);
  });

  it('a paused sandbox that did not survive (its wall-clock limit) is replaced on resume, with the changes replayed', async () => {
    const task = await h.createTask('alice');
    const { agent, runner } = makeRunner(async (input, call) => {
      if (call === 1) {
        await editLikeTheAgent(input, 'two', 'TWO');
        return { outcome: 'paused', summary: 'Paused by alice.', diff: await input.sandbox.diff() };
      }
      return { outcome: 'finished', summary: 'made two loud', diff: await input.sandbox.diff() };
    });
    await runner.run(task.id, new AbortController().signal);
    expect(await stateOf(task.id)).toBe('paused');
    const first = sandboxes.acquired[0]!;
    first.exec = async () => { throw new Error('no such container'); };
    sandboxes.alive.delete(first.id);
    await post(task.id, 'resume');
    await runner.run(task.id, new AbortController().signal);
    expect(await stateOf(task.id)).toBe('awaiting_review');
    expect(sandboxes.released).toContain(first.id);
    expect(agent.calls[1]?.sandbox).toBe(sandboxes.acquired[1]);
    expect((await h.store.getResult(task.id))?.diff).toContain('+TWO');
  });

  it('pauses a queued task at once; a restarted server keeps it paused; resume puts it back in the queue', async () => {
    const task = await h.createTask('alice');
    const paused = await post(task.id, 'pause');
    expect(Task.parse(JSON.parse(paused.body)).state).toBe('paused');
    const { agent, runner } = makeRunner(async (input) => ({ outcome: 'finished', summary: 'done', diff: await input.sandbox.diff() }));
    await runner.run(task.id, new AbortController().signal);
    expect(agent.calls).toHaveLength(0);
    expect(sandboxes.acquired).toHaveLength(0);
    expect((await h.store.listRunnable(10)).map((t) => t.id)).not.toContain(task.id);

    const resumed = await post(task.id, 'resume');
    expect(Task.parse(JSON.parse(resumed.body)).state).toBe('queued');
    await runner.run(task.id, new AbortController().signal);
    expect(await stateOf(task.id)).toBe('awaiting_review');
  });

  it('a pause asked before a crash is reached after the restart; a resume before the safe point withdraws it', async () => {
    const task = await h.createTask('alice');
    await h.events.append(task.id, { type: 'task.state', data: { state: 'running' } });
    expect((await post(task.id, 'pause')).statusCode).toBe(202);
    // A new process (the crash lost the loop): the log says a pause is pending.
    const { runner } = makeRunner(async (input) => {
      const by = input.steering.pauseRequested?.();
      if (by) return { outcome: 'paused', summary: `Paused by ${by}.`, diff: '' };
      return { outcome: 'finished', summary: 'done', diff: await input.sandbox.diff() };
    });
    await runner.run(task.id, new AbortController().signal);
    expect(await stateOf(task.id)).toBe('paused');

    expect((await post(task.id, 'resume')).statusCode).toBe(202);
    expect((await post(task.id, 'pause')).statusCode).toBe(202);
    expect((await post(task.id, 'resume')).statusCode).toBe(202); // withdrawn before the loop saw it
    await runner.run(task.id, new AbortController().signal);
    expect(await stateOf(task.id)).toBe('awaiting_review');
  });

  it('cancelling a paused task ends it; a task in review or done cannot be paused', async () => {
    const task = await h.createTask('alice');
    await post(task.id, 'pause');
    const cancelled = await post(task.id, 'interrupt');
    expect(Task.parse(JSON.parse(cancelled.body)).state).toBe('cancelled');
    expect(h.control.interrupted).toEqual([task.id]);
    const refused = await post(task.id, 'pause');
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toMatch(/is cancelled; only a task the agent works on can be paused/);

    const review = await h.createTask('alice');
    await h.events.append(review.id, { type: 'task.state', data: { state: 'awaiting_review' } });
    expect((await post(review.id, 'pause')).statusCode).toBe(409);
    expect((await post(review.id, 'resume')).statusCode).toBe(409);
    expect((await post(review.id, 'pause', 'bob')).statusCode).toBe(404);
  });
});

describe('pendingPause', () => {
  const event = (seq: number, type: 'pause' | 'resumed' | TaskEvent['type'], state?: Task['state']): TaskEvent => {
    const base = { taskId: 't', seq, ts: '2026-12-01T00:00:00.000Z' };
    if (type === 'pause') return { ...base, type: 'task.pause_requested', data: { by: 'alice' } };
    if (type === 'resumed') return { ...base, type: 'task.resumed', data: { by: 'alice' } };
    return { ...base, type: 'task.state', data: { state: state ?? 'running' } };
  };
  it('is pending from the request until the task pauses, resumes or stops for review', () => {
    expect(pendingPause([event(1, 'pause'), event(2, 'task.state', 'provisioning'), event(3, 'task.state', 'running')])).toBe('alice');
    expect(pendingPause([event(1, 'pause'), event(2, 'task.state', 'paused')])).toBeUndefined();
    expect(pendingPause([event(1, 'pause'), event(2, 'resumed')])).toBeUndefined();
    expect(pendingPause([event(1, 'pause'), event(2, 'task.state', 'awaiting_review'), event(3, 'task.state', 'running')])).toBeUndefined();
  });
});
