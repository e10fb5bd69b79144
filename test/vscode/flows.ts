import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task, TaskEvent } from '@dockhand/protocol';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from './code-server';
import { FIXED_FILE } from './fixture';

/*
 * What a developer does with the extension in the real VS Code workbench (code-server) in
 * Chromium, written once and run against a given Dockhand server: sign in, send a ticket from the
 * command palette, watch the trajectory in the side panel, open the changed file's diff, approve,
 * see the pull request link, survive hide/show and a window reload; and send line comments from
 * the diff as "request changes". Screenshots per step in test-artifacts/<prefix>-*.png.
 */

export interface ServerUnderTest {
  url: string;
  token: string;
  /** The forge's bare repository the workspace clone now has as `origin`. */
  forgeRepo: string;
  tasks(): Promise<Task[]>;
  events(taskId: string): Promise<TaskEvent[]>;
  log(): string;
  close(): Promise<void>;
}

export interface FlowOptions {
  /** Screenshot name prefix. */
  prefix: string;
  start(repo: FixtureRepo): Promise<ServerUnderTest>;
  /** What the agent's first assistant text contains. */
  agentSays: string;
  /** How long the agent may take to reach review. */
  workMs: number;
  comments: boolean;
}

/** Waits for the panel's state badge; fails at once, with the panel's words, if the task ends badly. */
async function waitForState(workbench: Workbench, state: string, timeoutMs: number): Promise<void> {
  const panel = workbench.webview();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const shown = await panel.locator('.badge.state').textContent({ timeout: 5_000 }).catch(() => '');
    if (shown === state) return;
    if (shown && ['failed', 'cancelled', 'budget exhausted'].includes(shown)) {
      const why = await panel.locator('.banner').textContent().catch(() => '');
      throw new Error(`the task ended ${shown} instead of reaching ${state}: ${why}`);
    }
    if (Date.now() > deadline) throw new Error(`the panel did not reach ${state} within ${timeoutMs} ms (shows ${shown})`);
    await workbench.page.waitForTimeout(250);
  }
}

