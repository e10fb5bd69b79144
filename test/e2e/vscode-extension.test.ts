import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from '../vscode/code-server';
import { FIXED_FILE, startRealServer, type RealServer } from '../vscode/real-server';

/*
 * The packaged extension in the real VS Code workbench (code-server) in Chromium, against the real
 * Dockhand server (see test/vscode/real-server.ts for its two stand-in parts): sign in, send a
 * ticket from the command palette, watch the trajectory in the side panel, open the changed
 * file's diff, approve, and see the pull request link. Screenshots per step in test-artifacts/.
 */

let server: RealServer;
let codeServer: CodeServer;
let browser: Browser;
let repo: FixtureRepo;

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  server = await startRealServer(repo);
  const vsix = packageExtension();
  codeServer = await startCodeServer({ vsix, settings: { 'dockhand.serverUrl': server.url } });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await codeServer?.stop();
  await server?.close();
});

describe('Dockhand in VS Code (code-server)', () => {
  it('sends a ticket, shows the trajectory and the diff, approves and shows the PR link', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const workbench = new Workbench(page);
    try {
      await workbench.open(codeServer.url, repo.path);
      const activity = page.locator('.activitybar .action-item a[aria-label^="Dockhand"]');
      await activity.waitFor({ timeout: 60_000 });
      await workbench.screenshot('vscode-01-workbench');

      await workbench.runCommand('Dockhand: Sign in');
      await workbench.answer(server.token);
      await workbench.notification('signed in');

      await workbench.runCommand('Dockhand: Send ticket to agent');
      // The open issue comes from the server's forge.
      await workbench.pick('#1 average() ignores the first value');
      await workbench.screenshot('vscode-02-budgets');
      await workbench.pick('Send with budgets');

      // The side panel opens and follows the task live.
      const panel = workbench.webview();
      await panel.locator('.row-file').waitFor({ timeout: 30_000 });
      await panel.locator('.badge.state', { hasText: 'awaiting review' }).waitFor({ timeout: 30_000 });
      const [task] = (await server.fleet.store.listTasks({ owner: 'dev' })).tasks;
      expect(task).toMatchObject({
        ticket: { kind: 'issue', id: '1', title: 'average() ignores the first value', body: 'average([2, 4]) returns 2 instead of 3.' },
        context: { repo: server.forgeRepo, baseSha: repo.sha, branch: 'main', dirty: false },
      });
      const trajectory = await panel.locator('.trajectory').textContent();
      expect(trajectory).toContain('average() starts summing at index 1; reading calc.js.');
      expect(await panel.locator('.review .policy').textContent()).toContain('Policy checks passed');
      expect(await page.locator('.statusbar').textContent()).toContain('Dockhand: awaiting review · 2 turns · $0.02');
      await workbench.screenshot('vscode-03-trajectory');

      // The Changes view lists the file; clicking opens base ↔ agent in the diff editor.
      const change = page.locator('.pane-body .monaco-list-row', { hasText: FIXED_FILE.split('/').pop()! }).first();
      await change.waitFor({ timeout: 20_000 });
      await change.click();
      await page.locator('.monaco-diff-editor').waitFor({ timeout: 20_000 });
      await page.locator('.monaco-diff-editor .modified .view-lines', { hasText: 'let index = 0;' }).waitFor({ timeout: 20_000 });
      await page.locator('.monaco-diff-editor .original .view-lines', { hasText: 'let index = 1;' }).waitFor({ timeout: 20_000 });
      await workbench.screenshot('vscode-04-diff');

      // Approve from the panel; the server pushes once and the PR link arrives as a notification and in the panel.
      await panel.locator('button.review-approve').click();
      const message = await workbench.notification('opened a pull request', 60_000);
      const events = await server.fleet.store.listEvents(task!.id);
      const opened = events.find((event) => event.type === 'pr.opened');
      expect(opened?.type === 'pr.opened' && message).toContain(opened?.type === 'pr.opened' ? opened.data.url : 'no pr.opened event');
      await panel.locator('button.open-pr').waitFor();
      await workbench.screenshot('vscode-05-pr-open');

      // Hidden and shown again: the panel still shows the task.
      await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').click();
      await activity.click();
      await panel.locator('button.open-pr').waitFor({ timeout: 20_000 });

      // A window reload: the extension restarts, re-follows the selected task and replays its log.
      await page.reload();
      await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
      await activity.click();
      const reloaded = workbench.webview();
      await reloaded.locator('.badge.state', { hasText: 'pr open' }).waitFor({ timeout: 30_000 });
      await reloaded.locator('button.open-pr').waitFor({ timeout: 20_000 });
      expect(await reloaded.locator('.trajectory').textContent()).toContain('Pull request #1 opened');
      await workbench.screenshot('vscode-06-after-reload');
    } catch (error) {
      await workbench.screenshot('vscode-failure').catch(() => undefined);
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- code-server log ---\n${codeServer.log().slice(-4000)}`);
    } finally {
      await page.close();
    }
  });

  it('sends line comments on the agent version as "request changes"', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const workbench = new Workbench(page);
    try {
      await workbench.open(codeServer.url, repo.path);
      await page.locator('.activitybar .action-item a[aria-label^="Dockhand"]').waitFor({ timeout: 60_000 });
      await workbench.runCommand('Dockhand: Sign in');
      await workbench.answer(server.token);
      await workbench.notification('signed in');
      await workbench.runCommand('Dockhand: Send ticket to agent');
      await workbench.pick('Describe the task');
      await workbench.answer('Make average() count every value', 'describe the task (1/2)');
      await workbench.answer('', 'describe the task (2/2)');
      await workbench.pick('Send with budgets');
      const panel = workbench.webview();
      await panel.locator('.task-title', { hasText: 'Make average() count every value' }).waitFor({ timeout: 30_000 });
      await panel.locator('.badge.state', { hasText: 'awaiting review' }).waitFor({ timeout: 30_000 });
      const { tasks } = await server.fleet.store.listTasks({ owner: 'dev' });
      const task = tasks.find((t) => t.ticket.title === 'Make average() count every value')!;

      const change = page.locator('.pane-body .monaco-list-row', { hasText: FIXED_FILE.split('/').pop()! }).first();
      await change.click();
      const fixedLine = page.locator('.monaco-diff-editor .modified .view-line', { hasText: 'let index = 0;' });
      await fixedLine.waitFor({ timeout: 20_000 });
      await fixedLine.click();
      await workbench.runCommand('Comments: Add Comment on Current Selection');
      const form = page.locator('.review-widget .comment-form').first();
      await form.waitFor({ timeout: 20_000 });
      await page.keyboard.type('Also skip NaN values');
      await page.getByRole('button', { name: 'Add review comment' }).click();
      await page.locator('.review-widget .review-comment-contents', { hasText: 'Also skip NaN values' }).waitFor({ timeout: 20_000 });
      await workbench.screenshot('vscode-07-review-comment');

      await workbench.runCommand('Dockhand: Request changes');
      await workbench.notification('Sent 1 review comment', 30_000);
      const events = await server.fleet.store.listEvents(task.id);
      const requested = events.find((event) => event.type === 'review.requested_changes');
      expect(requested?.data).toEqual({ by: 'dev', comments: [{ path: FIXED_FILE, line: 15, body: 'Also skip NaN values' }] });
      await panel.locator('.trajectory', { hasText: 'dev requested changes: src/calc.js:15 Also skip NaN values' }).waitFor({ timeout: 20_000 });
      await workbench.screenshot('vscode-08-changes-requested');
    } catch (error) {
      await workbench.screenshot('vscode-failure-comments').catch(() => undefined);
      throw error;
    } finally {
      await page.close();
    }
  });
});
