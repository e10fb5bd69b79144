import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { freePort } from '../support/local-server';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from '../vscode/code-server';
import { FIXED_FILE } from '../vscode/fixture';
import { startRealServer, type RealServer } from '../vscode/real-server';
import { expectInSideBar } from '../vscode/side-bar';

/*
 * A developer's first hour with the extension in the real workbench (code-server) at 1440×900
 * with the default layout, against the real fleet server: the extension starts pointed at a URL
 * where nothing answers, is pointed at the server from the welcome view, refuses a wrong token
 * in the sign-in box, signs in; sends a ticket, is told when the task waits for review (a
 * notification and a badge), reviews with two line comments plus text sent in one request, and
 * approves. Screenshots of every step in test-artifacts/first-run-*.png.
 */

let server: RealServer;
let codeServer: CodeServer;
let browser: Browser;
let repo: FixtureRepo;
let wrongUrl: string;

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  server = await startRealServer(repo, { stepDelayMs: 150 });
  wrongUrl = `http://127.0.0.1:${await freePort()}`;
  codeServer = await startCodeServer({ vsix: packageExtension(), settings: { 'dockhand.serverUrl': wrongUrl } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await codeServer?.stop();
  await server?.close();
});

async function welcomeButton(page: Page, label: string): Promise<void> {
  const button = page.locator('.part.sidebar .welcome-view-content .monaco-button', { hasText: label }).first();
  await button.waitFor({ timeout: 30_000 });
  await button.click();
}

async function addLineComment(workbench: Workbench, lineText: string, body: string): Promise<void> {
  const page = workbench.page;
  const line = page.locator('.monaco-diff-editor .modified .view-line', { hasText: lineText });
  await line.waitFor({ timeout: 45_000 });
  await line.click();
  await workbench.runCommand('Comments: Add Comment on Current Selection');
  const form = page.locator('.review-widget .comment-form textarea, .review-widget .comment-form .monaco-editor').last();
  await form.waitFor({ timeout: 45_000 });
  await page.keyboard.type(body);
  await page.getByRole('button', { name: 'Add review comment' }).last().click();
  await page.locator('.review-widget .review-comment-contents', { hasText: body }).waitFor({ timeout: 45_000 });
}

