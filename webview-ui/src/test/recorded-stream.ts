import { TaskEvent, type NewEvent, type Task } from '@dockhand/protocol';

/*
 * Event streams for the side panel's tests, shaped like a real run (provision, read, edit, a
 * flagged command, tests, self-review, policy, review) and validated with the protocol's schema so
 * they cannot drift from what the server sends.
 */

export const TASK_ID = 'task-7f3a';
const START = Date.parse('2026-11-29T09:00:00Z');

/** Gives events their envelope; `at` is the time of the first (fixed by default, for screenshots). */
export function stamp(taskId: string, events: NewEvent[], firstSeq = 1, at?: number): TaskEvent[] {
  return events.map((event, index) =>
    TaskEvent.parse({ ...event, taskId, seq: firstSeq + index, ts: new Date(at ?? START + (firstSeq + index) * 1500).toISOString() }),
  );
}

const PATCH = `diff --git a/src/paginate.js b/src/paginate.js
--- a/src/paginate.js
+++ b/src/paginate.js
@@ -1,7 +1,7 @@
 export function paginate(items, page, size) {
-  const start = page * size + 1;
+  const start = (page - 1) * size;
   const end = start + size;
   return items.slice(start, end);
 }
`;

/** Up to the point where the agent waits for approval of a destructive command. */
export function runUntilApproval(): NewEvent[] {
  return [
    {
      type: 'task.created',
      data: {
        owner: 'dev@example.com',
        ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item of every page', body: 'Page 1 starts at item 2.' },
        context: { repo: '/srv/repos/app.git', baseSha: 'a'.repeat(40), contextFiles: [], dirty: false },
        budgets: { maxTurns: 20, maxCostUsd: 2, maxWallClockSeconds: 900 },
        priority: 'normal',
        allowTestEdits: false,
      },
    },
    { type: 'task.state', data: { state: 'provisioning' } },
    { type: 'sandbox.ready', data: { sandboxId: 'sb-1', image: 'dockhand/snap-app:3f2a', baseSha: 'a'.repeat(40), source: 'warm_pool', startMs: 412 } },
    { type: 'task.state', data: { state: 'running' } },
    { type: 'model.turn', data: turn(1, 0.031) },
    { type: 'assistant.text', data: { turn: 1, text: 'I will look at paginate() and its tests first.' } },
    { type: 'tool.called', data: { turn: 1, toolUseId: 'tu_1', name: 'read_file', input: { path: 'src/paginate.js' } } },
    {
      type: 'tool.finished',
      data: { toolUseId: 'tu_1', name: 'read_file', isError: false, output: 'export function paginate(items, page, size) {\n  const start = page * size + 1;\n  ...', truncated: false, durationMs: 38 },
    },
    { type: 'model.turn', data: turn(2, 0.027) },
    { type: 'tool.called', data: { turn: 2, toolUseId: 'tu_2', name: 'edit_file', input: { path: 'src/paginate.js', old: 'page * size + 1', new: '(page - 1) * size' } } },
    { type: 'tool.finished', data: { toolUseId: 'tu_2', name: 'edit_file', isError: false, output: 'Replaced 1 occurrence.', truncated: false, durationMs: 12 } },
    { type: 'file.changed', data: { path: 'src/paginate.js', change: 'modified', patch: PATCH } },
    { type: 'model.turn', data: turn(3, 0.022) },
    { type: 'tool.called', data: { turn: 3, toolUseId: 'tu_3', name: 'run_command', input: { command: 'rm -rf node_modules/.cache build' } } },
    {
      type: 'approval.requested',
      data: { approvalId: 'ap_1', kind: 'command', command: 'rm -rf node_modules/.cache build', reason: 'Deletes files recursively (rm -rf) outside the files the agent edited.', toolUseId: 'tu_3' },
    },
    { type: 'task.state', data: { state: 'awaiting_approval', reason: 'command needs approval' } },
  ];
}

