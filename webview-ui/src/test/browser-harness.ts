import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { FromWebview, ToWebview } from '../messages';

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
<link rel="stylesheet" href="${ORIGIN}/theme.css"><link rel="stylesheet" href="${ORIGIN}/webview.css"></head>
<body><script nonce="${NONCE}" src="${ORIGIN}/harness.js"></script><script nonce="${NONCE}" src="${ORIGIN}/webview.js"></script></body></html>`;

const HARNESS = `
window.__posted = [];
window.acquireVsCodeApi = () => ({
  postMessage: (m) => window.__posted.push(JSON.parse(JSON.stringify(m))),
  getState: () => { const s = sessionStorage.getItem('vscode-state'); return s ? JSON.parse(s) : undefined; },
  setState: (s) => sessionStorage.setItem('vscode-state', JSON.stringify(s)),
});`;

// A subset of VS Code's Dark Modern theme, enough for the panel to look as it does in the editor.
const THEME = `:root {
  --vscode-font-family: system-ui, sans-serif; --vscode-font-size: 13px; --vscode-editor-font-family: monospace; --vscode-editor-font-size: 12px;
  --vscode-foreground: #cccccc; --vscode-sideBar-background: #181818; --vscode-editor-background: #1f1f1f;
  --vscode-panel-border: #2b2b2b; --vscode-list-hoverBackground: #2a2d2e; --vscode-list-activeSelectionBackground: #04395e; --vscode-list-activeSelectionForeground: #ffffff;
  --vscode-focusBorder: #0078d4; --vscode-badge-background: #616161; --vscode-badge-foreground: #f8f8f8;
  --vscode-progressBar-background: #0078d4; --vscode-input-background: #313131; --vscode-input-border: #3c3c3c; --vscode-input-foreground: #cccccc;
  --vscode-editorWarning-foreground: #cca700; --vscode-errorForeground: #f85149; --vscode-testing-iconPassed: #73c991; --vscode-testing-iconFailed: #f14c4c;
  --vscode-inputValidation-warningBackground: #352a05; --vscode-inputValidation-errorBackground: #5a1d1d; --vscode-inputValidation-errorBorder: #be1100;
  --vscode-editorWidget-background: #202020; --vscode-textBlockQuote-background: #2b2b2b; --vscode-textCodeBlock-background: #2b2b2b;
  --vscode-gitDecoration-addedResourceForeground: #81b88b; --vscode-gitDecoration-modifiedResourceForeground: #e2c08d; --vscode-gitDecoration-deletedResourceForeground: #c74e39;
  --vscode-diffEditor-insertedLineBackground: rgba(155,185,85,0.2); --vscode-diffEditor-removedLineBackground: rgba(255,0,0,0.2);
  --vscode-textLink-foreground: #4daafc; --vscode-button-background: #0078d4; --vscode-button-foreground: #ffffff; --vscode-button-hoverBackground: #026ec1;
  --vscode-button-secondaryBackground: #313131; --vscode-button-secondaryForeground: #cccccc; --vscode-button-secondaryHoverBackground: #3c3c3c;
  --vscode-editorGroup-border: #ffffff17;
}`;

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
}

export async function openPanel(browser: Browser, size = { width: 420, height: 820 }): Promise<PanelPage> {
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
      '/index.html': ['text/html', HTML],
      '/harness.js': ['text/javascript', HARNESS],
      '/webview.js': ['text/javascript', js],
      '/webview.css': ['text/css', css],
      '/theme.css': ['text/css', THEME],
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
    screenshot: async (name) => {
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
    },
  };
  return panel;
}
