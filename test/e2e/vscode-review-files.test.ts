import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from '../vscode/code-server';
import { FIXED_FILE } from '../vscode/fixture';
import { NOTES_FILE, startRealServer, type RealServer } from '../vscode/real-server';

/*
 * Issue 34 at 1280×720 in VS Code against the real fleet server (local forge, PR follower):
 * 1. a pasted issue URL is taken only when it names this window's repository on its forge, the
 *    local forge's dockhand-local://…/issues/N included, when the folder's origin is a path;
 * 2. the review's file list is the server's diff under review: a file the agent changed and then
 *    restored is neither listed nor counted; a file left out of the PR is shown left out after the
 *    PR opens and in a PR follow-up round (not "modified" and checked), and approving that round
 *    works (the payload names no file outside the diff).
 * The second test reviews the task the first one sends. Screenshots: test-artifacts/review-files-*.png.
 */

/** Changed, then restored by the agent in round 1: in the trajectory's events, not in the diff. */
const RESTORED_FILE = 'src/format.js';

let server: RealServer;
let codeServer: CodeServer;
let browser: Browser;
let repo: FixtureRepo;
let page: Page;
let workbench: Workbench;

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  server = await startRealServer(repo, { stepDelayMs: 50, restoredFile: RESTORED_FILE });
  codeServer = await startCodeServer({ vsix: packageExtension(), settings: { 'dockhand.serverUrl': server.url } });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  workbench = new Workbench(page);
});

afterAll(async () => {
  await page?.close();
  await browser?.close();
  await codeServer?.stop();
  await server?.close();
});