export function approvalResolved(decision: 'approved' | 'denied'): NewEvent[] {
  return [
    { type: 'approval.resolved', data: { approvalId: 'ap_1', decision, by: 'dev@example.com' } },
    { type: 'task.state', data: { state: 'running' } },
    {
      type: 'tool.finished',
      data: decision === 'approved'
        ? { toolUseId: 'tu_3', name: 'run_command', isError: false, output: '', truncated: false, durationMs: 240 }
        : { toolUseId: 'tu_3', name: 'run_command', isError: true, output: 'The developer denied this command.', truncated: false, durationMs: 0 },
    },
  ];
}

/** From running tests to waiting for the developer's review. */
export function runUntilReview(testOutputChars = 600): NewEvent[] {
  return [
    { type: 'model.turn', data: turn(4, 0.025) },
    { type: 'tool.called', data: { turn: 4, toolUseId: 'tu_4', name: 'run_tests', input: { scope: 'selected' } } },
    {
      type: 'tests.finished',
      data: {
        command: 'npx vitest run test/paginate.test.js',
        scope: 'selected',
        passed: 11,
        failed: 1,
        skipped: 0,
        ok: false,
        quarantined: [],
        output: `FAIL test/paginate.test.js > last page\n${'x'.repeat(testOutputChars)}`,
        durationMs: 2300,
      },
    },
    { type: 'tool.finished', data: { toolUseId: 'tu_4', name: 'run_tests', isError: true, output: '11 passed, 1 failed', truncated: false, durationMs: 2310 } },
    { type: 'context.compacted', data: { tokensBefore: 81000, tokensAfter: 23000, turnsCompacted: 3, summary: 'Edited paginate; one test failing.' } },
    { type: 'model.fell_back', data: { from: 'claude-sonnet-4-5', to: 'claude-haiku-4-5', reason: 'overloaded (529)' } },
    { type: 'model.turn', data: turn(5, 0.018) },
    { type: 'assistant.text', data: { turn: 5, text: 'The last page needs a bound check; fixing it.' } },
    {
      type: 'tests.finished',
      data: { command: 'npx vitest run test/paginate.test.js', scope: 'selected', passed: 12, failed: 0, skipped: 0, ok: true, quarantined: [], output: '12 passed', durationMs: 2100 },
    },
    { type: 'task.state', data: { state: 'verifying' } },
    { type: 'review.finished', data: { approved: true, problems: [], summary: 'Fixes the off-by-one; tests cover page 1 and the last page.' } },
    { type: 'policy.checked', data: { ok: true, stage: 'review', violations: [] } },
    { type: 'task.state', data: { state: 'awaiting_review' } },
    // The runner asks for the push approval that the review decides (`afterFinish`).
    { type: 'approval.requested', data: { approvalId: PUSH_APPROVAL_ID, kind: 'push', reason: 'review the diff before it is pushed' } },
  ];
}

export const PUSH_APPROVAL_ID = 'ap_push';

/** After "Approve and push": the review approval resolves the push approval, then the push. */
export function pushed(): NewEvent[] {
  return [
    { type: 'approval.resolved', data: { approvalId: PUSH_APPROVAL_ID, decision: 'approved', by: 'dev@example.com' } },
    { type: 'task.state', data: { state: 'pushing' } },
    { type: 'policy.checked', data: { ok: true, stage: 'push', violations: [] } },
    { type: 'pr.opened', data: { number: 17, url: 'https://forge.example/acme/app/pull/17', branch: 'dockhand/42-paginate', headSha: 'b'.repeat(40) } },
    { type: 'task.state', data: { state: 'pr_open' } },
  ];
}

export const OVERRIDE_APPROVAL_ID = 'ap_override';
const CI_VIOLATION = { rule: 'ci-config', path: '.github/workflows/ci.yml', message: 'CI configuration changed (modified)' };

