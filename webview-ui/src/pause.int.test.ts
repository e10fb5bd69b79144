import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebview, launchBrowser, openTaskPanel, type PanelPage } from './test/browser-harness';
import { TASK_ID, runUntilApproval, stamp } from './test/recorded-stream';

/* Pause and resume in the side panel, in Chromium, fed events the way the extension feeds them. */

let browser: Browser;
beforeAll(async () => {
  buildWebview();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

const working = stamp(TASK_ID, runUntilApproval()).slice(0, 8);
let seq = working.length + 1;
const next = (...events: Parameters<typeof stamp>[1]) => {
  const stamped = stamp(TASK_ID, events, seq);
  seq += stamped.length;
  return stamped;
};

const ready = (): Promise<PanelPage> => openTaskPanel(browser, { events: working });

const buttons = (panel: PanelPage) => panel.page.$$eval('.actions .buttons button', (all) => all.map((b) => b.textContent));

describe('pause and resume in the side panel', () => {
  it('Pause asks, says "pausing" until the agent stops, then offers Resume (with the message) and Cancel', async () => {
    seq = working.length + 1;
    const panel = await ready();
    expect(await buttons(panel)).toEqual(['Send message', 'Pause', 'Cancel task…']);
    await panel.page.click('button.action-pause');
    expect(await panel.waitForPosted((m) => m.type === 'pause')).toEqual({ type: 'pause', taskId: TASK_ID });

    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: next({ type: 'task.pause_requested', data: { by: 'dev@example.com' } }), clipped: [] });
    await panel.page.getByText('Pausing after the current step…').waitFor();
    // Not reached yet: the developer may take it back.
    expect(await buttons(panel)).toEqual(['Send message', 'Keep going', 'Cancel task…']);

    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: next({ type: 'task.state', data: { state: 'paused', reason: 'Paused by dev@example.com.' } }), clipped: [] });
    await panel.page.getByText('Paused: the agent waits for you').waitFor();
    expect(await panel.page.textContent('.badge.state')).toBe('paused');
    expect(await buttons(panel)).toEqual(['Resume', 'Cancel task…']);
    // The time bar stands still while paused.
    const time = await panel.page.textContent('.budgets');
    await panel.page.waitForTimeout(1200);
    expect(await panel.page.textContent('.budgets')).toBe(time);

    await panel.page.fill('.action-input', 'Use the helper in utils.js instead.');
    expect(await buttons(panel)).toEqual(['Send and resume', 'Cancel task…']);
    await panel.page.keyboard.press('Control+Enter');
    expect(await panel.waitForPosted((m) => m.type === 'resume')).toEqual({ type: 'resume', taskId: TASK_ID, text: 'Use the helper in utils.js instead.' });
    expect(await panel.page.inputValue('.action-input')).toBe('');

    await panel.send({
      type: 'events', taskId: TASK_ID, reset: false, clipped: [],
      events: next({ type: 'task.resumed', data: { by: 'dev@example.com' } }, { type: 'task.state', data: { state: 'running', reason: 'resumed by dev@example.com' } }),
    });
    await panel.page.getByText('Resumed by dev@example.com', { exact: true }).waitFor();
    expect(await buttons(panel)).toEqual(['Send message', 'Pause', 'Cancel task…']);
    expect(await panel.page.locator('.pause-status').count()).toBe(0);
    await panel.page.close();
  });
});
