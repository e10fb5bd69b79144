import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from '../vscode/code-server';
import { startFakeServer, type FakeServer } from '../vscode/fake-server';

/*
 * The packaged extension in the real VS Code workbench (code-server) in Chromium: sign in, send a
 * ticket from the command palette, watch the trajectory in the side panel, open the changed
 * file's diff, approve, and see the pull request link. Screenshots per step in test-artifacts/.
 */

let server: FakeServer;
let codeServer: CodeServer;
let browser: Browser;
let repo: FixtureRepo;

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  server = await startFakeServer({ stepMs: 120 });
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
      await workbench.pick('paginate() skips the first item');
      await workbench.screenshot('vscode-02-budgets');
      await workbench.pick('Send with budgets');

      // The side panel opens and follows the task live.
      const panel = workbench.webview();
      await panel.locator('.row-file').waitFor({ timeout: 30_000 });
      await panel.locator('.badge.state', { hasText: 'awaiting review' }).waitFor({ timeout: 30_000 });
      const created = server.requests.find((r) => r.method === 'POST' && r.path === '/v1/tasks');
      expect(created?.body).toMatchObject({
        ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item of every page' },
        context: { repo: repo.path, baseSha: repo.sha, branch: 'main', dirty: false },
      });
      expect(await panel.locator('.trajectory').textContent()).toContain('Reading paginate() to find the off-by-one.');
      expect(await page.locator('.statusbar').textContent()).toContain('Dockhand: awaiting review · 2 turns · $0.04');
      await workbench.screenshot('vscode-03-trajectory');

      // The Changes view lists the file; clicking opens base ↔ agent in the diff editor.
      const change = page.locator('.pane-body .monaco-list-row', { hasText: 'paginate.js' }).first();
      await change.waitFor({ timeout: 20_000 });
      await change.click();
      const diff = page.locator('.monaco-diff-editor');
      await diff.waitFor({ timeout: 20_000 });
      await page.locator('.monaco-diff-editor .modified .view-lines', { hasText: '(page - 1) * size' }).waitFor({ timeout: 20_000 });
      await page.locator('.monaco-diff-editor .original .view-lines', { hasText: 'page * size + 1' }).waitFor({ timeout: 20_000 });
      await workbench.screenshot('vscode-04-diff');

      // Approve from the panel; the PR link arrives as a notification and in the panel.
      await panel.locator('button.review-approve').click();
      const message = await workbench.notification('opened a pull request', 30_000);
      expect(message).toContain('https://forge.example/acme/app/pull/7');
      await panel.locator('button.open-pr', { hasText: 'https://forge.example/acme/app/pull/7' }).waitFor();
      expect(server.requests.some((r) => r.method === 'POST' && r.path.endsWith('/review') && JSON.stringify(r.body).includes('"approve"'))).toBe(true);
      await workbench.screenshot('vscode-05-pr-open');
    } catch (error) {
      await workbench.screenshot('vscode-failure').catch(() => undefined);
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- code-server log ---\n${codeServer.log().slice(-4000)}`);
    } finally {
      await page.close();
    }
  });
});