export function describeVsCodeFlows(name: string, options: FlowOptions): void {
  let server: ServerUnderTest;
  let codeServer: CodeServer;
  let browser: Browser;
  let repo: FixtureRepo;
  const shot = (workbench: Workbench, step: string) => workbench.screenshot(`${options.prefix}-${step}`);

  beforeAll(async () => {
    repo = createFixtureRepo('buggy-calc');
    server = await options.start(repo);
    const vsix = packageExtension();
    codeServer = await startCodeServer({ vsix, settings: { 'dockhand.serverUrl': server.url } });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await codeServer?.stop();
    await server?.close();
  });

  const failure = (error: unknown) =>
    new Error(`${error instanceof Error ? error.message : String(error)}\n--- Dockhand output channel ---\n${codeServer.extensionLog().slice(-3000)}\n--- code-server log ---\n${codeServer.log().slice(-2000)}\n--- server log ---\n${server.log().slice(-4000)}`);

  describe(name, () => {
    it('sends a ticket, shows the trajectory and the diff, approves and shows the PR link', async () => {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      const workbench = new Workbench(page);
      try {
        await workbench.open(codeServer.url, repo.path);
        const activity = page.locator('.activitybar .action-item a[aria-label^="Dockhand"]');
        await activity.waitFor({ timeout: 60_000 });
        await shot(workbench, '01-workbench');

        await workbench.runCommand('Dockhand: Sign in');
        await workbench.answer(server.token);
        await workbench.notification('signed in to');

        await workbench.runCommand('Dockhand: Send ticket to agent');
        // The open issue comes from the server's forge.
        await workbench.pick('#1 average() ignores the first value');
        await shot(workbench, '02-budgets');
        await workbench.pick('Send with budgets');

        // The side panel opens and follows the task live.
        const panel = workbench.webview();
        await waitForState(workbench, 'awaiting review', options.workMs);
        await panel.locator('.row-file').first().waitFor({ timeout: 10_000 });
        const [task] = await server.tasks();
        expect(task).toMatchObject({
          ticket: { kind: 'issue', id: '1', title: 'average() ignores the first value', body: 'average([2, 4]) returns 2 instead of 3.' },
          // The task names the registered repository the clone's origin is the source of.
          context: { repo: 'buggy-calc', baseSha: repo.sha, branch: 'main', dirty: false },
        });
        const trajectory = await panel.locator('.trajectory').textContent();
        expect(trajectory).toContain(options.agentSays);
        expect(trajectory).toContain('Sandbox ready in');
        expect(await panel.locator('.review .policy').textContent()).toContain('Policy checks passed');
        expect(await page.locator('.statusbar').textContent()).toMatch(/Dockhand: awaiting review · \d+ turns · \$\d+\.\d\d/);
        await shot(workbench, '03-trajectory');

        // The Changes view lists the file; clicking opens base ↔ agent in the diff editor.
        const change = page.locator('.pane-body .monaco-list-row', { hasText: FIXED_FILE.split('/').pop()! }).first();
        await change.waitFor({ timeout: 45_000 });
        await change.click();
        await page.locator('.monaco-diff-editor').waitFor({ timeout: 45_000 });
        await page.locator('.monaco-diff-editor .modified .view-lines', { hasText: 'let index = 0;' }).waitFor({ timeout: 45_000 });
        await page.locator('.monaco-diff-editor .original .view-lines', { hasText: 'let index = 1;' }).waitFor({ timeout: 45_000 });
        await shot(workbench, '04-diff');

        // Approve from the panel; the server pushes once and the PR link arrives as a notification and in the panel.
        await panel.locator('button.review-approve').click();
        const message = await workbench.notification('opened a pull request', 120_000);
        const events = await server.events(task!.id);
        const opened = events.find((event) => event.type === 'pr.opened');
        expect(opened?.type === 'pr.opened' && message).toContain(opened?.type === 'pr.opened' ? opened.data.url : 'no pr.opened event');
        await panel.locator('button.open-pr').waitFor();
        await shot(workbench, '05-pr-open');

        // Hidden and shown again: the panel still shows the task.
        await page.locator('.activitybar .action-item a[aria-label^="Explorer"]').click();
        await workbench.showDockhand();
        await panel.locator('button.open-pr').waitFor({ timeout: 45_000 });

        // A window reload: the extension restarts, re-follows the selected task and replays its log.
        await page.reload();
        await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
        await workbench.showDockhand();
        const reloaded = workbench.webview();
        await reloaded.locator('.badge.state', { hasText: 'pr open' }).waitFor({ timeout: 30_000 });
        await reloaded.locator('button.open-pr').waitFor({ timeout: 45_000 });
        // The state badge can show before the replayed trajectory is drawn (seen under load): wait for it.
        await reloaded.locator('.trajectory', { hasText: 'Pull request #1 opened' }).waitFor({ timeout: 30_000 });
        await shot(workbench, '06-after-reload');
      } catch (error) {
        await shot(workbench, 'failure').catch(() => undefined);
        throw failure(error);
      } finally {
        await page.close();
      }
    });

    if (options.comments) it('sends line comments on the agent version as "request changes"', async () => {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      const workbench = new Workbench(page);
      try {
        await workbench.open(codeServer.url, repo.path);
        await page.locator('.activitybar .action-item a[aria-label^="Dockhand"]').waitFor({ timeout: 60_000 });
        await workbench.signInAndSend(server.token, 'Make average() count every value');
        const panel = workbench.webview();
        await waitForState(workbench, 'awaiting review', options.workMs);
        const tasks = await server.tasks();
        const task = tasks.find((t) => t.ticket.title === 'Make average() count every value')!;

        const change = page.locator('.pane-body .monaco-list-row', { hasText: FIXED_FILE.split('/').pop()! }).first();
        await change.click();
        const fixedLine = page.locator('.monaco-diff-editor .modified .view-line', { hasText: 'let index = 0;' });
        await fixedLine.waitFor({ timeout: 45_000 });
        await fixedLine.click();
        await workbench.runCommand('Comments: Add Comment on Current Selection');
        const form = page.locator('.review-widget .comment-form').first();
        await form.waitFor({ timeout: 45_000 });
        await page.keyboard.type('Also skip NaN values');
        await page.getByRole('button', { name: 'Add review comment' }).click();
        await page.locator('.review-widget .review-comment-contents', { hasText: 'Also skip NaN values' }).waitFor({ timeout: 45_000 });
        await shot(workbench, '07-review-comment');

        await workbench.runCommand('Dockhand: Request changes');
        // The pending comment goes with it; the box may stay empty.
        await workbench.answer('', 'Dockhand: Request changes');
        await workbench.notification('Sent 1 review comment', 30_000);
        const events = await server.events(task.id);
        const requested = events.find((event) => event.type === 'review.requested_changes');
        // With the diff it was made on, so the next round's own changes can be shown.
        expect(requested?.data).toEqual({ by: 'dev', comments: [{ path: FIXED_FILE, line: 15, body: 'Also skip NaN values' }], reviewedDiff: expect.stringContaining('+  for (let index = 0;') });
        await panel.locator('.trajectory', { hasText: 'dev requested changes: src/calc.js:15 Also skip NaN values' }).waitFor({ timeout: 45_000 });
        await shot(workbench, '08-changes-requested');
      } catch (error) {
        await shot(workbench, 'failure-comments').catch(() => undefined);
        throw failure(error);
      } finally {
        await page.close();
      }
    });
  });
}
