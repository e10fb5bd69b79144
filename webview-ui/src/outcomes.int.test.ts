import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebview, launchBrowser, openTaskPanel, type PanelPage, reviewFiles } from './test/browser-harness';
import { TASK_ID, approvalResolved, longRun, runUntilApproval, runUntilReview, stamp } from './test/recorded-stream';

/*
 * Issue 24 in Chromium: each outcome its own look (refused call, pre-existing failures, budget
 * stop), the live trajectory keeps following, the badges' outlines reach 3:1 in Light Modern, and
 * a revert the reviewer asked for and did not happen is said in round 2.
 */

let browser: Browser;

beforeAll(async () => {
  buildWebview();
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
});

function atBottom(panel: PanelPage): Promise<boolean> {
  return panel.page.$eval('.trajectory', (t) => t.scrollHeight - t.scrollTop - t.clientHeight < 24);
}

describe('outcomes and the live trajectory in Chromium', () => {
  it('keeps following a live run when the panel above the list grows between a scroll and its event', async () => {
    const panel = await openTaskPanel(browser, { live: true, events: stamp(TASK_ID, longRun(60, 200)) });
    const page = panel.page;
    await page.waitForFunction(() => document.querySelectorAll('.trajectory .row').length > 5);
    await page.waitForTimeout(100);
    expect(await atBottom(panel)).toBe(true);
    // The scroll event of the list's own scroll to the bottom arrives a frame late; by then an
    // approval card or the review area has taken 120 px from the list (the developer did not scroll).
    await page.evaluate(() => {
      const t = document.querySelector<HTMLElement>('.trajectory')!;
      const spacer = document.createElement('div');
      spacer.style.height = '120px';
      spacer.className = 'test-spacer';
      t.before(spacer);
      t.dispatchEvent(new Event('scroll'));
    });
    const count = stamp(TASK_ID, longRun(60, 200)).length;
    const said = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'assistant.text' as const, data: { turn: 30, text: `Live step ${i}: still working on the failing case.` } }));
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: stamp(TASK_ID, said(10), count + 1), clipped: [] });
    await page.waitForTimeout(200);
    expect(await atBottom(panel)).toBe(true);
    // The developer scrolling up stops the following; back at the bottom, it follows again.
    await page.$eval('.trajectory', (t) => (t.scrollTop = 0));
    await page.waitForTimeout(100);
    await panel.send({ type: 'events', taskId: TASK_ID, reset: false, events: stamp(TASK_ID, said(3), count + 11), clipped: [] });
    await page.waitForTimeout(200);
    expect(await page.$eval('.trajectory', (t) => t.scrollTop)).toBe(0);
    await page.close();
  });

  it('shows a refused call, pre-existing failures and a budget stop each in its own words', async () => {
    const events = stamp(TASK_ID, [
      ...runUntilReview(),
      { type: 'tool.called', data: { turn: 9, toolUseId: 'tu_ci', name: 'edit_file', input: { path: '.github/workflows/ci.yml', command: 'replace', old_text: 'a', new_text: 'b' } } },
      { type: 'tool.finished', data: { toolUseId: 'tu_ci', name: 'edit_file', isError: true, output: 'path: .github/workflows/ci.yml is CI configuration; Dockhand does not edit CI config. Leave it unchanged.', truncated: false, durationMs: 3 } },
      { type: 'tests.finished', data: { command: 'npm test', scope: 'full', passed: 8, failed: 1, skipped: 0, ok: true, quarantined: [], durationMs: 1200, output: 'x', preExisting: ['calc divides by zero'] } },
      { type: 'budget.exceeded', data: { budget: 'turns', limit: 20, used: 20 } },
      { type: 'task.state', data: { state: 'budget_exhausted' } },
    ]);
    const panel = await openTaskPanel(browser, { events, size: { width: 420, height: 900 } });
    const page = panel.page;
    const refused = page.locator('.row-tool.outcome-refused');
    await refused.waitFor();
    expect(await refused.locator('.tool-input').textContent()).toBe('.github/workflows/ci.yml (replace)');
    expect(await refused.locator('.badge').textContent()).toBe('refused');
    expect(await refused.locator('.refusal').textContent()).toContain('is CI configuration');
    expect(await page.locator('.row-tests .badge').last().textContent()).toBe('no new failures');
    expect(await page.locator('.badge.state').textContent()).toBe('budget exhausted');
    expect(await page.locator('.badge.state').getAttribute('class')).toContain('tone-budget');
    expect(await page.textContent('.banner')).toContain('Stopped: the turn budget ran out.');
    expect(await page.textContent('.banner')).toContain('larger turn budget (setting dockhand.budgets.maxTurns)');
    await panel.screenshot('outcomes-budget-refused');
    expect(panel.problems).toEqual([]);
    await page.close();
  });

  it('draws badge outlines at 3:1 or more against the Light Modern side bar', async () => {
    const events = stamp(TASK_ID, runUntilReview());
    const panel = await openTaskPanel(browser, { events, theme: 'light' });
    const page = panel.page;
    await page.waitForSelector('.row-tests');
    const ratios = await page.evaluate(() => {
      const probe = document.createElement('canvas').getContext('2d')!;
      const rgb = (css: string): number[] => {
        probe.fillStyle = '#000';
        probe.fillStyle = css;
        probe.fillRect(0, 0, 1, 1);
        return [...probe.getImageData(0, 0, 1, 1).data.slice(0, 3)];
      };
      const luminance = (css: string): number => {
        const [r, g, b] = rgb(css).map((v) => {
          const c = v / 255;
          return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
      };
      const background = luminance(getComputedStyle(document.body).backgroundColor);
      const out: Record<string, number> = {};
      for (const tone of ['tone-ok', 'tone-warn', 'tone-error', 'tone-budget', 'tone-refused', 'change-added', 'change-modified']) {
        const badge = document.createElement('span');
        badge.className = `badge ${tone}`;
        badge.textContent = 'x';
        document.body.append(badge);
        const border = luminance(getComputedStyle(badge).borderTopColor);
        badge.remove();
        const [light, dark] = border > background ? [border, background] : [background, border];
        out[tone] = Math.round(((light + 0.05) / (dark + 0.05)) * 100) / 100;
      }
      return out;
    });
    for (const [tone, ratio] of Object.entries(ratios)) expect(ratio, `${tone} outline ${ratio}:1`).toBeGreaterThanOrEqual(3);
    await page.close();
  });

  it('says in round 2 that a revert the reviewer asked for did not happen', async () => {
    const panel = await openTaskPanel(browser, { events: stamp(TASK_ID, [...runUntilApproval(), ...approvalResolved('approved'), ...runUntilReview()]) });
    const page = panel.page;
    await page.waitForSelector('button.review-approve');
    // As the extension sends it: the decision kept from round 1 first; the revert check's answer later, with the same decision.
    await panel.send(reviewFiles(['src/paginate.js', 'modified', false]));
    await page.waitForSelector('.changed-files li.left-out', { state: 'attached' });
    await panel.send(reviewFiles(['src/paginate.js', 'modified', false, true]));
    await page.waitForSelector('.verdict.unreverted', { timeout: 5_000 });
    expect(await page.textContent('.verdict.unreverted')).toBe('⚠ Revert not done: src/paginate.js');
    await page.click('.verdict-details summary');
    expect(await page.locator('.changed-files li').filter({ hasText: 'src/paginate.js' }).textContent()).toContain('revert not done');
    expect(await page.locator('.changed-files input.accept-file').first().isChecked()).toBe(false);
    await page.close();
  });
});
