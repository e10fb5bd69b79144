import { describe, expect, it } from 'vitest';
import { clipEventOutput } from './messages';
import { TASK_ID, approvalResolved, blockedForOverride, longRun, overriddenAndPushed, pushed, runUntilApproval, runUntilReview, stamp } from './test/recorded-stream';
import { classifyFailure } from './failures';
import { applyEvents, createTrajectory, formatTokens, stateTone, workedMs } from './trajectory';

const first = stamp(TASK_ID, runUntilApproval());
const second = stamp(TASK_ID, approvalResolved('denied'), first.length + 1);
const third = stamp(TASK_ID, runUntilReview(), first.length + second.length + 1);
const fourth = stamp(TASK_ID, pushed(), first.length + second.length + third.length + 1);

describe('trajectory fold', () => {
  it('summarises state, budgets, approvals, files, policy and the PR', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, first);
    expect(t.summary).toMatchObject({ title: 'paginate() skips the first item of every page', state: 'awaiting_approval', turnsUsed: 3, pendingApprovals: ['ap_1'] });
    expect(t.summary.budgets).toEqual({ maxTurns: 20, maxCostUsd: 2, maxWallClockSeconds: 900 });
    expect(t.summary.costUsd).toBeCloseTo(0.08, 5);
    expect([...t.summary.changedFiles]).toEqual([['src/paginate.js', 'modified']]);
    applyEvents(t, [...second, ...third, ...fourth]);
    expect(t.summary.pendingApprovals).toEqual([]);
    expect(t.summary.state).toBe('pr_open');
    expect(t.summary.policy).toEqual({ ok: true, stage: 'push', violations: [] });
    expect(t.summary.prUrl).toBe('https://forge.example/acme/app/pull/17');
  });

  it('tells an overridden policy check from a failed one', () => {
    const t = createTrajectory(TASK_ID);
    const blocked = stamp(TASK_ID, [...runUntilApproval(), ...blockedForOverride()]);
    applyEvents(t, blocked);
    expect(t.summary.policy).toMatchObject({ ok: false });
    expect(t.summary.policy?.overridden).toBeUndefined();
    expect(t.rows.some((row) => row.kind === 'note' && row.tone === 'error' && row.text.startsWith('Policy check failed'))).toBe(true);
    applyEvents(t, stamp(TASK_ID, overriddenAndPushed(), blocked.length + 1));
    expect(t.summary.policy).toMatchObject({ ok: false, overridden: true, overriddenBy: 'olive' });
    expect(t.rows.find((row) => row.kind === 'note' && row.text.includes('overridden'))).toMatchObject({
      kind: 'note',
      tone: 'warn',
      text: 'Policy check overridden by olive (push): .github/workflows/ci.yml: CI configuration changed (modified)',
    });
  });

  it('merges a tool result into its call row and marks the row changed', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, first);
    const index = t.toolRows.get('tu_3')!;
    expect(t.rows[index]).toMatchObject({ kind: 'tool', name: 'run_command', version: 0 });
    expect(t.rows[index]).not.toHaveProperty('result');
    const touched = applyEvents(t, second);
    expect(touched.has(index)).toBe(true);
    expect(t.rows[index]).toMatchObject({ version: 1, result: { isError: true, output: 'The developer denied this command.' } });
    const approval = t.rows[t.approvalRows.get('ap_1')!];
    expect(approval).toMatchObject({ kind: 'approval', resolved: { decision: 'denied', by: 'dev@example.com' } });
  });

  it('ignores events it already has, so replays and duplicates change nothing', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, first.slice(0, 10));
    const rows = t.rows.length;
    const touched = applyEvents(t, first.slice(0, 10));
    expect(touched.size).toBe(0);
    expect(t.rows.length).toBe(rows);
    applyEvents(t, first.slice(5));
    expect(t.rows.map((r) => r.seq)).toEqual([...new Set(t.rows.map((r) => r.seq))]);
    expect(t.lastSeq).toBe(first.length);
  });

  it('says budget stops and failures in plain words, each failure once', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, stamp(TASK_ID, [
      { type: 'budget.exceeded', data: { budget: 'cost', limit: 2, used: 2.04 } },
      { type: 'budget.exceeded', data: { budget: 'wall_clock', limit: 900, used: 905 } },
      { type: 'task.failed', data: { code: 'sandbox_unavailable', message: 'no sandbox could be started (request_id: req_0123abc)\n    at start (docker.ts:1)' } },
      { type: 'task.state', data: { state: 'failed', reason: 'no sandbox could be started (request_id: req_0123abc)' } },
    ]));
    expect(t.rows.map((r) => (r.kind === 'note' ? r.text : ''))).toEqual([
      'Stopped: the cost budget is used up ($2.04 of $2.00).',
      'Stopped: the time budget is used up (15 min 5 s of 15 min 0 s).',
      'State: failed',
    ]);
    expect(t.summary.failure).toEqual({
      kind: 'sandbox',
      title: 'The sandbox could not run',
      detail: 'no sandbox could be started',
      action: expect.stringContaining('Docker and gVisor'),
    });
  });

  it('gives a budget stop its own tone and a banner with the next step, and each ending its own tone', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, stamp(TASK_ID, [
      { type: 'budget.exceeded', data: { budget: 'turns', limit: 20, used: 20 } },
      { type: 'task.state', data: { state: 'budget_exhausted' } },
    ]));
    expect(t.rows.map((r) => (r.kind === 'note' ? r.tone : ''))).toEqual(['budget', 'budget']);
    expect(t.summary.failure).toEqual({
      kind: 'budget',
      title: 'Stopped: the turn budget ran out',
      detail: '20 of 20 turns used',
      action: 'Nothing was pushed. Send the ticket again with a larger turn budget (setting dockhand.budgets.maxTurns), or narrow the ticket.',
    });
    const tones = (['failed', 'budget_exhausted', 'cancelled', 'closed', 'pr_open'] as const).map(stateTone);
    expect(tones).toEqual(['error', 'budget', 'muted', 'muted', 'ok']);
  });

  it('adds up the tokens of every model call and the share of the prompt read from the cache', () => {
    const t = createTrajectory(TASK_ID);
    const turn = (n: number, usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number }) => ({
      type: 'model.turn' as const,
      data: { turn: n, model: 'm', usage, costUsd: 0.01, stopReason: 'tool_use', contextTokens: 0, content: [] },
    });
    expect(formatTokens(t.summary.tokens)).toBe('');
    applyEvents(t, stamp(TASK_ID, [
      turn(1, { inputTokens: 3000, outputTokens: 400, cacheReadTokens: 0, cacheWriteTokens: 9000 }),
      turn(2, { inputTokens: 1000, outputTokens: 700, cacheReadTokens: 9000, cacheWriteTokens: 2000 }),
    ]));
    expect(t.summary.tokens).toEqual({ inputTokens: 4000, outputTokens: 1100, cacheReadTokens: 9000, cacheWriteTokens: 11000 });
    expect(formatTokens(t.summary.tokens)).toBe('24k in · 1.1k out · 38% of the prompt from cache');
  });

  it('classifies failures by what went wrong', () => {
    expect(classifyFailure('model_unavailable', 'model claude failed: overloaded').kind).toBe('model_unreachable');
    expect(classifyFailure('internal', 'The model refused to continue with this ticket.').kind).toBe('model_refused');
    expect(classifyFailure('policy_violation', 'policy violations remain').kind).toBe('policy');
    expect(classifyFailure('budget_exceeded', 'turns').kind).toBe('budget');
    expect(classifyFailure('test_infrastructure', 'vitest not found').title).toBe("The repository's test runner failed (not the tests)");
    expect(classifyFailure('not_found', 'base SHA abc is not in the mirror of shop').kind).toBe('repository');
    expect(classifyFailure('internal', 'boom').kind).toBe('internal');
  });

  it('shows a run ended by a cancel as interrupted, not failed, and does not count review time', () => {
    const t = createTrajectory(TASK_ID);
    const events = stamp(TASK_ID, [
      { type: 'task.state', data: { state: 'running' } },
      { type: 'tool.called', data: { turn: 1, toolUseId: 'tu_9', name: 'run_command', input: { command: 'sleep 100' } } },
      { type: 'task.state', data: { state: 'cancelled', reason: 'interrupted by dev' } },
      { type: 'tool.finished', data: { toolUseId: 'tu_9', name: 'run_command', isError: true, output: 'exited with 137', truncated: false, durationMs: 900 } },
      { type: 'tests.finished', data: { command: 'npm test', scope: 'selected', passed: 0, failed: 1, skipped: 0, ok: false, quarantined: [], output: 'killed', durationMs: 5 } },
    ], 1, Date.parse('2026-01-01T10:00:00Z'));
    applyEvents(t, events.slice(0, 3));
    const tool = t.rows.find((r) => r.kind === 'tool');
    expect(tool?.kind === 'tool' && tool.interrupted).toBe(true);
    applyEvents(t, events.slice(3));
    expect(tool?.kind === 'tool' && tool.result?.isError && tool.interrupted).toBe(true);
    const tests = t.rows.find((r) => r.kind === 'tests');
    expect(tests?.kind === 'tests' && tests.interrupted).toBe(true);

    const waiting = createTrajectory(TASK_ID);
    const [working] = stamp(TASK_ID, [{ type: 'task.state', data: { state: 'running' } }], 1, Date.parse('2026-01-01T10:00:00Z'));
    const [review] = stamp(TASK_ID, [{ type: 'task.state', data: { state: 'awaiting_review' } }], 2, Date.parse('2026-01-01T10:01:00Z'));
    applyEvents(waiting, [working!, review!]);
    // An hour in review adds nothing to the agent's time.
    expect(workedMs(waiting.summary, Date.parse('2026-01-01T11:01:00Z'))).toBe(60_000);
  });

  it('keeps one row for a snapshot build and pre-existing test failures apart', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, stamp(TASK_ID, [
      { type: 'snapshot.progress', data: { stage: 'install', elapsedMs: 4000, line: 'added 120 packages' } },
      { type: 'snapshot.progress', data: { stage: 'baseline', elapsedMs: 9000, line: 'running npm test at the base' } },
      { type: 'tests.finished', data: { command: 'npm test', scope: 'selected', passed: 5, failed: 1, skipped: 0, ok: true, quarantined: [], preExisting: ['test/legacy.test.js > parses dates'], output: '', durationMs: 5 } },
      { type: 'tests.runner_failed', data: { command: 'npm test', kind: 'timeout', message: 'no report after 600 s', output: '' } },
    ]));
    expect(t.rows.map((r) => r.kind)).toEqual(['snapshot', 'tests', 'runner']);
    expect(t.rows[0]).toMatchObject({ stage: 'baseline', elapsedMs: 9000, line: 'running npm test at the base', version: 1 });
    expect(t.rows[1]).toMatchObject({ preExisting: ['test/legacy.test.js > parses dates'] });
  });

  it('folds 5,000 events quickly', () => {
    const events = stamp(TASK_ID, longRun(5000, 10_000));
    const t = createTrajectory(TASK_ID);
    const started = performance.now();
    applyEvents(t, events);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(t.lastSeq).toBe(5000);
  });

  it('clips only long tool and test outputs', () => {
    const [event] = stamp(TASK_ID, [{ type: 'tool.finished', data: { toolUseId: 'x', name: 'run_command', isError: false, output: 'y'.repeat(5000), truncated: false, durationMs: 1 } }]);
    const clipped = clipEventOutput(event!, 100);
    expect(clipped.clipped).toEqual({ seq: 1, totalChars: 5000 });
    expect(clipped.event.type === 'tool.finished' && clipped.event.data.output).toBe('y'.repeat(100));
    expect(clipEventOutput(first[0]!, 100)).toEqual({ event: first[0] });
  });

  it('keeps the reviewed diff of a request for changes out of the panel, and counts the rounds', () => {
    const events = stamp(TASK_ID, [
      { type: 'review.requested_changes', data: { by: 'dev', comments: [{ body: 'again' }], reviewedDiff: 'diff --git a/x b/x\n'.repeat(1000) } },
      { type: 'review.files_rejected', data: { by: 'dev', rejected: ['README.md'], accepted: ['src/a.js'] } },
    ]);
    const sent = clipEventOutput(events[0]!);
    expect(sent.event).toEqual({ ...events[0], data: { by: 'dev', comments: [{ body: 'again' }] } });
    const t = createTrajectory(TASK_ID);
    expect(t.summary.round).toBe(1);
    applyEvents(t, [sent.event, events[1]!]);
    expect(t.summary.round).toBe(2);
    expect(t.rows.map((row) => (row.kind === 'note' ? row.text : row.kind))).toEqual(['Round 2: dev requested changes: again', 'dev left 1 file out of the push: README.md']);
  });
});

