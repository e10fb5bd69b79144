import type { TaskEvent } from '@dockhand/protocol';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebview, launchBrowser, openTaskPanel, showTask, type PanelPage, type ThemeName, reviewFiles } from './test/browser-harness';
import { TASK_ID, approvalResolved, runUntilApproval, runUntilReview, stamp } from './test/recorded-stream';

/*
 * The side panel's accessibility in Chromium with axe-core, under the colour themes recorded from
 * the real workbench, at the default side-bar width and a narrow one; and a keyboard-only review.
 */

let browser: Browser;

beforeAll(async () => {
  buildWebview();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
});

const working = stamp(TASK_ID, runUntilApproval());
const resolved = stamp(TASK_ID, approvalResolved('approved'), working.length + 1);
const review = stamp(TASK_ID, runUntilReview(), working.length + resolved.length + 1);
const all = [...working, ...resolved, ...review];
const failed = stamp(TASK_ID, [
  { type: 'task.failed', data: { code: 'sandbox_unavailable', message: 'sandbox sb-1 is gone (request_id: req_7f1)' } },
  { type: 'task.state', data: { state: 'failed', reason: 'sandbox sb-1 is gone' } },
], working.length + 1);
const comments = [
  { path: 'src/paginate.js', line: 2, body: 'Use a named constant for the page offset.' },
  { path: 'src/paginate.js', line: 4, body: 'Cover the last page in a test.' },
];

/** Height of the side bar's Trajectory view in a 900 px window with the Changes view open below it. */
const HEIGHT = 560;
const WIDTHS = { default: 300, narrow: 230 };
const THEMES: ThemeName[] = ['dark', 'light', 'high-contrast', 'high-contrast-light'];

const show = (panel: PanelPage, events: TaskEvent[]): Promise<void> => showTask(panel, { events, live: true });

