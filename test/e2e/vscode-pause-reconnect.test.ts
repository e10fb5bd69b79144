import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskEvent } from '@dockhand/protocol';
import { applyEvents, createTrajectory } from '../../webview-ui/src/trajectory';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { launchChromium, packageExtension, startCodeServer, Workbench, type CodeServer } from '../vscode/code-server';
import { PAUSE_MESSAGE, PAUSE_SESSION, startFullServer, type FullServer } from '../vscode/full-server';
import { expectInSideBar } from '../vscode/side-bar';

/*
 * Pause and resume, and the server lost and back, in the real workbench (code-server) at
 * 1440×900 with the default layout, against `dockhand serve` as it ships (the real agent loop on
 * the replay model, a gVisor sandbox, SQLite): the developer pauses while the agent's first tool
 * call runs (it finishes, no model call follows), the server is stopped and started again while
 * the task is paused (the panel and the status bar say so, then reconnect; the task is still
 * paused), a message is written and sent with Resume, and the agent goes on from that message to
 * review. The panel ends with exactly the server's log: no event lost or shown twice.
 * Screenshots of every step in test-artifacts/pause-*.png.
 */

let server: FullServer;
let codeServer: CodeServer;
let browser: Browser;
let repo: FixtureRepo;

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  server = await startFullServer(repo, { session: PAUSE_SESSION });
  codeServer = await startCodeServer({ vsix: packageExtension(), settings: { 'dockhand.serverUrl': server.url } });
  browser = await launchChromium();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await codeServer?.stop();
  await server?.close();
});

const states = (events: TaskEvent[]) => events.flatMap((e) => (e.type === 'task.state' ? [e.data.state] : []));

describe('pause, resume and a lost server in VS Code (1440×900, dockhand serve)', () => {
  it('pauses after the running tool call, survives the server going away and coming back, resumes with a message', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    const workbench = new Workbench(page);
    const shot = (step: string) => workbench.screenshot(`pause-${step}`);
    const statusBar = () => page.locator('.statusbar').textContent();
    try {
      await workbench.open(codeServer.url, repo.path);
      await workbench.showDockhand();
      await workbench.signInAndSend(server.token, 'Make average() count every value');
      const panel = workbench.webview();

      // 1. The agent's first step is a slow command; Pause while it runs.
      await panel.locator('.trajectory', { hasText: 'Timing the test suite before changing anything.' }).waitFor({ timeout: 300_000 });
      await panel.locator('button.action-pause').click();
      await panel.getByText('Pausing after the current step…').waitFor({ timeout: 20_000 });
      expect(await statusBar()).toContain('Dockhand: pausing…');
      await shot('01-pausing');

      // 2. The command finishes, then the agent stops: paused, with Resume and Cancel in view.
      await panel.locator('.badge.state', { hasText: 'paused' }).waitFor({ timeout: 60_000 });
      await panel.getByText('Paused: the agent waits for you').waitFor();
      expect(await statusBar()).toMatch(/Dockhand: paused · 1 turn · \$\d+\.\d\d/);
      for (const selector of ['button.action-resume', 'button.action-cancel', '.action-input']) await expectInSideBar(page, panel, selector);
      const [task] = await server.tasks();
      const atPause = await server.events(task!.id);
      const types = atPause.map((e) => e.type);
      const finished = atPause.find((e) => e.type === 'tool.finished');
      expect(finished?.type === 'tool.finished' && finished.data.output).toContain('suite timed');
      expect(types.indexOf('task.pause_requested')).toBeLessThan(types.indexOf('tool.finished'));
      // The tool call in flight finished and no model call followed it.
      expect(atPause.filter((e) => e.type === 'model.turn')).toHaveLength(1);
      expect(atPause.at(-1)).toMatchObject({ type: 'task.state', data: { state: 'paused' } });
      await shot('02-paused');

      // 3. The server goes away: the panel and the status bar say so.
      await server.stop();
      await panel.locator('.badge.connection', { hasText: /reconnecting|offline/ }).waitFor({ timeout: 60_000 });
      await page.locator('.statusbar', { hasText: 'Dockhand: disconnected' }).waitFor({ timeout: 60_000 });
      await shot('03-server-lost');

      // 4. It comes back: the panel reconnects by itself and the task is still paused.
      await server.start();
      await panel.locator('.badge.connection', { hasText: 'live' }).waitFor({ timeout: 90_000 });
      await page.locator('.statusbar', { hasText: 'Dockhand: paused' }).waitFor({ timeout: 60_000 });
      expect((await server.tasks())[0]?.state).toBe('paused');
      await shot('04-server-back');

      // 5. A message for the paused agent, sent with Resume: the agent reads it first and goes on to review.
      await panel.locator('.action-input').fill(PAUSE_MESSAGE);
      await panel.locator('button.action-resume', { hasText: 'Send and resume' }).click();
      await panel.locator('.badge.state', { hasText: 'awaiting review' }).waitFor({ timeout: 300_000 });
      await panel.locator('button.review-approve').waitFor({ timeout: 30_000 });
      const events = await server.events(task!.id);
      expect(states(events).slice(0, 5)).toEqual(['queued', 'provisioning', 'running', 'paused', 'running']);
      expect(states(events).at(-1)).toBe('awaiting_review');
      const message = events.findIndex((e) => e.type === 'user.message' && e.data.text === PAUSE_MESSAGE);
      const resumed = events.findIndex((e) => e.type === 'task.resumed');
      expect(message).toBeGreaterThan(-1);
      expect(message).toBeLessThan(resumed);
      expect(await panel.locator('.trajectory').textContent()).toContain('Starting the loop at zero as asked.');

      // 6. Nothing lost or doubled across the outage: the panel holds the rows of exactly the server's log.
      const expected = createTrajectory(task!.id);
      applyEvents(expected, events);
      const setSize = await panel.locator('.trajectory [aria-setsize]').first().getAttribute('aria-setsize');
      expect(Number(setSize)).toBe(expected.rows.length);
      expect(await statusBar()).toContain(`Dockhand: awaiting review · ${expected.summary.turnsUsed} turns`);
      await shot('05-resumed-to-review');
    } catch (error) {
      await shot('failure').catch(() => undefined);
      throw new Error(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n--- Dockhand output channel ---\n${codeServer.extensionLog().slice(-4000)}\n--- server log ---\n${server.log().slice(-4000)}`);
    } finally {
      await page.close();
    }
  }, 600_000);
});