/** Runs `body`; on failure keeps a screenshot and adds the extension's and code-server's logs. */
async function explained(step: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    await workbench.screenshot(`review-files-${step}-failure`).catch(() => undefined);
    throw new Error(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n--- Dockhand output channel ---\n${codeServer.extensionLog().slice(-3000)}\n--- code-server log ---\n${codeServer.log().slice(-1500)}`);
  }
}

function changesRow(path: string) {
  return page.locator('.pane-body .monaco-list-row', { hasText: path }).first();
}

async function taskState(taskId: string): Promise<string | undefined> {
  return (await server.tasks()).find((task) => task.id === taskId)?.state;
}

describe('issue 34 in VS Code at 1280×720', () => {
  it("takes a pasted issue URL only of this window's repository on its forge (dockhand-local:// included)", async () => {
    await explained('issue-url', async () => {
      await workbench.open(codeServer.url, repo.path);
      await workbench.showDockhand();
      await workbench.runCommand('Dockhand: Sign in');
      await workbench.answer(server.token);
      await workbench.notification('signed in to');
      await workbench.runCommand('Dockhand: Send ticket to agent');
      await workbench.pick('Paste an issue URL');
      await page.locator('.quick-input-widget .quick-input-title', { hasText: 'issue URL' }).waitFor({ timeout: 20_000 });
      const input = page.locator('.quick-input-widget input');
      const message = page.locator('.quick-input-widget .quick-input-message');
      // Another repository's issue #1: refused in the box, naming both (it was taken as this repository's #1).
      await input.fill('https://github.com/other/thing/issues/1');
      await message.filter({ hasText: 'That is an issue of github.com/other/thing, not of buggy-calc (dockhand-local://buggy-calc)' }).waitFor({ timeout: 10_000 });
      await workbench.screenshot('review-files-01-issue-url-refused');
      // The local forge's own URL of issue #1: taken (it was refused as not ending in /issues/<number>).
      await input.fill('dockhand-local://buggy-calc/issues/1');
      await message.filter({ hasText: /not of|ending in/ }).waitFor({ state: 'detached', timeout: 10_000 }).catch(() => undefined);
      expect(await message.textContent()).not.toMatch(/not of|ending in/);
      await page.keyboard.press('Enter');
      await workbench.pick('Send with budgets');
      await workbench.webview().locator('.task-title', { hasText: 'average() ignores the first value' }).waitFor({ timeout: 60_000 });
      const [task] = await server.tasks();
      expect(task?.ticket).toMatchObject({ kind: 'issue', id: '1', url: 'dockhand-local://buggy-calc/issues/1' });
    });
  }, 300_000);

  it("lists the server's diff under review: no restored file, a left-out file stays left out after the PR and in a PR round", async () => {
    await explained('changes', async () => {
      const panel = workbench.webview();
      const [task] = await server.tasks();
      if (!task) throw new Error('the first test sent no task');
      await panel.locator('button.review-approve').waitFor({ timeout: 120_000 });
      await changesRow(NOTES_FILE).waitFor({ timeout: 30_000 });
      // The agent changed and restored src/format.js: the events name it, the diff does not.
      const events = await server.events(task.id);
      expect(events.filter((event) => event.type === 'file.changed' && event.data.path === RESTORED_FILE)).toHaveLength(2);
      await panel.locator('.verdict-details summary', { hasText: '2 files changed' }).waitFor({ timeout: 20_000 });
      expect(await changesRow(RESTORED_FILE).count()).toBe(0);
      await workbench.screenshot('review-files-02-round-1');

      // Leave the note out of the push, and approve: the PR has src/calc.js only.
      await changesRow(NOTES_FILE).locator('.custom-view-tree-node-item-checkbox').click();
      await panel.locator('button.review-approve', { hasText: 'Approve and push 1 of 2 files' }).waitFor({ timeout: 20_000 });
      await panel.locator('button.review-approve').click();
      await workbench.notification('opened a pull request', 120_000);
      await panel.locator('button.open-pr').waitFor({ timeout: 30_000 });
      // After the PR opened: still listed as left out (it was "modified" without "left out").
      await changesRow(NOTES_FILE).filter({ hasText: 'left out' }).waitFor({ timeout: 20_000 });

      // A reviewer's comment on the PR starts a follow-up round; the agent changes src/calc.js again.
      const opened = (await server.tasks()).find((entry) => entry.id === task.id);
      const number = Number(/\/pulls?\/(\d+)$/.exec(opened?.prUrl ?? '')?.[1]);
      expect(number, `PR link ${opened?.prUrl}`).toBeGreaterThan(0);
      const comment = await fetch(`${server.url}/v1/repos/buggy-calc/pulls/${number}/comments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ body: 'Say why the loop starts at 0.' }),
      });
      expect(comment.status, await comment.clone().text()).toBe(201);
      await panel.locator('.badge.state', { hasText: 'running' }).waitFor({ timeout: 60_000 });
      await panel.locator('button.review-approve:not([disabled])').waitFor({ timeout: 120_000 });

      // The PR round: the note is not in the round's diff (nor the PR): left out, no checkbox, not counted.
      const notes = changesRow(NOTES_FILE);
      await notes.filter({ hasText: 'left out' }).waitFor({ timeout: 20_000 });
      expect(await notes.textContent()).not.toContain('modified');
      expect(await notes.locator('.custom-view-tree-node-item-checkbox').count()).toBe(0);
      expect(await changesRow(FIXED_FILE).locator('.custom-view-tree-node-item-checkbox').getAttribute('aria-checked')).toBe('true');
      await panel.locator('.verdict-details summary', { hasText: '1 file changed · 1 left out' }).waitFor({ timeout: 20_000 });
      expect(await panel.locator('button.review-approve').textContent()).toBe('Approve and push');
      await panel.locator('.verdict-details summary').click();
      await panel.locator('.changed-files li.earlier', { hasText: `${NOTES_FILE} (left out)` }).waitFor({ timeout: 10_000 });
      await workbench.screenshot('review-files-03-pr-round-left-out');

      // Approving the round works: no raw "rejectedFiles.0 … is not a file of the diff" banner.
      await panel.locator('button.review-approve').click();
      const deadline = Date.now() + 120_000;
      while ((await taskState(task.id)) !== 'pr_open' || !(await server.events(task.id)).some((event) => event.type === 'pr.pushed')) {
        if (Date.now() > deadline) throw new Error(`the PR round was not pushed (task ${await taskState(task.id)})`);
        await page.waitForTimeout(300);
      }
      expect(await panel.locator('.banner.tone-error').count()).toBe(0);
      await notes.filter({ hasText: 'left out' }).waitFor({ timeout: 20_000 });
    });
  }, 420_000);
});