describe('side panel accessibility (axe-core, Chromium)', () => {
  for (const theme of THEMES) {
    for (const [widthName, width] of Object.entries(WIDTHS)) {
      it(`has no serious or critical violations: ${theme} theme, ${widthName} width (${width} px)`, async () => {
        const panel = await openTaskPanel(browser, { size: { width, height: HEIGHT }, theme });
        const page = panel.page;
        const found: string[] = [];

        // Working, with a command waiting for approval.
        await show(panel, working);
        await page.waitForSelector('.approval-card button.approve');
        found.push(...(await panel.axe()).map((v) => `working: ${v}`));

        // In review with two pending line comments and the verdicts opened.
        await show(panel, all);
        await panel.send({ type: 'pendingComments', taskId: TASK_ID, comments });
        await page.waitForSelector('button.review-changes:has-text("Request changes (2)")');
        await page.click('.verdict-details summary');
        await page.click('.pending-comments summary');
        found.push(...(await panel.axe()).map((v) => `review: ${v}`));
        await page.click('.verdict-details summary');
        await page.click('.pending-comments summary');
        // As the review first appears: the buttons are inside the view, the trajectory keeps most of the height.
        for (const selector of ['button.review-approve', 'button.review-changes', 'button.review-reject', '.action-input']) {
          const box = await page.locator(selector).boundingBox();
          expect(box, selector).not.toBeNull();
          expect(box!.x + box!.width, `${selector} right edge`).toBeLessThanOrEqual(width);
          expect(box!.y + box!.height, `${selector} bottom edge`).toBeLessThanOrEqual(HEIGHT);
        }
        await panel.screenshot(`a11y-review-${theme}-${widthName}`);
        const trajectory = await page.locator('.trajectory').boundingBox();
        expect(trajectory!.height).toBeGreaterThan(HEIGHT * (widthName === 'narrow' ? 0.4 : 0.5));
        // Nothing but the trajectory (and short lists) scrolls: the page itself does not.
        expect(await page.evaluate(() => document.documentElement.scrollHeight <= window.innerHeight + 1)).toBe(true);

        // Failed: one error banner.
        await show(panel, [...working, ...failed]);
        await page.waitForSelector('.banner.tone-error');
        expect(await page.textContent('.banner')).toContain('The sandbox could not run. sandbox sb-1 is gone.');
        expect(await page.textContent('.banner')).not.toContain('req_7f1');
        found.push(...(await panel.axe()).map((v) => `failed: ${v}`));

        expect(found).toEqual([]);
        expect(panel.problems).toEqual([]);
        await page.close();
      });
    }
  }

  it('reviews with the keyboard alone: request changes with text and line comments, the round\'s changes, a file\'s checkbox, then approve', async () => {
    const panel = await openTaskPanel(browser, { size: { width: WIDTHS.narrow, height: HEIGHT }, theme: 'light', events: all, live: true, files: reviewFiles(['src/paginate.js', 'modified']).files });
    const page = panel.page;
    await panel.send({ type: 'pendingComments', taskId: TASK_ID, comments });
    await page.waitForSelector('button.review-changes:has-text("Request changes (2)")');

    /** Presses Tab until `selector` has the focus; fails if it is never reached. */
    const tabTo = async (selector: string): Promise<void> => {
      for (let presses = 0; presses < 80; presses += 1) {
        if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) {
          // The focus is visible: an outline drawn in the theme's focus colour.
          const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
          expect(outline, `focus outline of ${selector}`).not.toBe('none');
          return;
        }
        await page.keyboard.press('Tab');
      }
      throw new Error(`Tab never reached ${selector}`);
    };

    // The task list is a picker: reachable, it opens on the selected task, which says so; Escape folds it.
    await tabTo('.task-picker');
    expect(await page.getAttribute('.task-picker', 'aria-expanded')).toBe('false');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.matches('.task-item.selected'))).toBe(true);
    expect(await page.getAttribute('.task-item', 'aria-current')).toBe('true');
    await page.keyboard.press('Escape');
    expect(await page.evaluate(() => document.activeElement?.matches('.task-picker'))).toBe(true);
    expect(await page.isHidden('.task-list')).toBe(true);
    // The verdicts open with the keyboard.
    await tabTo('.verdict-details summary');
    await page.keyboard.press('Enter');
    await page.locator('.changed-files button').waitFor();
    await tabTo('.action-input');
    await page.keyboard.type('Also handle page 0.');
    await tabTo('button.review-changes');
    await page.keyboard.press('Enter');
    expect(await panel.waitForPosted((m) => m.type === 'review')).toEqual({ type: 'review', taskId: TASK_ID, action: 'request_changes', comment: 'Also handle page 0.' });
    await panel.screenshot('a11y-keyboard-request-changes');

    // The agent works on it and comes back for review; the comments went out with the request.
    await panel.send({ type: 'pendingComments', taskId: TASK_ID, comments: [] });
    const next = all.length + 1;
    await panel.send({
      type: 'events',
      taskId: TASK_ID,
      reset: false,
      events: stamp(TASK_ID, [
        { type: 'review.requested_changes', data: { by: 'dev@example.com', comments: [...comments, { body: 'Also handle page 0.' }] } },
        { type: 'task.state', data: { state: 'running' } },
        { type: 'task.state', data: { state: 'awaiting_review' } },
      ], next),
      clipped: [],
    });
    await page.waitForSelector('button.review-approve:not(:disabled)');
    expect(await page.textContent('button.review-changes')).toBe('Request changes');
    // Round 2 by keyboard: this round's changes open in the diff editor; a file's checkbox toggles with Space.
    await page.waitForSelector('.round-diffs');
    expect(await panel.axe()).toEqual([]);
    await panel.clearPosted();
    await tabTo('button.open-round-changes');
    await page.keyboard.press('Enter');
    expect(await panel.waitForPosted((m) => m.type === 'openChanges')).toEqual({ type: 'openChanges', taskId: TASK_ID, scope: 'round' });
    await page.keyboard.press('Shift+Tab');
    await tabTo('.changed-files input.accept-file');
    await page.keyboard.press('Space');
    expect(await panel.waitForPosted((m) => m.type === 'setFileAccepted')).toEqual({ type: 'setFileAccepted', taskId: TASK_ID, path: 'src/paginate.js', accepted: false });
    await panel.clearPosted();
    await page.keyboard.press('Shift+Tab');
    await tabTo('button.review-approve');
    await page.keyboard.press('Enter');
    expect(await panel.waitForPosted((m) => m.type === 'review')).toEqual({ type: 'review', taskId: TASK_ID, action: 'approve' });
    expect(panel.problems).toEqual([]);
  });
});