/** A finished run whose diff the policy blocks: it waits in review for a repo owner's override. */
export function blockedForOverride(): NewEvent[] {
  return [
    { type: 'policy.checked', data: { ok: false, stage: 'review', violations: [CI_VIOLATION] } },
    {
      type: 'approval.requested',
      data: {
        approvalId: OVERRIDE_APPROVAL_ID,
        kind: 'policy_override',
        reason: '1 policy violation blocks this diff: ci-config (.github/workflows/ci.yml); a repo owner (olive) may override them for this exact diff',
        diffDigest: 'd'.repeat(64),
      },
    },
    { type: 'task.state', data: { state: 'awaiting_review', reason: "blocked by policy: ci-config (.github/workflows/ci.yml); waiting for a repo owner's override" } },
  ];
}

/** The owner overrides, the review approves, and the push goes out with the violation overridden. */
export function overriddenAndPushed(): NewEvent[] {
  return [
    { type: 'approval.resolved', data: { approvalId: OVERRIDE_APPROVAL_ID, decision: 'approved', by: 'olive', comment: 'override of ci-config (.github/workflows/ci.yml): the workflow needs the push trigger' } },
    { type: 'approval.requested', data: { approvalId: 'ap_push_2', kind: 'push', reason: 'review the diff before it is pushed (policy overridden by olive)' } },
    { type: 'approval.resolved', data: { approvalId: 'ap_push_2', decision: 'approved', by: 'dev@example.com' } },
    { type: 'task.state', data: { state: 'pushing' } },
    { type: 'policy.checked', data: { ok: false, stage: 'push', violations: [CI_VIOLATION], overridden: true, overriddenBy: 'olive' } },
    { type: 'pr.opened', data: { number: 18, url: 'https://forge.example/acme/app/pull/18', branch: 'dockhand/42-paginate', headSha: 'e'.repeat(40) } },
    { type: 'task.state', data: { state: 'pr_open' } },
  ];
}

export function turn(number: number, costUsd: number) {
  return {
    turn: number,
    model: 'claude-sonnet-4-5',
    usage: { inputTokens: 4000, outputTokens: 300, cacheReadTokens: 3000, cacheWriteTokens: 0 },
    costUsd,
    stopReason: 'tool_use',
    contextTokens: 7000,
    content: [],
  };
}

/** A long run: `count` events of mixed kinds, some with outputs of `bigOutputChars`. */
export function longRun(count: number, bigOutputChars: number): NewEvent[] {
  const events: NewEvent[] = runUntilApproval().slice(0, 4);
  let t = 1;
  while (events.length < count) {
    const id = `tu_long_${t}`;
    events.push({ type: 'model.turn', data: turn(Math.min(t, 500), 0.0004) });
    events.push({ type: 'assistant.text', data: { turn: Math.min(t, 500), text: `Step ${t}: checking module ${t % 37} for the failing case.` } });
    events.push({ type: 'tool.called', data: { turn: Math.min(t, 500), toolUseId: id, name: t % 3 ? 'search' : 'run_command', input: { pattern: `paginate_${t}` } } });
    const output = t % 50 === 0 ? `BIG OUTPUT ${t}\n` + 'log line with some text\n'.repeat(Math.ceil(bigOutputChars / 24)) : `src/file_${t}.js:${t}: paginate(items, ${t})`;
    events.push({ type: 'tool.finished', data: { toolUseId: id, name: t % 3 ? 'search' : 'run_command', isError: t % 17 === 0, output, truncated: false, durationMs: 15 + (t % 40) } });
    t += 1;
  }
  return events.slice(0, count);
}

export function sampleTask(overrides: Partial<Task> = {}): Task {
  return {
    id: TASK_ID,
    owner: 'dev@example.com',
    state: 'running',
    ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item of every page', body: '' },
    context: { repo: '/srv/repos/app.git', baseSha: 'a'.repeat(40), contextFiles: [], dirty: false },
    budgets: { maxTurns: 20, maxCostUsd: 2, maxWallClockSeconds: 900 },
    priority: 'normal',
    allowTestEdits: false,
    usage: { turns: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 },
    lastSeq: 0,
    createdAt: '2026-11-29T09:00:00Z',
    updatedAt: '2026-11-29T09:00:00Z',
    ...overrides,
  };
}
