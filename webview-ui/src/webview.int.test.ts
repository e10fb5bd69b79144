import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clipEventOutput, type ClippedOutput } from './messages';
import { buildWebview, launchBrowser, openPanel, openTaskPanel, reviewFiles, showTask, type PanelPage } from './test/browser-harness';
import { OVERRIDE_APPROVAL_ID, PUSH_APPROVAL_ID, TASK_ID, approvalResolved, blockedForOverride, longRun, overriddenAndPushed, pushed, runUntilApproval, runUntilReview, stamp } from './test/recorded-stream';
import type { TaskEvent } from '@dockhand/protocol';

/*
 * The side panel in a real browser, fed recorded event streams the way the extension feeds it.
 * Each test asserts what a developer would see or what the panel sends back.
 */

let browser: Browser;

beforeAll(async () => {
  buildWebview();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
});

const approvalEvents = stamp(TASK_ID, runUntilApproval());
const afterApproval = stamp(TASK_ID, approvalResolved('approved'), approvalEvents.length + 1);
const reviewEvents = stamp(TASK_ID, runUntilReview(), approvalEvents.length + afterApproval.length + 1);
const pushEvents = stamp(TASK_ID, pushed(), approvalEvents.length + afterApproval.length + reviewEvents.length + 1);

const ready = (): Promise<PanelPage> => openTaskPanel(browser);

function clipped(events: TaskEvent[]): { events: TaskEvent[]; clipped: ClippedOutput[] } {
  const out: TaskEvent[] = [];
  const clips: ClippedOutput[] = [];
  for (const event of events) {
    const result = clipEventOutput(event);
    out.push(result.event);
    if (result.clipped) clips.push(result.clipped);
  }
  return { events: out, clipped: clips };
}

async function rowSeqs(panel: PanelPage): Promise<number[]> {
  return panel.page.$$eval('.trajectory .row', (rows) => rows.map((row) => Number((row as HTMLElement).dataset.seq)));
}