describe('first run to an approved pull request in VS Code (1440×900)', () => {
  it('connects, signs in past a wrong token, sends, is told of the review, reviews with line comments and text, approves', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const workbench = new Workbench(page);
    const shot = (step: string) => workbench.screenshot(`first-run-${step}`);
    try {
      await workbench.open(codeServer.url, repo.path);
      await workbench.showDockhand();

      // 1. Nothing answers at the configured URL: the welcome view says so and offers the fix.
      await page.locator('.part.sidebar .welcome-view-content', { hasText: 'Dockhand needs its server' }).waitFor({ timeout: 60_000 });
      expect(await page.locator('.part.sidebar .pane-header').first().textContent()).toContain(wrongUrl);
      expect(await page.locator('.statusbar').textContent()).toContain('Dockhand: no server');
      await shot('01-no-server');
      await welcomeButton(page, 'Set server URL');
      await workbench.answer(server.url, 'Dockhand: Set server URL');

      // 2. The server answers; no token yet.
      await page.locator('.part.sidebar .welcome-view-content', { hasText: 'Sign in with an API token' }).waitFor({ timeout: 30_000 });
      expect(await page.locator('.statusbar').textContent()).toContain('Dockhand: signed out');
      await shot('02-signed-out');

      // 3. A wrong token is refused in the box, which stays open; the right one signs in.
      await welcomeButton(page, 'Sign in');
      await workbench.answer('dh_not_a_real_token', 'Dockhand: Sign in');
      const refusal = page.locator('.quick-input-widget .quick-input-message', { hasText: 'does not know this token' });
      await refusal.waitFor({ timeout: 20_000 });
      expect(await page.locator('.notifications-toasts', { hasText: 'signed in' }).count()).toBe(0);
      await shot('03-wrong-token');
      await workbench.answer(server.token);
      expect(await workbench.notification(`signed in to ${server.url} as dev`)).toContain('as dev');
      await page.locator('.part.sidebar .welcome-view-content', { hasText: 'No tasks yet' }).waitFor({ timeout: 30_000 });
      await shot('04-signed-in');

      // 4. Send the forge's open issue.
      await welcomeButton(page, 'Send ticket to agent');
      await workbench.pick('#1 average() ignores the first value');
      await workbench.pick('Send with budgets');
      const panel = workbench.webview();
      await panel.locator('.task-title', { hasText: 'average() ignores the first value' }).waitFor({ timeout: 60_000 });
      await shot('05-working');

      // 5. Ready for review: a notification with its action, and a badge on the Dockhand container.
      await workbench.notification('is ready for your review', 90_000);
      await panel.locator('button.review-approve').waitFor({ timeout: 30_000 });
      const badge = page.locator('.activitybar .action-item:has(a[aria-label^="Dockhand"]) .badge-content');
      await badge.filter({ hasText: '1' }).waitFor({ timeout: 20_000 });
      expect(await page.locator('.statusbar').textContent()).toMatch(/Dockhand: awaiting review · \d+ turns · \$\d+\.\d\d/);
      // The review controls fit the default side bar: no widening, no scrolling.
      for (const selector of ['button.review-approve', 'button.review-changes', 'button.review-reject', '.action-input']) await expectInSideBar(page, panel, selector);
      await shot('06-review');

      // 6. Two line comments in the diff editor; the panel counts them.
      const change = page.locator('.pane-body .monaco-list-row', { hasText: FIXED_FILE.split('/').pop()! }).first();
      await change.click();
      await addLineComment(workbench, 'let index = 0;', 'Name the start index.');
      await addLineComment(workbench, 'let total = 0;', 'Keep the empty-list guard above this.');
      await panel.locator('button.review-changes', { hasText: 'Request changes (2)' }).waitFor({ timeout: 20_000 });
      expect(await panel.locator('.pending-comments summary').textContent()).toBe('2 line comments pending');
      await shot('07-line-comments');

      // 7. Text plus the two comments go out in one request.
      await panel.locator('.action-input').fill('Also add a test for a single value.');
      await panel.locator('button.review-changes').click();
      await workbench.notification('Sent 3 review comments', 30_000);
      const [task] = await server.tasks();
      const requested = (await server.events(task!.id)).filter((event) => event.type === 'review.requested_changes');
      expect(requested).toHaveLength(1);
      expect(requested[0]?.data).toEqual({
        by: 'dev',
        comments: [
          { path: FIXED_FILE, line: 15, body: 'Name the start index.' },
          { path: FIXED_FILE, line: 14, body: 'Keep the empty-list guard above this.' },
          { body: 'Also add a test for a single value.' },
        ],
      });
      await panel.locator('.pending-comments').waitFor({ state: 'hidden', timeout: 20_000 });
      await shot('08-changes-requested');

      // 8. The agent's second round comes back for review; approve it.
      const deadline = Date.now() + 90_000;
      while ((await server.events(task!.id)).filter((e) => e.type === 'task.state' && e.data.state === 'awaiting_review').length < 2) {
        if (Date.now() > deadline) throw new Error('the second round did not reach review');
        await page.waitForTimeout(250);
      }
      await panel.locator('button.review-approve:not([disabled])').waitFor({ timeout: 30_000 });
      await expectInSideBar(page, panel, 'button.review-approve');
      await panel.locator('button.review-approve').click();
      const opened = await workbench.notification('opened a pull request', 120_000);
      const pr = (await server.events(task!.id)).find((event) => event.type === 'pr.opened');
      expect(pr?.type === 'pr.opened' && opened.includes(pr.data.url)).toBe(true);
      await panel.locator('button.open-pr').waitFor({ timeout: 30_000 });
      await badge.waitFor({ state: 'hidden', timeout: 20_000 });
      await shot('09-pr-open');

      // 9. The local forge's PR has no web page: it opens as a PR view in the editor.
      await panel.locator('button.open-pr').click();
      await page.locator('.tabs-container .tab', { hasText: 'pull request' }).first().waitFor({ timeout: 45_000 });
      const preview = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('#active-frame');
      await preview.locator('h1', { hasText: 'average() ignores the first value' }).waitFor({ timeout: 45_000 });
      expect(await preview.locator('body').textContent()).toContain('Changed files (1)');
      await shot('10-pr-view');
    } catch (error) {
      await shot('failure').catch(() => undefined);
      throw new Error(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n--- Dockhand output channel ---\n${codeServer.extensionLog().slice(-4000)}\n--- code-server log ---\n${codeServer.log().slice(-1500)}`);
    } finally {
      await page.close();
    }
    // About a minute on a quiet machine; a loaded one (the shared 2 cores) needs far more.
  }, 600_000);
});
