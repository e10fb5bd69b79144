import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordingApprover } from '../../server/src/agent/testing/context';
import { createFixtureRepo } from '../support/fixture-repo';
import { MemoryEventSink } from '../../server/src/agent/testing/memory-sink';
import {
  APPROVE_REVIEW, FALLBACK_MODEL, FIX_TURN, PRIMARY_MODEL, finishTurn, fixtureSandbox, playCassette, runOnFixture, startWorld,
  type AgentWorld, type StepInput,
} from './agent-harness';

/*
 * The agent loop end to end: real loop, real SDK against the replay server, real gVisor sandbox
 * (DockerSandboxDriver, dockhand/base:latest) on test/fixtures/buggy-calc, whose average() skips
 * the first element so 2 of 5 node --test tests fail.
 */

let world: AgentWorld;

beforeAll(async () => {
  world = await startWorld();
});

afterAll(async () => {
  await world?.close();
});

describe('agent loop in a gVisor sandbox with the replay model', () => {
  it('fixes the bug and ends with tests verified green by the server and an approving review', async () => {
    const run = await runOnFixture(world, {
      turns: [
        { name: 'search', content: [{ type: 'text', text: 'Let me find average.' }, { type: 'tool_use', name: 'search', input: { pattern: 'function average' } }] },
        { name: 'read', expect: { toolResultContains: '12:function average(values) {' }, content: [{ type: 'tool_use', name: 'read_file', input: { path: 'src/calc.js' } }] },
        { ...FIX_TURN, expect: { toolResultContains: '15\t  for (let index = 1;' } },
        { name: 'tests', expect: { toolResultContains: '+  for (let index = 0;' }, content: [{ type: 'tool_use', name: 'run_tests', input: {} }] },
        finishTurn('average() started summing at index 1; it now starts at 0.', { toolResultContains: 'Tests PASSED: 5 passed, 0 failed' }),
      ],
    });
    expect(run.outcome.status).toBe('finished_verified');
    expect(run.outcome.summary).toMatch(/starts at 0/);
    expect(run.outcome.diff).toMatch(/^\+  for \(let index = 0;/m);
    expect(run.outcome.tests).toMatchObject({ ok: true, passed: 5, failed: 0 });
    expect(run.outcome.review).toMatchObject({ approved: true });
    const verified = run.events.ofType('tests.finished').at(-1);
    expect(verified?.data).toMatchObject({ ok: true, scope: 'selected', passed: 5 });
    expect(run.events.ofType('review.finished')[0]?.data.approved).toBe(true);
    const turns = run.events.ofType('model.turn');
    expect(turns.every((turn) => turn.data.model === PRIMARY_MODEL)).toBe(true);
    // The stable prefix is cached: from the second turn on most input is read from the cache.
    const later = turns.filter((turn) => turn.data.purpose === undefined).slice(1);
    for (const turn of later) expect(turn.data.usage.cacheReadTokens).toBeGreaterThan(turn.data.usage.inputTokens);
    expect(run.outcome.usage.costUsd).toBeGreaterThan(0);
  });

  it('does not end when the model claims done with red tests', async () => {
    const run = await runOnFixture(world, {
      turns: [
        { name: 'touch readme', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'README.md', command: 'insert', insert_line: 3, new_text: 'Fixed!' } }] },
        finishTurn('All done.'),
        { ...FIX_TURN, expect: { toolResultContains: 'Finish refused: the server ran the tests and they are red', toolResultIsError: true } },
        finishTurn('Fixed the loop start.'),
      ],
    });
    const tests = run.events.ofType('tests.finished');
    expect(tests[0]?.data).toMatchObject({ ok: false, failed: 2, passed: 3 });
    expect(run.events.ofType('review.finished')).toHaveLength(1);
    const finishes = run.events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([true, false]);
    expect(run.outcome.status).toBe('finished_verified');
  });

  it('refuses the finish when the reviewer returns no usable verdict, and reviews the next finish again', async () => {
    const run = await runOnFixture(world, {
      turns: [
        FIX_TURN,
        finishTurn('Fixed the loop start.'),
        finishTurn('Fixed the loop start; second review.', { toolResultContains: 'The reviewer returned no usable verdict', toolResultIsError: true }),
      ],
      reviewTurns: [
        {
          oneOf: [
            { ...APPROVE_REVIEW, name: 'approve', when: { userTextContains: 'second review' } },
            { name: 'garbage', content: [{ type: 'tool_use', name: 'submit_review', input: { approved: 'yes' } }] },
          ],
        },
      ],
    });
    expect(run.outcome.status).toBe('finished_verified');
    const reviews = run.events.ofType('review.finished').map((event) => event.data);
    expect(reviews.map((review) => review.approved)).toEqual([false, true]);
    expect(reviews[0]?.problems[0]).toMatch(/submit_review input approved: .*expected boolean/);
    const reviewRequests = world.replay.requests(`${run.session}-review`);
    expect(reviewRequests.map((record) => [record.turn, record.body.tool_choice?.type])).toEqual([['garbage', 'tool'], ['approve', 'tool']]);
  });

  it('flags an edit to a test file when the ticket does not allow test edits', async () => {
    const run = await runOnFixture(world, {
      turns: [
        { name: 'weaken the test', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'test/calc.test.js', command: 'replace', old_text: 'average([1, 2, 3]), 2', new_text: 'average([1, 2, 3]), 5 / 3' } }] },
        { ...FIX_TURN, expect: { toolResultContains: 'is a test file and this ticket does not allow test edits', toolResultIsError: true } },
        finishTurn('Fixed the code, not the test.'),
      ],
    });
    expect(run.outcome.status).toBe('finished_verified');
    expect(run.outcome.diff).not.toContain('test/calc.test.js');
    const refused = run.events.ofType('tool.finished')[0];
    expect(refused?.data).toMatchObject({ name: 'edit_file', isError: true });
  });

  it('stops a runaway cassette at the turn budget and keeps the diff', async () => {
    const wander = { content: [{ type: 'tool_use' as const, name: 'list_files', input: {} }] };
    const run = await runOnFixture(world, {
      turns: [FIX_TURN, ...Array.from({ length: 20 }, () => wander)],
      task: { budgets: { maxTurns: 4 } },
    });
    expect(run.outcome.status).toBe('budget_exhausted');
    expect(run.events.ofType('budget.exceeded')[0]?.data).toEqual({ budget: 'turns', limit: 4, used: 4 });
    expect(run.events.ofType('model.turn')).toHaveLength(4);
    expect(run.outcome.diff).toMatch(/let index = 0;/);
    expect(world.replay.requests(run.session).filter((request) => request.status === 200)).toHaveLength(4);
  });

  it('switches to the fallback model during a 529 storm', async () => {
    const run = await runOnFixture(world, {
      turns: [
        { ...FIX_TURN, faults: [{ kind: 'overloaded', times: 100, model: 'claude-sonnet' }] },
        finishTurn('Fixed.'),
      ],
    });
    expect(run.outcome.status).toBe('finished_verified');
    const fellBack = run.events.ofType('model.fell_back');
    expect(fellBack).toHaveLength(1);
    expect(fellBack[0]?.data).toMatchObject({ from: PRIMARY_MODEL, to: FALLBACK_MODEL });
    expect(fellBack[0]?.data.reason).toMatch(/529/);
    const agentTurns = run.events.ofType('model.turn').filter((turn) => turn.data.purpose === undefined);
    expect(agentTurns.map((turn) => turn.data.model)).toEqual([FALLBACK_MODEL, FALLBACK_MODEL]);
    const types = run.events.events.map((event) => event.type);
    expect(types.indexOf('model.fell_back')).toBeLessThan(types.indexOf('model.turn'));
  });

  it('waits for approval of a destructive command, and the denial reaches the model', async () => {
    const approver = new RecordingApprover('denied', 'never push from the sandbox');
    const run = await runOnFixture(world, {
      approver,
      turns: [
        FIX_TURN,
        { name: 'push', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'git commit -qam fix && git push origin main' } }] },
        finishTurn('Fixed; did not push.', { toolResultContains: 'Denied by reviewer@example.com', toolResultIsError: true }),
      ],
    });
    expect(approver.requests).toHaveLength(1);
    expect(approver.requests[0]).toMatchObject({ kind: 'command', command: 'git commit -qam fix && git push origin main' });
    expect(approver.requests[0]?.reason).toMatch(/git push/);
    const denied = run.events.ofType('tool.finished').find((event) => event.data.name === 'run_command');
    expect(denied?.data.output).toMatch(/never push from the sandbox/);
    // Nothing ran: the commit before the push did not happen either.
    const log = await run.sandbox.exec({ cmd: ['git', 'log', '--oneline'] });
    expect(log.stdout.trim().split('\n')).toHaveLength(1);
    expect(run.outcome.status).toBe('finished_verified');
  });

  it('answers hostile tool input with clear tool errors', async () => {
    const run = await runOnFixture(world, {
      turns: [
        { name: 'escape', content: [{ type: 'tool_use', name: 'read_file', input: { path: '../../../etc/passwd' } }] },
        { name: 'absolute', expect: { toolResultContains: 'escapes the workspace', toolResultIsError: true }, content: [{ type: 'tool_use', name: 'read_file', input: { path: '/etc/hostname' } }] },
        { name: 'symlink out', expect: { toolResultContains: 'is outside the workspace', toolResultIsError: true }, content: [{ type: 'tool_use', name: 'run_command', input: { command: 'ln -s /etc/passwd leak' } }] },
        { name: 'read symlink', content: [{ type: 'tool_use', name: 'read_file', input: { path: 'leak' } }] },
        { name: 'huge output', expect: { toolResultContains: 'path: cannot read leak', toolResultIsError: true }, content: [{ type: 'tool_use', name: 'run_command', input: { command: 'seq 1 2000000' } }] },
        { name: 'bad input', expect: { toolResultContains: 'cut from the middle' }, content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', new_text: 'x' } }] },
        { ...FIX_TURN, expect: { toolResultContains: 'old_text: required', toolResultIsError: true } },
        { name: 'cleanup', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'rm leak' } }] },
        finishTurn('Fixed.'),
      ],
    });
    const outputs = run.events.ofType('tool.finished');
    const huge = outputs.find((event) => event.data.name === 'run_command' && event.data.truncated);
    expect(huge?.data.output.length).toBeLessThan(25_000);
    expect(huge?.data.output).toMatch(/^2000000$/m);
    expect(run.outcome.status).toBe('finished_verified');
  });

  it('resumes from its event log after the model became unreachable, and finishes', async () => {
    const read: StepInput = { name: 'read', content: [{ type: 'tool_use', name: 'read_file', input: { path: 'src/calc.js' } }] };
    const tests: StepInput = { name: 'tests', content: [{ type: 'tool_use', name: 'run_tests', input: {} }] };
    const finish = finishTurn('Fixed after a resume.', { toolResultContains: 'Tests PASSED' });
    const repo = createFixtureRepo('buggy-calc');
    const sandbox = await fixtureSandbox(world, repo);
    const events = new MemoryEventSink();
    const approver = new RecordingApprover('denied');
    const first = await playCassette(world, {
      turns: [read, FIX_TURN, { ...tests, faults: [{ kind: 'api_error', times: 100 }] }, finish],
      sandbox, events, approver,
    });
    expect(first.outcome.status).toBe('failed');
    expect(first.outcome.reason).toBe('model_unavailable');
    expect(events.ofType('model.turn')).toHaveLength(2);

    // A new process: same sandbox and log, the cassette without the outage.
    const second = await playCassette(world, { turns: [read, FIX_TURN, tests, finish], sandbox, events, approver, priorEvents: [...events.events] });
    expect(second.outcome.status).toBe('finished_verified');
    expect(second.outcome.usage.turns).toBe(4);
    const played = world.replay.requests(second.session).filter((request) => request.status === 200);
    expect(played.map((request) => request.position)).toEqual([2, 3]);
    expect(events.ofType('file.changed')).toHaveLength(1);
  });
});