describe('a followed PR\'s rounds in the trajectory (#26)', () => {
  it('heads a follow-up round with the PR\'s round number and what started it, tells a triaged red check, the ignored, a limit and the push', () => {
    const t = createTrajectory(TASK_ID);
    const base = { number: 7, seenThrough: 3, checksSeenThrough: 0, comments: [], ignored: [] };
    applyEvents(t, stamp(TASK_ID, [
      // A review before the PR: the task's own round 2.
      { type: 'review.requested_changes', data: { by: 'dev', comments: [{ body: 'again' }] } },
      { type: 'pr.opened', data: { number: 7, url: 'dockhand-local://app/pull/7', branch: 'dockhand/1-x', headSha: 'a'.repeat(40) } },
      { type: 'pr.feedback', data: { ...base, kind: 'ignored', ignored: [{ id: 2, author: 'mallory', reason: 'mallory is not an owner' }] } },
      { type: 'pr.feedback', data: { ...base, kind: 'triaged', checksSeenThrough: 1, check: { id: 1, name: 'ci/test', conclusion: 'failure', triage: 'pre_existing', evidence: 'ci/test fails at the base commit bbbbbbbbbbbb too' } } },
      { type: 'review.requested_changes', data: { by: 'alice', comments: [{ path: 'src/a.ts', line: 3, body: 'Name the offset.' }], followUp: { number: 7, round: 2 } } },
      { type: 'user.message', data: { from: 'pr-review', text: 'Review on pull request #7 (round 2).' } },
      { type: 'pr.feedback', data: { ...base, kind: 'round', round: 2, comments: [{ id: 3, author: 'alice', path: 'src/a.ts', line: 3, body: 'Name the offset.' }] } },
      { type: 'pr.pushed', data: { round: 2, number: 7, headSha: 'c'.repeat(40), commit: true, replied: [3] } },
      { type: 'review.requested_changes', data: { by: 'check ci/test', comments: [], followUp: { number: 7, round: 3 } } },
      { type: 'pr.feedback', data: { ...base, kind: 'round', round: 3, checksSeenThrough: 2, check: { id: 2, name: 'ci/test', conclusion: 'failure', triage: 'caused', evidence: 'ci/test passes at the base' } } },
      { type: 'pr.feedback', data: { ...base, kind: 'limit', reason: 'its 3 follow-up rounds are used' } },
    ]));
    expect(t.rows.map((row) => (row.kind === 'note' ? row.text : row.kind))).toEqual([
      'Round 2: dev requested changes: again',
      'Pull request #7 opened on dockhand/1-x',
      'Ignored on pull request #7 (may not steer): #2 by mallory',
      'Check ci/test is red (failure), pre-existing: ci/test fails at the base commit bbbbbbbbbbbb too. No round was started',
      'PR round 2 on pull request #7, started by alice: src/a.ts:3 Name the offset.',
      'user',
      `PR round 2: one new commit cccccccccccc pushed to pull request #7; replied on 1 thread`,
      'PR round 3 on pull request #7, started by check ci/test',
      'Check ci/test is red (failure), caused by this PR: ci/test passes at the base',
      'No more rounds on pull request #7: its 3 follow-up rounds are used',
    ]);
  });
});

describe('a turn waiting for the fleet model budget', () => {
  it('shows one row that says it waits, and updates it in place when the turn goes ahead', () => {
    const t = createTrajectory(TASK_ID);
    const base = { limit: 'input_tokens_per_minute', windowSeconds: 60, tokens: 4200 } as const;
    const events = stamp(TASK_ID, [
      { type: 'model.budget_wait', data: { ...base, phase: 'waiting', waitMs: 12_400 } },
      { type: 'model.budget_wait', data: { ...base, phase: 'done', waitMs: 13_050 } },
    ]);
    const touched = applyEvents(t, events.slice(0, 1));
    const index = [...touched][0] ?? -1;
    expect(t.rows[index]).toMatchObject({ kind: 'note', tone: 'info', text: "Waiting for the fleet's model budget: input tokens per minute are used up for now; the turn goes ahead in about 12 s" });
    expect([...applyEvents(t, events.slice(1))]).toEqual([index]);
    expect(t.rows.filter((row) => row.kind === 'note')).toHaveLength(1);
    expect(t.rows[index]).toMatchObject({ version: 1, text: "Waited 13 s for the fleet's model budget (input tokens per minute); the turn went ahead" });
  });
});
