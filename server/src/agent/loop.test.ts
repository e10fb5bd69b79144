import type Anthropic from '@anthropic-ai/sdk';
import type { TaskEvent, TaskState } from '@dockhand/protocol';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../../../test/support/fixture-repo';
import type { FeedbackEngine } from '../feedback/types';
import { INTERRUPTED_TOOL_OUTPUT, SUMMARY_HEADING, rebuildConversation } from './conversation';
import { runAgent, type RunAgentOptions } from './loop';
import { SimpleFeedbackEngine } from './simple-feedback';
import { RecordingApprover } from './testing/context';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { MemoryEventSink } from './testing/memory-sink';
import { ScriptedModel, type ScriptStep } from './testing/scripted-model';

const TICKET = { kind: 'text' as const, title: 'average() is wrong', body: 'average([1, 2, 3]) returns 1.67 instead of 2.' };
const FIX = { name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } };

let repo: FixtureRepo;
let sandbox: HostSandbox;
let events: MemoryEventSink;

beforeEach(() => {
  repo = createFixtureRepo('buggy-calc');
  sandbox = new HostSandbox(repo.path, repo.sha);
  events = new MemoryEventSink();
});

function options(model: ScriptedModel, extra: Partial<RunAgentOptions> = {}): RunAgentOptions {
  return {
    task: { ticket: TICKET },
    sandbox,
    model,
    events,
    approver: new RecordingApprover(),
    feedback: new SimpleFeedbackEngine(),
    ...extra,
  };
}

/**
 * Green tests that start no process, recording src/calc.js as each run saw it: for tests of what
 * the loop does after the tests (the review), which must not take as long as `npm test` starting
 * twice on a loaded machine (the real runner is the first tests' business).
 */
function greenTests(runs: string[]): FeedbackEngine {
  return {
    async runTests(box, opts) {
      runs.push((await box.readFile('src/calc.js')).toString('utf8'));
      return { command: 'npm test --silent', scope: opts.scope, selectionReason: 'recorded: green', passed: 5, failed: 0, skipped: 0, ok: true, quarantined: [], output: 'ℹ pass 5', durationMs: 1, cases: [], wholeCommand: true };
    },
    async diagnostics() {
      return [];
    },
  };
}

function lastUserText(request: { messages: Anthropic.MessageParam[] }): string {
  const last = request.messages[request.messages.length - 1];
  return JSON.stringify(last?.content);
}

/** Messages without the cache_control markers the loop adds to copies. */
function stripCache(messages: Anthropic.MessageParam[]): unknown {
  return JSON.parse(JSON.stringify(messages), (key, value) => (key === 'cache_control' ? undefined : value));
}

/** Every conversation request the model got equals the conversation rebuilt from the log before its turn. */
function expectRebuildMatches(model: ScriptedModel, keepRecentTurns?: number): void {
  const conversationTurns = events.ofType('model.turn').filter((event) => event.data.purpose === undefined);
  const conversationRequests = model.requests.filter(
    (request) =>
      !request.tools.some((tool) => tool.name === 'submit_review') &&
      !lastUserText(request).includes('The conversation is getting long'),
  );
  expect(conversationTurns).toHaveLength(conversationRequests.length);
  for (const [index, turn] of conversationTurns.entries()) {
    const before = events.events.filter((event) => event.seq < turn.seq);
    const rebuilt = rebuildConversation(before, keepRecentTurns === undefined ? {} : { keepRecentTurns });
    expect(rebuilt.messages, `turn ${index + 1}`).toEqual(stripCache(conversationRequests[index]!.messages));
    expect(rebuilt.turns).toBe(index);
  }
}

function countBreakpoints(request: unknown): number {
  return (JSON.stringify(request).match(/"cache_control"/g) ?? []).length;
}

/** The tests that run the fixture's real `npm test` (a child process per run) get this instead of vitest's 5 s: under CI's load each took ~4 s. */
const REAL_TESTS_TIMEOUT_MS = 60_000;

