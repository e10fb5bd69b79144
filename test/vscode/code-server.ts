import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';
import { freePort } from '../support/local-server';

/*
 * Runs the real VS Code workbench (code-server from npm, see /work/shared VSCODE-E2E notes) with
 * the packaged extension installed, and drives it in headless Chromium. code-server lives in a
 * cached tool folder installed by .ci/needs/vscode.sh, outside the project's node_modules.
 */

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
const CODE_SERVER_VERSION = '4.100.3';

export function codeServerBinary(): string {
  const tools = process.env.DOCKHAND_TOOLS_DIR ?? '/var/cache/dockhand-tools';
  const binary = join(tools, `code-server-${CODE_SERVER_VERSION}`, 'node_modules/.bin/code-server');
  if (!existsSync(binary)) execFileSync('bash', [join(REPO_ROOT, '.ci/needs/vscode.sh')], { stdio: 'inherit' });
  return binary;
}

/** Builds and packages the extension exactly as it ships. */
export function packageExtension(): string {
  execFileSync('npm', ['run', 'package', '-w', 'extension'], { cwd: REPO_ROOT, stdio: 'inherit' });
  return join(REPO_ROOT, 'extension/dist/dockhand.vsix');
}

export interface CodeServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  log(): string;
  /** What the extension wrote to its output channel ("Dockhand"), for a failing test's message. */
  extensionLog(): string;
}

function findFiles(dir: string, name: RegExp): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? findFiles(path, name) : name.test(entry.name) ? [path] : [];
  });
}

export async function startCodeServer(options: { vsix: string; settings: Record<string, unknown> }): Promise<CodeServer> {
  const binary = codeServerBinary();
  const scratch = mkdtempSync(join(tmpdir(), 'dockhand-code-server-'));
  const dirs = { home: join(scratch, 'home'), tmp: join(scratch, 'tmp'), data: join(scratch, 'data'), extensions: join(scratch, 'extensions') };
  for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
  mkdirSync(join(dirs.data, 'User'), { recursive: true });
  writeFileSync(
    join(dirs.data, 'User/settings.json'),
    JSON.stringify({
      'security.workspace.trust.enabled': false,
      'workbench.startupEditor': 'none',
      'workbench.tips.enabled': false,
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'telemetry.telemetryLevel': 'off',
      'chat.disableAIFeatures': true,
      ...options.settings,
    }),
  );
  const env = { ...process.env, HOME: dirs.home, TMPDIR: dirs.tmp, XDG_CONFIG_HOME: join(dirs.home, '.config'), XDG_DATA_HOME: join(dirs.home, '.local/share') };
  const common = ['--config', '/dev/null', '--user-data-dir', dirs.data, '--extensions-dir', dirs.extensions];
  execFileSync(binary, [...common, '--install-extension', options.vsix], { env, stdio: 'pipe' });
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(
    binary,
    [...common, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust'],
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) throw new Error(`code-server did not answer /healthz within 60 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    port,
    log: () => output,
    extensionLog: () => findFiles(join(dirs.data, 'logs'), /Dockhand\.log$/).map((file) => readFileSync(file, 'utf8')).join('\n'),
    stop: async () => {
      if (child.exitCode === null && child.pid) {
        process.kill(-child.pid, 'SIGTERM');
        await new Promise((r) => setTimeout(r, 500));
        if (child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
      }
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** The workbench driven like a developer would: palette, quick picks, notifications, views. */
export class Workbench {
  constructor(readonly page: Page) {}

  async open(url: string, folder: string): Promise<void> {
    // A loaded machine (CI's 2 cores, other tests) can take a while to serve the workbench.
    await this.page.goto(`${url}/?folder=${encodeURIComponent(folder)}`, { timeout: 90_000 });
    await this.page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  }

  /**
   * Runs a command from the palette. A command whose `when` clause is not true yet (an editor still
   * loading its commenting ranges, an extension still activating) is tried again a few times.
   */
  async runCommand(title: string, attempts = 4): Promise<void> {
    const row = this.page.locator('.quick-input-list .monaco-list-row', { hasText: title.split(': ').pop() ?? title }).first();
    for (let attempt = 1; ; attempt += 1) {
      await this.page.keyboard.press('Escape');
      await this.page.keyboard.press('F1');
      const input = this.page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible' });
      await input.fill(`>${title}`);
      try {
        await row.waitFor({ timeout: 8_000 });
        break;
      } catch (error) {
        if (attempt >= attempts) throw error;
        await this.page.keyboard.press('Escape');
        await this.page.waitForTimeout(1_500);
      }
    }
    await this.page.keyboard.press('Enter');
  }

  /** Shows the Dockhand view container (clicking an already active one would hide the side bar). */
  async showDockhand(): Promise<void> {
    const item = this.page.locator('.activitybar .action-item a[aria-label^="Dockhand"]');
    await item.waitFor({ timeout: 60_000 });
    const active = this.page.locator('.activitybar .action-item.checked a[aria-label^="Dockhand"]');
    // After a reload the workbench restores the last view container on its own, a moment later.
    const restored = await active.waitFor({ timeout: 5_000 }).then(() => true, () => false);
    if (!restored) await item.click();
    await active.waitFor({ timeout: 10_000 });
  }

  /** Answers the open input box (or filters a quick pick) and accepts; `title` waits for that box. */
  async answer(text: string, title?: string): Promise<void> {
    if (title) await this.page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ timeout: 20_000 });
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill(text);
    await this.page.keyboard.press('Enter');
  }

  /**
   * Signs in with `token` from the palette, then sends a ticket described in words (no issue) with
   * the default budgets: the start of every flow that is not about sign-in or the ticket picker.
   * Returns once the side panel shows the task.
   */
  async signInAndSend(token: string, title: string): Promise<void> {
    await this.runCommand('Dockhand: Sign in');
    await this.answer(token);
    await this.notification('signed in to');
    await this.runCommand('Dockhand: Send ticket to agent');
    await this.pick('Describe the task');
    await this.answer(title, 'describe the task (1/2)');
    await this.answer('', 'describe the task (2/2)');
    await this.pick('Send with budgets');
    await this.webview().locator('.task-title', { hasText: title }).waitFor({ timeout: 60_000 });
  }

  /** Picks the quick pick row that contains `text`. */
  async pick(text: string): Promise<void> {
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
    await row.waitFor({ state: 'visible', timeout: 20_000 });
    await row.click();
  }

  async notification(text: string, timeoutMs = 20_000): Promise<string> {
    const item = this.page.locator('.notifications-toasts .notification-list-item-message', { hasText: text }).first();
    await item.waitFor({ timeout: timeoutMs });
    return (await item.textContent()) ?? '';
  }

  /** The side panel's document (two iframes deep). */
  webview(): FrameLocator {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  }

  async screenshot(name: string): Promise<void> {
    mkdirSync(ARTIFACTS, { recursive: true });
    await this.page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
  }
}
