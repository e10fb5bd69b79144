import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { freePort } from '../support/local-server';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from '../vscode/code-server';
import { FIXED_FILE } from '../vscode/fixture';
import { NOTES_FILE, ROUND_2_LINE, startRealServer, type RealServer } from '../vscode/real-server';
import { expectInSideBar } from '../vscode/side-bar';

/*
 * A developer's first hour with the extension in the real workbench (code-server) at 1440×900
 * with the default layout, against the real fleet server: the extension starts pointed at a URL
 * where nothing answers, is pointed at a web server that is not Dockhand (refused at once, naming
 * it), then at the server from the welcome view, refuses a wrong token
 * in the sign-in box, signs in; sends a ticket, is told when the task waits for review (a
 * notification and a badge), reviews with two line comments plus text sent in one request; the
 * second round's own changes and all of them open in the multi-file diff editor; one of the two
 * files is left out in the Changes view, and the approval pushes the other only. Screenshots of
 * every step in test-artifacts/first-run-*.png.
 */

let server: RealServer;
let codeServer: CodeServer;
let browser: Browser;
let repo: FixtureRepo;
let wrongUrl: string;
/** A web server that answers every path with a page, as a mistyped URL's other service would. */
let notDockhand: { url: string; close(): void };

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  server = await startRealServer(repo, { stepDelayMs: 150 });
  wrongUrl = `http://127.0.0.1:${await freePort()}`;
  const page = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>It works!</body></html>'));
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  const address = page.address();
  notDockhand = { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, close: () => page.close() };
  codeServer = await startCodeServer({ vsix: packageExtension(), settings: { 'dockhand.serverUrl': wrongUrl } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await codeServer?.stop();
  await server?.close();
  notDockhand?.close();
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

/** The multi-file diff editor's entries: each file's name as its header shows it (the folder is shown apart). */
async function multiDiffFiles(page: Page): Promise<string[]> {
  const entries = page.locator('.multiDiffEditor .multiDiffEntry .header .file-path .title:not(.original) .label-name');
  await entries.first().waitFor({ timeout: 45_000 });
  return (await entries.allTextContents()).map((text) => text.trim());
}

describe('first run to an approved pull request in VS Code (1440×900)', () => {
  it('connects, signs in past a wrong token, sends, is told of the review, reviews with line comments and text, sees the round\'s changes, leaves a file out, approves', async () => {
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

      // 1b. A web server that is not Dockhand at the URL: said at once, naming the URL; not taken as a server.
      await welcomeButton(page, 'Set server URL');
      await workbench.answer(notDockhand.url, 'Dockhand: Set server URL');
      expect(await workbench.notification('is not a Dockhand server')).toContain(notDockhand.url);
      expect(await page.locator('.statusbar').textContent()).toContain('Dockhand: no server');
      expect(await page.locator('.part.sidebar .pane-header').first().textContent()).toContain(`no Dockhand server at ${notDockhand.url}`);
      await shot('01b-not-dockhand');

      await welcomeButton(page, 'Set server URL');
      await workbench.answer(server.url, 'Dockhand: Set server URL');
      expect(await workbench.notification('connected to Dockhand')).toContain(server.url);

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
      for (const selector of ['button.review-approve', 'button.review-changes', 'button.review-reject']) await expectInSideBar(page, panel, selector);
      // The text box waits until there is something to say (line comments, below, open it).
      expect(await panel.locator('.action-input').isHidden()).toBe(true);
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
      await expectInSideBar(page, panel, '.action-input');
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
        reviewedDiff: expect.stringContaining(NOTES_FILE),
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
      // The second round follows in the same trajectory, under its heading.
      await panel.locator('.trajectory', { hasText: 'Round 2: dev requested changes' }).waitFor({ timeout: 30_000 });
      expect(await panel.locator('.trajectory').textContent()).toMatch(/Round 2: dev requested changes[\s\S]*Saying why the loop starts at 0/);

      // 9. This round's changes alone in the multi-file diff editor: the one line round 2 changed.
      await panel.locator('.verdict-details summary').click();
      await panel.locator('button.open-round-changes').click();
      await page.locator('.tabs-container .tab', { hasText: 'round 2 changes' }).first().waitFor({ timeout: 45_000 });
      expect(await multiDiffFiles(page)).toEqual(['calc.js']);
      await page.locator('.multiDiffEditor .modified .view-lines', { hasText: 'the first value counts too' }).first().waitFor({ timeout: 45_000 });
      // The left side is the file as changes were requested on it (round 1's fix, without round 2's comment).
      await page.locator('.multiDiffEditor .original .view-lines', { hasText: 'let index = 0;' }).first().waitFor({ timeout: 45_000 });
      expect(await page.locator('.multiDiffEditor .original .view-lines', { hasText: 'the first value counts too' }).count()).toBe(0);
      await shot('09-round-changes');
      // And all of them against the base: both files.
      await panel.locator('button.open-all-changes').click();
      await page.locator('.tabs-container .tab', { hasText: 'all changes' }).first().waitFor({ timeout: 45_000 });
      await page.locator('.multiDiffEditor .multiDiffEntry', { hasText: NOTES_FILE }).first().waitFor({ timeout: 45_000 });
      expect((await multiDiffFiles(page)).sort()).toEqual([NOTES_FILE, 'calc.js'].sort());
      await shot('10-all-changes');

      // 10. Accept per file: the note is left out in the Changes view; the panel counts what goes out.
      const notesRow = page.locator('.pane-body .monaco-list-row', { hasText: NOTES_FILE }).first();
      await notesRow.locator('.custom-view-tree-node-item-checkbox').click();
      await panel.locator('button.review-approve', { hasText: 'Approve and push 1 of 2 files' }).waitFor({ timeout: 20_000 });
      await notesRow.filter({ hasText: 'left out' }).waitFor({ timeout: 20_000 });
      await expectInSideBar(page, panel, 'button.review-approve');
      await shot('11-file-left-out');

      await panel.locator('button.review-approve').click();
      const opened = await workbench.notification('opened a pull request', 120_000);
      const events = await server.events(task!.id);
      const pr = events.find((event) => event.type === 'pr.opened');
      expect(pr?.type === 'pr.opened' && opened.includes(pr.data.url)).toBe(true);
      expect(events.find((event) => event.type === 'review.files_rejected')?.data).toEqual({ by: 'dev', rejected: [NOTES_FILE], accepted: [FIXED_FILE] });
      // The pushed branch has the accepted file only, with both rounds' changes in it.
      const branch = pr?.type === 'pr.opened' ? pr.data.branch : '';
      expect(execFileSync('git', ['diff', '--name-only', `${repo.sha}..${branch}`], { cwd: server.forgeRepo, encoding: 'utf8' }).trim()).toBe(FIXED_FILE);
      expect(execFileSync('git', ['show', `${branch}:${FIXED_FILE}`], { cwd: server.forgeRepo, encoding: 'utf8' })).toContain(ROUND_2_LINE);
      await panel.locator('button.open-pr').waitFor({ timeout: 30_000 });
      await badge.waitFor({ state: 'hidden', timeout: 20_000 });
      await shot('12-pr-open');

      // 11. The local forge's PR has no web page: it opens as a PR view in the editor; its description says what was left out.
      await panel.locator('button.open-pr').click();
      await page.locator('.tabs-container .tab', { hasText: 'PR #1: average() ignores the first value' }).first().waitFor({ timeout: 45_000 });
      const preview = page.frameLocator('iframe.webview.ready >> nth=-1').frameLocator('#active-frame');
      await preview.locator('h1', { hasText: 'PR #1: average() ignores the first value' }).waitFor({ timeout: 45_000 });
      expect(await preview.locator('body').textContent()).toContain('Changed files (1)');
      expect(await preview.locator('body').textContent()).toContain('Left out in review');
      await shot('13-pr-view');
    } catch (error) {
      await shot('failure').catch(() => undefined);
      throw new Error(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n--- Dockhand output channel ---\n${codeServer.extensionLog().slice(-4000)}\n--- code-server log ---\n${codeServer.log().slice(-1500)}`);
    } finally {
      await page.close();
    }
    // About a minute on a quiet machine; a loaded one (the shared 2 cores) needs far more.
  }, 600_000);
});
