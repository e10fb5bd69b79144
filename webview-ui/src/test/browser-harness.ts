import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { TaskEvent } from '@dockhand/protocol';
import type { FromWebview, ReviewFile, ToWebview } from '../messages';
import { TASK_ID, sampleTask } from './recorded-stream';

/*
 * Runs the built side panel in headless Chromium the way VS Code hosts it: the same CSP (nonce'd
 * scripts only, styles from the webview origin), a stand-in for `acquireVsCodeApi` whose state
 * survives a reload like VS Code's, and the theme's CSS variables.
 */

const here = dirname(fileURLToPath(import.meta.url));
const webviewRoot = resolve(here, '../..');
export const ARTIFACTS = resolve(webviewRoot, '../test-artifacts');
const ORIGIN = 'http://webview.test';
const NONCE = 'harnessNonce0123456789';

const HTML = `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${ORIGIN}; img-src ${ORIGIN} data:; font-src ${ORIGIN}; script-src 'nonce-${NONCE}'">
<link rel="stylesheet" href="${ORIGIN}/theme.css"><link rel="stylesheet" href="${ORIGIN}/webview.css"><title>Dockhand</title></head>
<body class="vscode-THEME"><script nonce="${NONCE}" src="${ORIGIN}/harness.js"></script><script nonce="${NONCE}" src="${ORIGIN}/webview.js"></script></body></html>`;

const HARNESS = `
window.__posted = [];
window.acquireVsCodeApi = () => ({
  postMessage: (m) => window.__posted.push(JSON.parse(JSON.stringify(m))),
  getState: () => { const s = sessionStorage.getItem('vscode-state'); return s ? JSON.parse(s) : undefined; },
  setState: (s) => sessionStorage.setItem('vscode-state', JSON.stringify(s)),
});`;

/** Themes recorded from the real workbench (test/vscode/capture-themes.ts). */
export type ThemeName = 'dark' | 'light' | 'high-contrast' | 'high-contrast-light';

function themeCss(theme: ThemeName): string {
  return readFileSync(join(here, 'themes', `${theme}.css`), 'utf8');
}

export function buildWebview(): void {
  execFileSync(process.execPath, [join(webviewRoot, 'build.mjs')], { stdio: 'inherit' });
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

export interface PanelPage {
  page: Page;
  /** Problems the page reported (CSP violations, uncaught errors). */
  problems: string[];
  send(message: ToWebview): Promise<void>;
  posted(): Promise<FromWebview[]>;
  clearPosted(): Promise<void>;
  waitForPosted(predicate: (message: FromWebview) => boolean, timeoutMs?: number): Promise<FromWebview>;
  screenshot(name: string): Promise<void>;
  /** Runs axe-core in the page; returns the serious and critical violations, one line each. */
  axe(): Promise<string[]>;
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export async function openPanel(browser: Browser, size = { width: 420, height: 820 }, theme: ThemeName = 'dark'): Promise<PanelPage> {
  const context = await browser.newContext({ viewport: size });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  const js = readFileSync(join(webviewRoot, 'dist/webview.js'));
  const css = readFileSync(join(webviewRoot, 'dist/webview.css'));
  await page.route(`${ORIGIN}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    const files: Record<string, [string, string | Buffer]> = {
      // VS Code marks the theme's kind on the body: vscode-light, vscode-dark, vscode-high-contrast(-light).
      '/index.html': ['text/html', HTML.replace('vscode-THEME', theme === 'high-contrast-light' ? 'vscode-high-contrast vscode-high-contrast-light' : `vscode-${theme}`)],
      '/harness.js': ['text/javascript', HARNESS],
      '/webview.js': ['text/javascript', js],
      '/webview.css': ['text/css', css],
      '/theme.css': ['text/css', themeCss(theme)],
    };
    const file = files[path];
    if (!file) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ status: 200, contentType: file[0], body: file[1] });
  });
  await page.goto(`${ORIGIN}/index.html`);
  const panel: PanelPage = {
    page,
    problems,
    send: async (message) => {
      await page.evaluate((m) => window.postMessage(m, '*'), message);
    },
    posted: () => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted),
    clearPosted: async () => {
      await page.evaluate(() => {
        (window as unknown as { __posted: unknown[] }).__posted.length = 0;
      });
    },
    waitForPosted: async (predicate, timeoutMs = 5000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = (await panel.posted()).find(predicate);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`the panel did not post the expected message; it posted ${JSON.stringify(await panel.posted())}`);
        await page.waitForTimeout(25);
      }
    },
    axe: async () => {
      // Injected through the test runner (not a <script>), so the page's CSP stays as VS Code's.
      await page.evaluate(AXE_SOURCE);
      const results = await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run(context: Document, options: unknown): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[]; failureSummary?: string }> }> }> } }).axe;
        const run = await axe.run(document, { resultTypes: ['violations'] });
        return run.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => `${JSON.stringify(n.target)} ${n.failureSummary ?? ''}`) }));
      });
      return results.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id} (${v.help}): ${v.nodes.join(' | ')}`);
    },
    screenshot: async (name) => {
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
    },
  };
  return panel;
}

export interface TaskPanelOptions {
  size?: { width: number; height: number };
  theme?: ThemeName;
  /** The selected task's log, sent as the extension sends it after `ready` (omitted: none yet). */
  events?: TaskEvent[];
  /** Send a `live` connection status first, as the extension does for a followed task. */
  live?: boolean;
  /** The diff under review's files as the extension reads them from the server (omitted: not read yet). */
  files?: ReviewFile[];
}

/** The `fileDecisions` message for the sample task: `[path, change, accepted]`, change undefined for a file left out earlier. */
export function reviewFiles(...rows: Array<[string, ReviewFile['change'], boolean?, boolean?]>): Extract<ToWebview, { type: 'fileDecisions' }> {
  return { type: 'fileDecisions', taskId: TASK_ID, files: rows.map(([path, change, accepted = true, notReverted = false]) => ({ path, ...(change ? { change } : {}), accepted, notReverted })) };
}

/**
 * The panel as the extension sets it up for the sample task: open, wait for `ready` (anything
 * posted earlier would be lost), send the task list with the task selected, then its status and log.
 */
export async function openTaskPanel(browser: Browser, options: TaskPanelOptions = {}): Promise<PanelPage> {
  const panel = await openPanel(browser, options.size, options.theme);
  await panel.waitForPosted((m) => m.type === 'ready');
  await showTask(panel, options);
  return panel;
}

/** Sends the sample task as selected, its status and its whole log (a reset), like a fresh `ready`. */
export async function showTask(panel: PanelPage, options: Pick<TaskPanelOptions, 'events' | 'live' | 'files'> = {}): Promise<void> {
  await panel.send({ type: 'tasks', tasks: [sampleTask()], selectedTaskId: TASK_ID });
  if (options.live) await panel.send({ type: 'connection', taskId: TASK_ID, status: 'live' });
  if (options.events) await panel.send({ type: 'events', taskId: TASK_ID, reset: true, events: options.events, clipped: [] });
  if (options.files) await panel.send({ type: 'fileDecisions', taskId: TASK_ID, files: options.files });
}