describe('side panel in Chromium', () => {
  it('says ready before anything and renders a live trajectory as events arrive', async () => {
    const panel = await openPanel(browser);
    const first = await panel.waitForPosted(() => true);
    expect(first).toEqual({ type: 'ready' });
    await showTask(panel, { live: true });
    // Live: events arrive a few at a time.
    for (let i = 0; i < approvalEvents.length; i += 3) {
      await panel.send({ type: 'events', taskId: TASK_ID, reset: i === 0, events: approvalEvents.slice(i, i + 3), clipped: [] });
    }
    const page = panel.page;
    await page.waitForSelector('.row-approval');
    expect(await page.textContent('.task-title')).toBe('paginate() skips the first item of every page');
    expect(await page.textContent('.badge.state')).toBe('awaiting approval');
    expect(await page.textContent('.badge.connection')).toBe('live');
    expect(await page.textContent('.trajectory')).toContain('I will look at paginate() and its tests first.');
    expect(await page.textContent('.trajectory')).toContain('Sandbox ready in 412 ms (warm pool)');
    // Budgets as bars: 3 turns of 20, $0.08 of $2.00.
    const budgets = await page.$$eval('.budget-text', (els) => els.map((el) => el.textContent));
    expect(budgets[0]).toBe('3 / 20');
    expect(budgets[1]).toBe('$0.08 / $2.00 · 43% cached');
    // The file change is rendered as a diff.
    expect(await page.textContent('.row-file pre.diff .diff-del')).toBe('-  const start = page * size + 1;');
    expect(await page.textContent('.row-file pre.diff .diff-add')).toBe('+  const start = (page - 1) * size;');
    // A tool call opens to show its input and output.
    await page.click('.row-tool summary >> text=read_file');
    await page.waitForSelector('.row-tool pre.output');
    expect(await page.textContent('.row-tool pre.output')).toContain('export function paginate');
    await panel.screenshot('webview-live-trajectory');
    expect(panel.problems).toEqual([]);
  });

  it('shows a pending approval with the exact command and why, and posts the decision', async () => {
    for (const decision of ['approved', 'denied'] as const) {
      const panel = await ready();
      await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: approvalEvents, clipped: [] });
      const card = panel.page.locator('.approval-card');
      await card.waitFor();
      expect(await card.locator('code.command').textContent()).toBe('rm -rf node_modules/.cache build');
      expect(await card.locator('.reason').textContent()).toContain('Deletes files recursively');
      if (decision === 'approved') await panel.screenshot('webview-approval-pending');
      await card.locator(decision === 'approved' ? 'button.approve' : 'button.deny').click();
      expect(await panel.waitForPosted((m) => m.type === 'decideApproval')).toEqual({
        type: 'decideApproval',
        taskId: TASK_ID,
        approvalId: 'ap_1',
        decision,
      });
      // The server's answer arrives as events; the card goes away and the row records the decision.
      await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: stamp(TASK_ID, approvalResolved(decision), approvalEvents.length + 1), clipped: [] });
      await card.waitFor({ state: 'detached' });
      // The row is redrawn on the next animation frame.
      await panel.page.locator('.row-approval', { hasText: `${decision} by dev@example.com` }).waitFor({ timeout: 5_000 });
      await panel.page.close();
    }
  });

  it('interrupts and steers the selected task', async () => {
    const panel = await ready();
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: approvalEvents.slice(0, 8), clipped: [] });
    await panel.page.click('button.interrupt');
    expect(await panel.waitForPosted((m) => m.type === 'interrupt')).toEqual({ type: 'interrupt', taskId: TASK_ID });
    await panel.page.fill('.action-input', 'Also handle page 0 as page 1.');
    await panel.page.click('button.action-send');
    expect(await panel.waitForPosted((m) => m.type === 'sendMessage')).toEqual({ type: 'sendMessage', taskId: TASK_ID, text: 'Also handle page 0 as page 1.' });
    expect(await panel.page.inputValue('.action-input')).toBe('');
    // An ended task cannot be interrupted or steered: the text box and its buttons go.
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: stamp(TASK_ID, [{ type: 'task.state', data: { state: 'cancelled' } }], 9), clipped: [] });
    await panel.page.waitForSelector('.action-input', { state: 'hidden' });
    expect(await panel.page.locator('button.interrupt, button.action-send').count()).toBe(0);
  });

  it('ends with review actions, policy results and the pull request link', async () => {
    const panel = await ready();
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: [...approvalEvents, ...afterApproval, ...reviewEvents], clipped: [] });
    await panel.send(reviewFiles(['src/paginate.js', 'modified']));
    const page = panel.page;
    await page.waitForSelector('.review button.review-approve');
    expect(await page.textContent('.review .policy')).toContain('Policy checks passed');
    expect(await page.textContent('.review .self-review')).toContain('Fixes the off-by-one');
    expect(await page.textContent('.trajectory')).toContain('Context compacted: 3 turns summarised, 81,000 → 23,000 tokens');
    expect(await page.textContent('.trajectory')).toContain('Switched model from claude-sonnet-4-5 to claude-haiku-4-5');
    // Test runs show their counts; the failing one is open.
    expect(await page.$$eval('.row-tests .test-counts', (els) => els.map((el) => el.textContent))).toEqual(['11 passed, 1 failed', '12 passed, 0 failed']);
    await panel.screenshot('webview-review');

    // The text box waits until there is something to say (the trajectory keeps the room).
    expect(await page.isHidden('.action-input')).toBe(true);
    // "Request changes" needs a comment or a line comment; without either nothing is sent, the box opens and the panel says why.
    await page.click('button.review-changes');
    expect((await panel.posted()).some((m) => m.type === 'review')).toBe(false);
    expect(await page.textContent('.action-hint')).toBe('Write what should change (or add line comments in the diff), then Request changes again.');
    expect(await page.evaluate(() => document.activeElement?.matches('.action-input'))).toBe(true);
    await page.fill('.action-input', 'Add a test for an empty list.');
    await page.click('button.review-changes');
    expect(await panel.waitForPosted((m) => m.type === 'review')).toEqual({ type: 'review', taskId: TASK_ID, action: 'request_changes', comment: 'Add a test for an empty list.' });
    // Refused by the server: the extension sends a notice and the buttons work again.
    await panel.send({ type: 'notice', level: 'error', text: 'The server refused the last action.' });
    await page.waitForSelector('button.review-approve:not(:disabled)');
    await panel.clearPosted();
    await page.click('button.review-approve');
    expect(await panel.waitForPosted((m) => m.type === 'review')).toEqual({ type: 'review', taskId: TASK_ID, action: 'approve' });

    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: pushEvents, clipped: [] });
    await page.waitForSelector('button.open-pr');
    expect(await page.textContent('button.open-pr')).toBe('https://forge.example/acme/app/pull/17');
    expect(await page.textContent('.badge.state')).toBe('pr open');
    await page.click('button.open-pr');
    expect(await panel.waitForPosted((m) => m.type === 'openExternal')).toEqual({ type: 'openExternal', url: 'https://forge.example/acme/app/pull/17' });
    await page.click('.verdict-details summary');
    await page.click('.review .changed-files button');
    expect(await panel.waitForPosted((m) => m.type === 'openDiff')).toEqual({ type: 'openDiff', taskId: TASK_ID, path: 'src/paginate.js' });
    await panel.screenshot('webview-pr-open');
    expect(panel.problems).toEqual([]);
  });

  it('decides the push in the Review section only: no push-approval card beside the review buttons', async () => {
    const panel = await ready();
    const page = panel.page;
    // The log as the server writes it: awaiting_review, then the pending push approval.
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: [...approvalEvents, ...afterApproval, ...reviewEvents], clipped: [] });
    await page.waitForSelector('.review button.review-approve');
    expect(reviewEvents.at(-1)).toMatchObject({ type: 'approval.requested', data: { approvalId: PUSH_APPROVAL_ID, kind: 'push' } });
    // One control: the review buttons. No card offers a second Approve/Deny for the same push.
    expect(await page.locator('.approval-card').count()).toBe(0);
    expect(await page.isHidden('.approvals')).toBe(true);
    expect(await page.locator('button.approve, button.deny').count()).toBe(0);
    // The trajectory still records the request, and says where it is decided.
    const row = page.locator('.row-approval', { hasText: 'Push approval' });
    await row.waitFor();
    expect(await row.textContent()).toContain('waiting for your review');
    await panel.screenshot('webview-review-one-control');

    await page.click('button.review-approve');
    expect(await panel.waitForPosted((m) => m.type === 'review')).toEqual({ type: 'review', taskId: TASK_ID, action: 'approve' });
    expect((await panel.posted()).some((m) => m.type === 'decideApproval')).toBe(false);
    // The server resolves the push approval with the review; the row records who approved it.
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: pushEvents, clipped: [] });
    await page.locator('.row-approval', { hasText: 'approved by dev@example.com' }).filter({ hasText: 'Push approval' }).waitFor({ timeout: 5_000 });
    expect(await page.locator('.approval-card').count()).toBe(0);
    expect(panel.problems).toEqual([]);
  });

  it('says who overrode a policy block instead of showing the checks as failed', async () => {
    const panel = await ready();
    const page = panel.page;
    const blocked = stamp(TASK_ID, blockedForOverride(), approvalEvents.length + afterApproval.length + 1);
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: [...approvalEvents, ...afterApproval, ...blocked], clipped: [] });
    // Blocked: the checks failed, and the override request waits for a repo owner.
    const card = page.locator('.approval-card', { hasText: 'policy override' });
    await card.waitFor();
    expect(await card.locator('.reason').textContent()).toContain('a repo owner (olive) may override');
    expect(await page.textContent('.review .policy')).toContain('✗ Policy checks failed');
    await page.locator('.row-approval', { hasText: 'Policy override' }).filter({ hasText: 'waiting for a repo owner' }).waitFor({ timeout: 5_000 });

    const after = stamp(TASK_ID, overriddenAndPushed(), approvalEvents.length + afterApproval.length + blocked.length + 1);
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: after, clipped: [] });
    await page.waitForSelector('button.open-pr');
    const policy = page.locator('.review .policy');
    expect(await policy.textContent()).toContain('Policy checks overridden by olive');
    expect(await policy.textContent()).not.toContain('failed');
    expect(await policy.getAttribute('class')).toContain('tone-warn');
    // The overridden violation stays listed for the reviewer.
    expect(await policy.locator('.violation').textContent()).toBe('ci-config — .github/workflows/ci.yml: CI configuration changed (modified)');
    await page.locator('.row-note', { hasText: 'Policy check overridden by olive (push)' }).waitFor({ timeout: 5_000 });
    await page.locator('.row-approval', { hasText: 'Policy override' }).filter({ hasText: 'approved by olive' }).waitFor({ timeout: 5_000 });
    expect(await page.locator('.approval-card').count()).toBe(0);
    await panel.screenshot('webview-policy-overridden');
    expect(panel.problems).toEqual([]);
  });

  it('offers Approve/Deny on an override only to a viewer who may decide it; others see whom it waits for', async () => {
    const blocked = stamp(TASK_ID, blockedForOverride(), approvalEvents.length + afterApproval.length + 1);
    const events = [...approvalEvents, ...afterApproval, ...blocked];
    // The requester (not an owner): no buttons, before and after the server says who may decide.
    const panel = await ready();
    const page = panel.page;
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events, clipped: [] });
    const card = page.locator('.approval-card', { hasText: 'policy override' });
    await card.waitFor();
    expect(await card.locator('button').count()).toBe(0);
    await panel.send({ type: 'approvals', taskId: TASK_ID, canReview: true, approvals: [{ approvalId: OVERRIDE_APPROVAL_ID, canDecide: false, deciders: ['olive', 'oscar'] }] });
    await card.locator('.waiting', { hasText: 'Waiting for an owner (olive, oscar)' }).waitFor({ timeout: 5_000 });
    expect(await card.locator('button').count()).toBe(0);
    await panel.screenshot('webview-override-waiting-for-owner');
    expect(await page.locator('.review button.review-approve').count()).toBe(1);
    await page.close();

    // olive owns the repo: the same card with Approve/Deny, and her decision is posted. The
    // review, steering and interrupt stay the requester's.
    const owner = await ready();
    await owner.send({ type: 'events', taskId: TASK_ID, reset: true, events, clipped: [] });
    await owner.send({ type: 'approvals', taskId: TASK_ID, canReview: false, approvals: [{ approvalId: OVERRIDE_APPROVAL_ID, canDecide: true, deciders: ['olive', 'oscar'] }] });
    const ownerCard = owner.page.locator('.approval-card', { hasText: 'policy override' });
    await owner.page.locator('.review .waiting', { hasText: "The review is dev@example.com's to give." }).waitFor({ timeout: 5_000 });
    expect(await owner.page.locator('.review .buttons button').count()).toBe(0);
    expect(await owner.page.isHidden('.action-input')).toBe(true);
    await ownerCard.locator('button.approve').click();
    expect(await owner.waitForPosted((m) => m.type === 'decideApproval')).toEqual({ type: 'decideApproval', taskId: TASK_ID, approvalId: OVERRIDE_APPROVAL_ID, decision: 'approved' });
    expect(await ownerCard.locator('.waiting').count()).toBe(0);
    expect(owner.problems).toEqual([]);
  });

  it('hides the buttons of a command approval the viewer may not decide (a repo owner reading the task)', async () => {
    const panel = await ready();
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: approvalEvents, clipped: [] });
    const card = panel.page.locator('.approval-card');
    await card.locator('button.approve').waitFor();
    await panel.send({ type: 'approvals', taskId: TASK_ID, canReview: false, approvals: [{ approvalId: 'ap_1', canDecide: false, deciders: ['dev@example.com'] }] });
    await card.locator('.waiting', { hasText: 'Waiting for dev@example.com' }).waitFor({ timeout: 5_000 });
    expect(await card.locator('button').count()).toBe(0);
  });

  it('survives a reconnection: overlapping replays show every event once, in order', async () => {
    const panel = await ready();
    const all = [...approvalEvents, ...afterApproval, ...reviewEvents];
    await panel.send({ type: 'connection', taskId: TASK_ID, status: 'live' });
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: all.slice(0, 12), clipped: [] });
    await panel.send({ type: 'connection', taskId: TASK_ID, status: 'reconnecting', detail: 'Lost the event stream (connection closed (1006)); reconnecting…' });
    await panel.page.waitForSelector('.banner:not([hidden])');
    expect(await panel.page.textContent('.banner')).toContain('reconnecting');
    await panel.screenshot('webview-reconnecting');
    // The replay after reconnecting overlaps what was already shown, and arrives in pieces.
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: all.slice(8, 20), clipped: [] });
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: all.slice(15), clipped: [] });
    await panel.send({ type: 'connection', taskId: TASK_ID, status: 'live' });
    await panel.page.waitForSelector('.banner', { state: 'hidden' });
    await panel.page.evaluate(() => {
      const trajectory = document.querySelector('.trajectory')!;
      trajectory.scrollTop = 0;
    });
    await panel.page.waitForTimeout(100);
    // Collect every row by scrolling through the (virtualised) list.
    const seen = new Map<number, number>();
    for (let step = 0; step < 40; step += 1) {
      for (const seq of await rowSeqs(panel)) seen.set(seq, (seen.get(seq) ?? 0) + 1);
      const atEnd = await panel.page.evaluate(() => {
        const t = document.querySelector('.trajectory')!;
        t.scrollTop += t.clientHeight / 2;
        return t.scrollTop + t.clientHeight >= t.scrollHeight - 2;
      });
      await panel.page.waitForTimeout(50);
      if (atEnd) {
        for (const seq of await rowSeqs(panel)) seen.set(seq, (seen.get(seq) ?? 0) + 1);
        break;
      }
    }
    const unique = [...seen.keys()].sort((a, b) => a - b);
    // Every row-creating event is there once; rows only appear for events that create rows.
    const rowEvents = all.filter((e) => e.type !== 'model.turn' && e.type !== 'approval.resolved' && !(e.type === 'tool.finished' && ['tu_1', 'tu_2', 'tu_3', 'tu_4'].includes(e.data.toolUseId)));
    expect(unique).toEqual(rowEvents.map((e) => e.seq));
    const titles = await panel.page.$$eval('.trajectory .row-text', (rows) => rows.map((r) => r.textContent));
    expect(new Set(titles).size).toBe(titles.length);
  });

  it('stays responsive with 5,000 events and MBs of output; long output loads on demand', async () => {
    const panel = await ready();
    const events = stamp(TASK_ID, longRun(5000, 200_000));
    const totalOutput = events.reduce((sum, e) => sum + (e.type === 'tool.finished' ? e.data.output.length : 0), 0);
    expect(totalOutput).toBeGreaterThan(4_000_000);
    const page = panel.page;
    const started = Date.now();
    for (let i = 0; i < events.length; i += 250) {
      const batch = clipped(events.slice(i, i + 250));
      await panel.send({ type: 'events', taskId: TASK_ID, reset: i === 0, events: batch.events, clipped: batch.clipped });
    }
    await page.waitForFunction(() => document.querySelector('.trajectory')?.textContent?.includes('Step 1249'));
    const loadMs = Date.now() - started;
    // Virtualised: only the rows near the viewport are in the DOM.
    const domRows = await page.$$eval('.trajectory .row', (rows) => rows.length);
    expect(domRows).toBeLessThan(120);
    expect(loadMs).toBeLessThan(15_000);

    // Scrolling from the bottom to the top and back: frame times stay short.
    const frames = await page.evaluate(async () => {
      const t = document.querySelector<HTMLElement>('.trajectory')!;
      const times: number[] = [];
      let last = performance.now();
      for (let i = 0; i < 60; i += 1) {
        t.scrollTop = i % 2 ? t.scrollHeight : (t.scrollHeight * i) / 60;
        await new Promise((r) => requestAnimationFrame(() => r(null)));
        const now = performance.now();
        times.push(now - last);
        last = now;
      }
      times.sort((a, b) => a - b);
      return { p50: times[30]!, p95: times[57]!, max: times[59]! };
    });
    expect(frames.p95).toBeLessThan(100);

    // Jump to a big output (t = 50 → the 50th tool call) and load the rest of it.
    await page.evaluate(() => {
      const t = document.querySelector<HTMLElement>('.trajectory')!;
      t.scrollTop = 0;
    });
    const bigEvent = events.find((e) => e.type === 'tool.finished' && e.data.output.startsWith('BIG OUTPUT 50\n'))!;
    await page.evaluate(async () => {
      const t = document.querySelector<HTMLElement>('.trajectory')!;
      for (let y = 0; y < t.scrollHeight; y += 200) {
        if ([...document.querySelectorAll('.row-tool')].some((r) => r.textContent?.includes('“paginate_50”'))) break;
        t.scrollTop = y;
        await new Promise((r) => requestAnimationFrame(() => r(null)));
      }
    });
    const bigRow = page.locator('.row-tool', { hasText: '“paginate_50”' });
    await bigRow.locator('summary').click();
    const loadMore = bigRow.locator('button.load-more');
    await loadMore.waitFor();
    expect(await loadMore.textContent()).toMatch(/Load more \([\d,]+ more characters\)/);
    expect((await bigRow.locator('pre.output').textContent())!.length).toBe(2000);
    await panel.screenshot('webview-5000-events');
    await loadMore.click();
    const request = await panel.waitForPosted((m) => m.type === 'loadOutput');
    expect(request).toEqual({ type: 'loadOutput', taskId: TASK_ID, seq: bigEvent.seq });
    if (bigEvent.type !== 'tool.finished') throw new Error('expected a tool result');
    await panel.send({ type: 'output', taskId: TASK_ID, seq: bigEvent.seq, text: bigEvent.data.output });
    await page.waitForFunction((n) => {
      const pres = [...document.querySelectorAll('.row-tool pre.output')];
      return pres.some((p) => (p.textContent?.length ?? 0) === n);
    }, bigEvent.data.output.length);
    expect(await bigRow.locator('button.load-more').count()).toBe(0);
    console.info(`5,000 events: loaded in ${loadMs} ms; scroll frames p50 ${frames.p50.toFixed(1)} ms, p95 ${frames.p95.toFixed(1)} ms, max ${frames.max.toFixed(1)} ms`);
    expect(panel.problems).toEqual([]);
  });

  it('shows a snapshot build as it goes, infrastructure and pre-existing test failures apart, and a cancelled run as interrupted', async () => {
    const panel = await ready();
    const page = panel.page;
    const events = stamp(TASK_ID, [
      ...runUntilApproval().slice(0, 2),
      { type: 'snapshot.progress', data: { stage: 'install', elapsedMs: 12_000, line: 'added 312 packages in 11s' } },
      { type: 'snapshot.progress', data: { stage: 'baseline', elapsedMs: 31_000, line: 'running npm test at the base commit' } },
    ]);
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events, clipped: [] });
    const snapshot = page.locator('.row-snapshot');
    await snapshot.filter({ hasText: 'baseline · 31.0 s' }).waitFor({ timeout: 5_000 });
    expect(await snapshot.count()).toBe(1);
    expect(await snapshot.textContent()).toContain('Building the sandbox snapshot');
    expect(await snapshot.textContent()).toContain('running npm test at the base commit');
    await panel.screenshot('webview-snapshot-progress');

    const more = stamp(TASK_ID, [
      { type: 'snapshot.progress', data: { stage: 'done', elapsedMs: 40_000 } },
      { type: 'tests.finished', data: { command: 'npm test', scope: 'selected', passed: 11, failed: 1, skipped: 0, ok: true, quarantined: [], preExisting: ['test/dates.test.js > parses ISO weeks'], output: '', durationMs: 900 } },
      { type: 'tests.runner_failed', data: { command: 'npm test', kind: 'timeout', message: 'no report after 600 s', output: '' } },
      { type: 'tool.called', data: { turn: 2, toolUseId: 'tu_long', name: 'run_tests', input: { scope: 'full' } } },
      { type: 'task.state', data: { state: 'cancelled', reason: 'interrupted by dev@example.com' } },
      { type: 'tool.finished', data: { toolUseId: 'tu_long', name: 'run_tests', isError: true, output: 'exited with 137', truncated: false, durationMs: 4000 } },
    ], events.length + 1);
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: more, clipped: [] });
    await page.locator('.row-snapshot', { hasText: 'Sandbox snapshot built' }).waitFor({ timeout: 5_000 });
    expect(await page.textContent('.row-tests .test-counts')).toBe('11 passed, 1 failed (1 already failing at the base)');
    expect(await page.textContent('.row-runner summary')).toContain('test infrastructure');
    expect(await page.textContent('.row-runner summary')).toContain('the test runner timed out: no report after 600 s');
    const killed = page.locator('.row-tool', { hasText: 'run_tests' });
    await killed.locator('.badge', { hasText: 'interrupted' }).waitFor({ timeout: 5_000 });
    expect(await killed.textContent()).not.toContain('error');
    await panel.screenshot('webview-interrupted');
    expect(panel.problems).toEqual([]);
  });

  it('says "signed out" with a Sign in button, not "reconnecting", when the server refuses the token', async () => {
    const panel = await ready();
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: approvalEvents.slice(0, 6), clipped: [] });
    await panel.send({ type: 'connection', taskId: TASK_ID, status: 'signed_out', detail: 'The server did not accept your token (unknown or revoked).' });
    await panel.page.waitForSelector('.banner.tone-error');
    expect(await panel.page.textContent('.banner')).toBe('Signed out. The server did not accept your token (unknown or revoked). Sign in');
    expect(await panel.page.textContent('.badge.connection')).toBe('signed out');
    await panel.page.click('.banner button.banner-action');
    expect(await panel.waitForPosted((m) => m.type === 'command')).toEqual({ type: 'command', command: 'signIn' });
  });

  it('accepts or rejects each file in review, by mouse or keyboard, and counts what is pushed', async () => {
    const readme = stamp(TASK_ID, [{ type: 'file.changed', data: { path: 'README.md', change: 'modified', patch: '--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-old\n+new\n' } }], approvalEvents.length + afterApproval.length + reviewEvents.length + 1);
    const panel = await openTaskPanel(browser, { events: [...approvalEvents, ...afterApproval, ...reviewEvents, ...readme], files: reviewFiles(['README.md', 'modified'], ['src/paginate.js', 'modified']).files });
    const page = panel.page;
    await page.waitForSelector('button.review-approve');
    expect(await page.textContent('button.review-approve')).toBe('Approve and push');
    await page.click('.verdict-details summary');
    const boxes = page.locator('.changed-files input.accept-file');
    expect(await boxes.count()).toBe(2);
    expect(await page.$$eval('.changed-files input.accept-file', (all) => all.map((b) => [(b as HTMLInputElement).checked, b.getAttribute('aria-label')]))).toEqual([
      [true, 'Push the changes to README.md'],
      [true, 'Push the changes to src/paginate.js'],
    ]);
    // Unchecking asks the extension, which holds the decision and sends it back.
    await page.getByRole('checkbox', { name: 'Push the changes to README.md' }).uncheck();
    expect(await panel.waitForPosted((m) => m.type === 'setFileAccepted')).toEqual({ type: 'setFileAccepted', taskId: TASK_ID, path: 'README.md', accepted: false });
    await panel.send(reviewFiles(['README.md', 'modified', false], ['src/paginate.js', 'modified']));
    await page.waitForSelector('button.review-approve:has-text("Approve and push 1 of 2 files")');
    expect(await page.textContent('.verdict-details summary')).toContain('2 files changed · 1 left out');
    expect(await page.textContent('.changed-files li.left-out')).toContain('README.md (left out)');
    await panel.screenshot('webview-accept-per-file');
    // Every file left out: nothing to push, so no approval (Reject is what that means).
    await panel.send(reviewFiles(['README.md', 'modified', false], ['src/paginate.js', 'modified', false]));
    await page.waitForSelector('button.review-approve:disabled:has-text("Approve and push 0 of 2 files")');
    expect(await page.getAttribute('button.review-approve', 'title')).toBe('Every file is left out, so nothing would be pushed: check a file, or Reject');
    await panel.send(reviewFiles(['README.md', 'modified', false], ['src/paginate.js', 'modified']));
    await page.waitForSelector('button.review-approve:not(:disabled)');
    // The keyboard: Space on the focused checkbox takes it back.
    await panel.clearPosted();
    await page.focus('.changed-files li.left-out input.accept-file');
    await page.keyboard.press('Space');
    expect(await panel.waitForPosted((m) => m.type === 'setFileAccepted')).toEqual({ type: 'setFileAccepted', taskId: TASK_ID, path: 'README.md', accepted: true });
    // A PR round: README.md was left out of the PR, so the round's diff does not have it: left out, no checkbox, not counted as changed.
    await panel.send(reviewFiles(['README.md', undefined, false], ['src/paginate.js', 'modified']));
    await page.waitForSelector('.changed-files li.left-out.earlier');
    expect(await page.textContent('.verdict-details summary')).toContain('1 file changed · 1 left out');
    expect(await page.textContent('button.review-approve')).toBe('Approve and push');
    expect(await page.locator('.changed-files li.earlier input, .changed-files li.earlier button').count()).toBe(0);
    expect(await page.textContent('.changed-files li.earlier')).toBe('not pushed README.md (left out)');
    // Not in review: no checkboxes.
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, clipped: [], events: stamp(TASK_ID, [{ type: 'task.state', data: { state: 'pushing' } }], readme[0]!.seq + 1) });
    await page.waitForSelector('button.review-approve', { state: 'detached' });
    expect(await page.locator('input.accept-file').count()).toBe(0);
  });

  it('after a round of changes: the round in the trajectory, and this round\'s changes or all of them in the diff editor', async () => {
    const first = [...approvalEvents, ...afterApproval, ...reviewEvents];
    const round = stamp(TASK_ID, [
      { type: 'approval.resolved', data: { approvalId: PUSH_APPROVAL_ID, decision: 'denied', by: 'dev@example.com', comment: 'changes requested' } },
      { type: 'review.requested_changes', data: { by: 'dev@example.com', comments: [{ path: 'src/paginate.js', line: 2, body: 'Name the offset.' }], rejectedFiles: ['README.md'] } },
      { type: 'user.message', data: { from: 'dev@example.com', text: 'The reviewer requested changes:\n- src/paginate.js:2: Name the offset.' } },
      { type: 'task.state', data: { state: 'running', reason: 'changes requested by dev@example.com' } },
      { type: 'assistant.text', data: { turn: 6, text: 'Naming the offset as asked.' } },
      { type: 'task.state', data: { state: 'awaiting_review' } },
    ], first.length + 1);
    const panel = await openTaskPanel(browser, { events: first });
    const page = panel.page;
    await page.waitForSelector('button.review-approve');
    expect(await page.locator('.round-diffs').count()).toBe(0);
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: round, clipped: [] });
    // The extension reads the round's diff from the server.
    await panel.send(reviewFiles(['src/paginate.js', 'modified']));
    await page.getByText('Round 2: dev@example.com requested changes: src/paginate.js:2 Name the offset.; revert README.md').waitFor();
    // The new round's steps follow in the same list, after the request.
    expect(await page.textContent('.trajectory')).toMatch(/Round 2: dev@example\.com requested changes[\s\S]*Naming the offset as asked\./);
    // The round leads the folded review line; its diffs are inside.
    expect(await page.textContent('.verdict-details summary')).toMatch(/^Round 2 · /);
    await page.click('.verdict-details summary');
    await page.waitForSelector('.round-diffs');
    expect(await page.textContent('.round-diffs')).toBe("Round 2: This round's changes · All changes");
    await panel.screenshot('webview-round-2');
    await page.click('button.open-round-changes');
    expect(await panel.waitForPosted((m) => m.type === 'openChanges')).toEqual({ type: 'openChanges', taskId: TASK_ID, scope: 'round' });
    await panel.clearPosted();
    await page.click('button.open-all-changes');
    expect(await panel.waitForPosted((m) => m.type === 'openChanges')).toEqual({ type: 'openChanges', taskId: TASK_ID, scope: 'all' });
  });

  it('a followed PR\'s rounds: a red check triaged, the PR round\'s heading with what started it, its steps under it, and its push (#26)', async () => {
    const first = [...approvalEvents, ...afterApproval, ...reviewEvents];
    const feedback = { number: 7, seenThrough: 3, checksSeenThrough: 1, comments: [], ignored: [] };
    const followed = stamp(TASK_ID, [
      { type: 'task.state', data: { state: 'pushing' } },
      { type: 'pr.opened', data: { number: 7, url: 'dockhand-local://app/pull/7', branch: 'dockhand/1-paginate', headSha: 'a'.repeat(40) } },
      { type: 'task.state', data: { state: 'pr_open' } },
      { type: 'pr.feedback', data: { ...feedback, kind: 'triaged', check: { id: 1, name: 'ci/lint', conclusion: 'failure', triage: 'pre_existing', evidence: 'ci/lint fails at the base commit bbbbbbbbbbbb too' } } },
      { type: 'review.requested_changes', data: { by: 'alice', comments: [{ path: 'src/paginate.js', line: 2, body: 'Name the offset.' }], followUp: { number: 7, round: 2 } } },
      { type: 'user.message', data: { from: 'pr-review', text: 'Review on pull request #7 (round 2).' } },
      { type: 'pr.feedback', data: { ...feedback, kind: 'round', round: 2, ignored: [{ id: 2, author: 'mallory', reason: 'mallory is not an owner' }] } },
      { type: 'task.state', data: { state: 'running', reason: 'round 2: review on PR #7' } },
      { type: 'assistant.text', data: { turn: 6, text: 'Naming the offset as asked.' } },
      { type: 'task.state', data: { state: 'pushing' } },
      { type: 'pr.pushed', data: { round: 2, number: 7, headSha: 'c'.repeat(40), commit: true, replied: [3] } },
      { type: 'task.state', data: { state: 'pr_open' } },
    ], first.length + 1);
    const panel = await openTaskPanel(browser, { events: first });
    const page = panel.page;
    await page.waitForSelector('button.review-approve');
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: followed, clipped: [] });
    await page.getByText('PR round 2 on pull request #7, started by alice: src/paginate.js:2 Name the offset.').waitFor();
    expect(await page.textContent('.trajectory')).toMatch(
      /Check ci\/lint is red \(failure\), pre-existing: ci\/lint fails at the base commit bbbbbbbbbbbb too\. No round was started[\s\S]*PR round 2 on pull request #7, started by alice[\s\S]*Ignored on pull request #7 \(may not steer\): #2 by mallory[\s\S]*Naming the offset as asked\.[\s\S]*PR round 2: one new commit cccccccccccc pushed to pull request #7; replied on 1 thread/,
    );
    await panel.screenshot('webview-pr-round-2');
  });

  it('keeps the selected task and an unsent message across a reload, then takes the replay', async () => {
    const panel = await ready();
    await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: approvalEvents, clipped: [] });
    await panel.page.fill('.action-input', 'draft not yet sent');
    await panel.page.reload();
    await panel.waitForPosted((m) => m.type === 'ready');
    // Before the extension answers, the panel already remembers what was selected.
    expect(await panel.page.evaluate(() => JSON.parse(sessionStorage.getItem('vscode-state')!))).toMatchObject({ selectedTaskId: TASK_ID });
    await showTask(panel, { events: approvalEvents });
    await panel.page.waitForSelector('.approval-card');
    expect(await panel.page.inputValue('.action-input')).toBe('draft not yet sent');
    // Garbage from a confused host is ignored, not rendered.
    await panel.page.evaluate(() => window.postMessage({ type: 'events', taskId: 1, events: 'nope' }, '*'));
    await panel.page.waitForTimeout(50);
    expect(await panel.page.locator('.approval-card').count()).toBe(1);
  });
});