describe('runAgent', () => {
  it('fixes the bug and ends only after the server verified tests and review', async () => {
    const model = new ScriptedModel([
      { text: 'Looking at average.', tools: [{ name: 'read_file', input: { path: 'src/calc.js' } }] },
      { tools: [FIX] },
      { tools: [{ name: 'run_tests', input: {} }] },
      { tools: [{ name: 'finish', input: { summary: 'average() skipped the first element; start the loop at 0.' } }] },
    ]);
    const outcome = await runAgent(options(model));
    expect(outcome.status).toBe('finished_verified');
    expect(outcome.summary).toMatch(/start the loop at 0/);
    expect(outcome.diff).toMatch(/^\+  for \(let index = 0;/m);
    expect(outcome.tests).toMatchObject({ ok: true, passed: 5, failed: 0 });
    expect(outcome.review?.approved).toBe(true);
    expect(outcome.usage.turns).toBe(4);
    expect(outcome.usage.costUsd).toBeCloseTo(0.05); // 4 turns + 1 review call

    const types = events.events.map((event) => event.type);
    expect(types).toContain('assistant.text');
    expect(types).toContain('file.changed');
    expect(types.filter((type) => type === 'tests.finished')).toHaveLength(2);
    expect(types.indexOf('review.finished')).toBeGreaterThan(types.lastIndexOf('tests.finished'));
    expect(events.ofType('model.turn').filter((event) => event.data.purpose === 'review')).toHaveLength(1);

    const first = model.requests[0]!;
    const system = first.system.map((block) => block.text).join('\n');
    expect(system).toMatch(/Do not edit test files/);
    expect(system).toMatch(/<instructions path="AGENTS.md">[\s\S]*node's built-in test runner/);
    expect(system).toMatch(/src\/ \(2 files\)/);
    expect(system).toMatch(/<ticket>\nTicket: average\(\) is wrong/);
    expect(system).toMatch(/the ticket below is data/i);
    // tools + system + latest user turn; from the second turn on also the previous user turn.
    expect(countBreakpoints(first)).toBe(3);
    expect(countBreakpoints(model.requests[2])).toBe(4);
    expect(first.tools.at(-1)).toHaveProperty('cache_control');
    expect(first.system.at(-1)).toHaveProperty('cache_control');
  }, REAL_TESTS_TIMEOUT_MS);

  it('sends red tests back to the model instead of finishing', async () => {
    const model = new ScriptedModel([
      { tools: [{ name: 'edit_file', input: { path: 'README.md', command: 'insert', insert_line: 1, new_text: 'Fixed.' } }] },
      { tools: [{ name: 'finish', input: { summary: 'Done.' } }] },
      { tools: [FIX] },
      { tools: [{ name: 'finish', input: { summary: 'Fixed average().' } }] },
    ]);
    const outcome = await runAgent(options(model));
    expect(outcome.status).toBe('finished_verified');
    const afterClaim = lastUserText(model.requests[2]!);
    expect(afterClaim).toMatch(/Finish refused: the server ran the tests and they are red/);
    expect(afterClaim).toMatch(/"is_error":true/);
    expect(events.ofType('tests.finished').map((event) => event.data.ok)).toEqual([false, true]);
    expect(events.ofType('review.finished')).toHaveLength(1);
  }, REAL_TESTS_TIMEOUT_MS);

  it('sends a rejecting review back to the model', async () => {
    let reviews = 0;
    const model = new ScriptedModel(
      [
        { tools: [FIX] },
        { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
        { tools: [{ name: 'finish', input: { summary: 'Fixed, with a better summary.' } }] },
      ],
      {
        review: () => {
          reviews += 1;
          return reviews === 1
            ? { tools: [{ name: 'submit_review', input: { approved: false, problems: ['src/calc.js: add a comment on the loop start'] } }] }
            : { tools: [{ name: 'submit_review', input: { approved: true } }] };
        },
      },
    );
    const testRuns: string[] = [];
    const outcome = await runAgent(options(model, { feedback: greenTests(testRuns) }));
    expect(outcome.status).toBe('finished_verified');
    const conversation = model.requests.filter((request) => !request.tools.some((tool) => tool.name === 'submit_review'));
    expect(lastUserText(conversation[2]!)).toMatch(/code review found problems:\\n- src\/calc.js: add a comment/);
    expect(events.ofType('review.finished').map((event) => event.data.approved)).toEqual([false, true]);
    // Each finish ran the tests on the fixed code before its review.
    expect(testRuns).toHaveLength(2);
    for (const source of testRuns) expect(source).toContain('let index = 0;');
    expect(events.events.map((event) => event.type).filter((type) => type === 'tests.finished' || type === 'review.finished')).toEqual(['tests.finished', 'review.finished', 'tests.finished', 'review.finished']);
  });

  it('refuses to finish when the diff edits tests the ticket does not allow', async () => {
    const model = new ScriptedModel([
      { tools: [{ name: 'run_command', input: { command: "sed -i 's/2);/1.67);/' test/calc.test.js" } }] },
      { tools: [{ name: 'finish', input: { summary: 'Adjusted the expectation.' } }] },
      { text: 'I give up.' },
      { text: 'Still nothing.' },
      { text: 'Really.' },
    ]);
    const outcome = await runAgent(options(model));
    expect(lastUserText(model.requests[2]!)).toMatch(/diff changes files this ticket does not allow \(test\/calc.test.js\)/);
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toBe('no_finish');
    expect(events.ofType('review.finished')).toHaveLength(0);
  });

  it('stops at the turn budget and keeps the diff', async () => {
    const model = new ScriptedModel([{ tools: [FIX] }, ...Array.from({ length: 10 }, () => ({ tools: [{ name: 'list_files', input: {} }] }))]);
    const outcome = await runAgent(options(model, { task: { ticket: TICKET, budgets: { maxTurns: 3 } } }));
    expect(outcome.status).toBe('budget_exhausted');
    expect(outcome.budget).toEqual({ budget: 'turns', limit: 3, used: 3 });
    expect(events.ofType('budget.exceeded')[0]?.data).toEqual({ budget: 'turns', limit: 3, used: 3 });
    expect(model.turnsPlayed).toBe(3);
    expect(outcome.diff).toMatch(/let index = 0;/);
  });

  it('a PR follow-up round has a budget of its own: the turns of the first run do not count against it (#26)', async () => {
    const first = new ScriptedModel([{ tools: [FIX] }, ...Array.from({ length: 5 }, () => ({ tools: [{ name: 'list_files', input: {} }] }))]);
    const ran = await runAgent(options(first, { task: { ticket: TICKET, budgets: { maxTurns: 3 } }, feedback: greenTests([]) }));
    expect(ran.status).toBe('budget_exhausted');
    const ts = new Date().toISOString();
    const log: TaskEvent[] = [
      ...events.events,
      { taskId: 't', seq: 1000, ts, type: 'pr.feedback', data: { number: 1, kind: 'round', round: 2, seenThrough: 1, checksSeenThrough: 0, comments: [{ id: 1, author: 'alice', body: 'Name the loop index i.' }], ignored: [] } },
      { taskId: 't', seq: 1001, ts, type: 'user.message', data: { from: 'pr-review', text: 'Name the loop index i.' } },
      { taskId: 't', seq: 1002, ts, type: 'task.state', data: { state: 'running' } },
    ];
    const round = new ScriptedModel([{ tools: [{ name: 'list_files', input: {} }] }, { tools: [{ name: 'list_files', input: {} }] }, ...Array.from({ length: 5 }, () => ({ tools: [{ name: 'list_files', input: {} }] }))]);
    const outcome = await runAgent(options(round, { task: { ticket: TICKET, budgets: { maxTurns: 3 } }, priorEvents: log, feedback: greenTests([]) }));
    // Three turns of its own, then the round's budget (not the task's spent one) stops it; the task's usage counts all six.
    expect(round.turnsPlayed).toBe(3);
    expect(outcome.budget).toEqual({ budget: 'turns', limit: 3, used: 3 });
    expect(outcome.usage.turns).toBe(6);
  });

  it('stops at the cost budget from real per-call cost', async () => {
    const model = new ScriptedModel(Array.from({ length: 10 }, () => ({ tools: [{ name: 'list_files', input: {} }] })), { costPerTurnUsd: 0.4 });
    const outcome = await runAgent(options(model, { task: { ticket: TICKET, budgets: { maxCostUsd: 1 } } }));
    expect(outcome.status).toBe('budget_exhausted');
    expect(outcome.budget?.budget).toBe('cost');
    expect(model.turnsPlayed).toBe(3);
    expect(outcome.usage.costUsd).toBeCloseTo(1.2);
  });

  it('stops at the wall clock', async () => {
    let clock = 0;
    const model = new ScriptedModel(
      Array.from({ length: 10 }, (_, index) => () => {
        if (index === 1) clock += 20_000;
        return { tools: [{ name: 'list_files', input: {} }] };
      }),
    );
    const outcome = await runAgent(
      options(model, { task: { ticket: TICKET, budgets: { maxWallClockSeconds: 10 } }, config: { now: () => clock } }),
    );
    expect(outcome.status).toBe('budget_exhausted');
    expect(outcome.budget).toMatchObject({ budget: 'wall_clock', limit: 10 });
    expect(model.turnsPlayed).toBe(2);
  });

  it('redirects once on a repeated failing call, then stops', async () => {
    const bad = { name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'nope', new_text: 'x' } };
    const model = new ScriptedModel(Array.from({ length: 8 }, () => ({ tools: [bad] })));
    const outcome = await runAgent(options(model));
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toBe('stuck');
    expect(model.turnsPlayed).toBe(4);
    const notes = events.ofType('user.message');
    expect(notes).toHaveLength(1);
    expect(notes[0]?.data).toMatchObject({ from: 'dockhand' });
    expect(notes[0]?.data.text).toMatch(/same edit_file call 3 times/);
    expect(lastUserText(model.requests[3]!)).toMatch(/try a different approach/);
  });

  it('compacts old turns into a summary and keeps the stable prefix', async () => {
    const big = Array.from({ length: 400 }, (_, index) => `line ${index} ${'x'.repeat(40)}`).join('\n');
    await sandbox.writeFile('big.txt', big);
    const steps: ScriptStep[] = Array.from({ length: 12 }, (_, index) => ({
      tools: [{ name: 'read_file', input: { path: 'big.txt', start_line: 1 + index } }],
    }));
    const model = new ScriptedModel([...steps, { tools: [FIX] }, { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] }], {
      summary: 'I read big.txt many times; the bug is in src/calc.js line 15.',
    });
    const outcome = await runAgent(
      options(model, { config: { compaction: { thresholdTokens: 12_000, keepRecentTurns: 2, targetRatio: 0.5 } } }),
    );
    expect(outcome.status).toBe('finished_verified');
    const compactions = events.ofType('context.compacted');
    expect(compactions.length).toBeGreaterThan(0);
    const summarised = compactions.find((event) => event.data.turnsCompacted > 0);
    expect(summarised?.data.summary).toMatch(/bug is in src\/calc.js/);
    for (const event of compactions) expect(event.data.tokensAfter).toBeLessThan(event.data.tokensBefore);
    const conversation = model.requests.filter((request) => !request.tools.some((tool) => tool.name === 'submit_review'));
    const afterSummary = conversation.at(-1)!;
    expect(JSON.stringify(afterSummary.messages[0])).toContain(SUMMARY_HEADING);
    expect(afterSummary.system).toEqual(conversation[0]!.system);
    expect(afterSummary.tools).toEqual(conversation[0]!.tools);
    for (const turn of events.ofType('model.turn').filter((event) => event.data.purpose === undefined)) {
      expect(turn.data.contextTokens).toBeLessThan(12_000 + 3_000);
    }
    expectRebuildMatches(model, 2);
  });

  it('injects steering messages before the next turn', async () => {
    const queue: Array<{ from: string; text: string }> = [];
    const model = new ScriptedModel([
      () => {
        queue.push({ from: 'dev@example.com', text: 'Please also keep the empty-list behaviour.' });
        return { tools: [{ name: 'list_files', input: {} }] };
      },
      { tools: [FIX] },
      { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
    ]);
    await runAgent(options(model, { steering: { take: () => queue.splice(0) } }));
    expect(lastUserText(model.requests[1]!)).toMatch(/tool_result[\s\S]*keep the empty-list behaviour/);
    // The API records steering when it arrives; the loop does not record it a second time.
    expect(events.ofType('user.message')).toHaveLength(0);
  });

  it('skips its own notes if a steering source hands them back', async () => {
    const model = new ScriptedModel([{ text: 'Hmm.' }, { tools: [FIX] }, { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] }]);
    const steering = { take: () => events.ofType('user.message').map((event) => ({ from: event.data.from, text: event.data.text })) };
    await runAgent(options(model, { steering }));
    const nudges = JSON.stringify(model.requests.at(-2)?.messages).match(/You replied without calling a tool/g) ?? [];
    expect(nudges).toHaveLength(1);
  });

  it('is cancelled through its AbortSignal', async () => {
    const controller = new AbortController();
    // The developer interrupts while the model works on its second turn (after the fix was applied).
    const model = new ScriptedModel([
      { tools: [FIX] },
      () => {
        controller.abort();
        return { tools: [{ name: 'list_files', input: {} }] };
      },
    ]);
    const outcome = await runAgent(options(model, { signal: controller.signal }));
    expect(outcome.status).toBe('cancelled');
    expect(outcome.diff).toMatch(/let index = 0;/);
  });

  it('pauses at the next safe point (the tool call in flight finishes, no model call starts) and resumes from its log', async () => {
    let pause: string | undefined;
    // The developer presses Pause while the model works on its first turn (a read).
    const model = new ScriptedModel([
      () => {
        pause = 'alice';
        return { tools: [{ name: 'read_file', input: { path: 'src/calc.js' } }] };
      },
    ]);
    const paused = await runAgent(options(model, { steering: { take: () => [], pauseRequested: () => pause } }));
    expect(paused.status).toBe('paused');
    expect(paused.summary).toBe('Paused by alice.');
    expect(model.requests).toHaveLength(1);
    expect(events.ofType('tool.finished').map((e) => e.data.name)).toEqual(['read_file']);

    // An hour paused, a message written meanwhile, then resumed: the conversation goes on from the
    // log with the message, and the hour is not on the wall clock.
    const at = (minutes: number) => new Date(Date.now() - (90 - minutes) * 60_000).toISOString();
    const log: TaskEvent[] = [
      ...events.events.map((event) => ({ ...event, ts: at(0) })),
      { taskId: 't', seq: 100, ts: at(0), type: 'task.state', data: { state: 'paused' } },
      { taskId: 't', seq: 101, ts: at(30), type: 'user.message', data: { from: 'alice', text: 'Start the loop at zero.' } },
      { taskId: 't', seq: 102, ts: at(60), type: 'task.state', data: { state: 'running' } },
    ];
    const resumed = new ScriptedModel([{ tools: [FIX] }, { tools: [{ name: 'finish', input: { summary: 'Fixed after the pause.' } }] }]);
    const outcome = await runAgent(options(resumed, { task: { ticket: TICKET, budgets: { maxWallClockSeconds: 45 * 60 } }, priorEvents: log }));
    expect(outcome.status).toBe('finished_verified');
    expect(JSON.stringify(resumed.requests[0]!.messages.at(-1))).toMatch(/tool_result[\s\S]*Start the loop at zero/);
  });

  it('records a turn waiting for the fleet model budget: waiting and done, before the turn', async () => {
    const wait = { limit: 'requests_per_minute', windowSeconds: 60, tokens: 812.4 } as const;
    const model = new ScriptedModel([
      () => {
        model.onBudgetWait?.({ ...wait, phase: 'waiting', waitMs: 1_200.6 });
        model.onBudgetWait?.({ ...wait, phase: 'done', waitMs: 1_350 });
        return { tools: [FIX] };
      },
      { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
    ]);
    await runAgent(options(model));
    const types = events.events.map((event) => event.type);
    expect(types.indexOf('model.budget_wait')).toBeLessThan(types.indexOf('model.turn'));
    expect(events.ofType('model.budget_wait').map((event) => event.data)).toEqual([
      { ...wait, tokens: 812, phase: 'waiting', waitMs: 1_201 },
      { ...wait, tokens: 812, phase: 'done', waitMs: 1_350 },
    ]);
    expect(model.onBudgetWait).toBeUndefined();
  });

  it('records model fallbacks', async () => {
    const model = new ScriptedModel([
      () => {
        model.onFallback?.({ from: 'claude-sonnet-4-5', to: 'claude-haiku-4-5', reason: 'overloaded (529) x3' });
        return { tools: [FIX] };
      },
      { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
    ]);
    await runAgent(options(model));
    const types = events.events.map((event) => event.type);
    expect(types.indexOf('model.fell_back')).toBeLessThan(types.indexOf('model.turn'));
    expect(events.ofType('model.fell_back')[0]?.data.to).toBe('claude-haiku-4-5');
    expect(model.onFallback).toBeUndefined();
  });

  it('shows model retries and a hand-back to the queue as the task state, with the reason and when it is tried again', async () => {
    const model = new ScriptedModel([
      () => {
        model.onRetry?.({ attempt: 1, of: 6, model: 'claude-sonnet-4-5', reason: 'connection error: Connection refused', delayMs: 500 });
        model.onRetry?.({ attempt: 6, of: 6, model: 'claude-sonnet-4-5', reason: '529 overloaded_error', delayMs: 30_000, handBack: true });
        return { tools: [FIX] };
      },
      { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
    ]);
    await runAgent(options(model));
    const states = events.ofType('task.state').map((event) => [event.data.state, event.data.reason]);
    expect(states).toEqual([
      ['running', 'model claude-sonnet-4-5 unreachable (connection error: Connection refused); retrying in 1 s (attempt 2 of 6)'],
      ['queued', 'model claude-sonnet-4-5 unreachable after 6 attempts (529 overloaded_error); back in the queue, retried in 30 s'],
    ]);
    expect(model.onRetry).toBeUndefined();
  });
});

describe('rebuildConversation', () => {
  it('rebuilds exactly the conversation the model saw, from the event log', async () => {
    const bad = { name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'nope', new_text: 'x' } };
    const model = new ScriptedModel([
      { text: 'Start.', tools: [{ name: 'search', input: { pattern: 'average' } }, { name: 'read_file', input: { path: 'src/calc.js' } }] },
      { tools: [bad] },
      { tools: [bad] },
      { tools: [bad] },
      { text: 'Thinking.' },
      { tools: [FIX] },
      { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
    ]);
    await runAgent(options(model));
    expect(events.ofType('user.message').map((event) => event.data.from)).toEqual(['dockhand', 'dockhand']);
    expectRebuildMatches(model);
  });

  it('keeps a steering message that arrived during a model call, one turn earlier, in a valid conversation', async () => {
    const model = new ScriptedModel([
      { tools: [{ name: 'list_files', input: {} }] },
      () => {
        // What the API does: record on arrival, queue for the loop.
        void events.append({ type: 'user.message', data: { from: 'dev@example.com', text: 'Keep it minimal.' } });
        queue.push({ from: 'dev@example.com', text: 'Keep it minimal.' });
        return { tools: [FIX] };
      },
      { tools: [{ name: 'finish', input: { summary: 'Fixed.' } }] },
    ]);
    const queue: Array<{ from: string; text: string }> = [];
    await runAgent(options(model, { steering: { take: () => queue.splice(0) } }));
    expect(lastUserText(model.requests[2]!)).toContain('Keep it minimal.');
    const rebuilt = rebuildConversation(events.events);
    expect(rebuilt.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(JSON.stringify(rebuilt.messages)).toContain('Keep it minimal.');
  });

  it('reports a tool call that never finished as interrupted instead of re-running it', () => {
    const log = new MemoryEventSink();
    const turn = {
      turn: 1, model: 'm', usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 }, costUsd: 0.02,
      stopReason: 'tool_use', contextTokens: 10,
      content: [
        { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a' } },
        { type: 'tool_use', id: 'toolu_b', name: 'run_command', input: { command: 'make' } },
      ],
    };
    void log.append({ type: 'model.turn', data: turn });
    void log.append({ type: 'tool.called', data: { turn: 1, toolUseId: 'toolu_a', name: 'read_file', input: { path: 'a' } } });
    void log.append({ type: 'tool.finished', data: { toolUseId: 'toolu_a', name: 'read_file', isError: false, output: 'A', truncated: false, durationMs: 1 } });
    void log.append({ type: 'tool.called', data: { turn: 1, toolUseId: 'toolu_b', name: 'run_command', input: { command: 'make' } } });
    const rebuilt = rebuildConversation(log.events);
    expect(rebuilt.turns).toBe(1);
    expect(rebuilt.costUsd).toBeCloseTo(0.02);
    expect(rebuilt.interrupted).toEqual(['run_command']);
    expect(rebuilt.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: 'A', is_error: false },
        { type: 'tool_result', tool_use_id: 'toolu_b', content: INTERRUPTED_TOOL_OUTPUT, is_error: true },
      ],
    });
  });

  it('resumes a crashed task from its log and finishes it', async () => {
    const crashing = new ScriptedModel([
      { tools: [{ name: 'read_file', input: { path: 'src/calc.js' } }] },
      { tools: [FIX] },
      () => {
        throw new Error('server crashed');
      },
    ]);
    const crashed = await runAgent(options(crashing));
    expect(crashed.status).toBe('failed');
    expect(crashed.reason).toBe('model_unavailable');

    const resumed = new ScriptedModel([{ tools: [{ name: 'finish', input: { summary: 'Fixed after resume.' } }] }]);
    const outcome = await runAgent(options(resumed, { priorEvents: [...events.events] }));
    expect(outcome.status).toBe('finished_verified');
    expect(outcome.usage.turns).toBe(3);
    const firstResumed = resumed.requests[0]!;
    expect(firstResumed.messages).toHaveLength(5);
    expect(JSON.stringify(firstResumed.messages)).toMatch(/Edited src\/calc.js/);
    expect(readFileSync(join(repo.path, 'src/calc.js'), 'utf8')).toMatch(/let index = 0;/);
  });
});

describe('activeMs', () => {
  it('counts time while running, not while queued or awaiting review', async () => {
    const { activeMs } = await import('./conversation');
    const at = (seconds: number) => new Date(Date.UTC(2026, 10, 29, 9, 0, seconds)).toISOString();
    const event = (seq: number, seconds: number, state?: TaskState): TaskEvent => ({
      taskId: 't', seq, ts: at(seconds),
      ...(state ? { type: 'task.state' as const, data: { state } } : { type: 'user.message' as const, data: { from: 'x', text: 'y' } }),
    });
    const log = [
      event(1, 0, 'queued'), event(2, 10, 'running'), event(3, 25), event(4, 30, 'awaiting_review'),
      event(5, 50, 'running'), event(6, 55),
    ];
    expect(activeMs(log)).toBe(25_000);
    expect(activeMs([event(1, 0, 'running'), event(2, 10, 'paused'), event(3, 40), event(4, 50, 'running'), event(5, 52)])).toBe(12_000);
  });
});
