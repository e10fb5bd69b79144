#!/usr/bin/env node
// A stand-in for the VS Code executable that @vscode/test-electron's runTests launches: it starts
// code-server with the given profile folders, opens the workbench in headless Chromium with the
// extension-development payload, and exits with the test run's exit code (reported by the
// workbench through codeAutomationLog / codeAutomationExit). Against a real VS Code build the same
// suite runs unchanged.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { format } from 'node:util';
import { createServer } from 'node:net';
import { chromium } from 'playwright-core';

const args = process.argv.slice(2);
const option = (name) => {
  const inline = args.find((a) => a.startsWith(`--${name}=`));
  if (inline) return inline.slice(name.length + 3);
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? args[index + 1] : undefined;
};
const developmentPath = option('extensionDevelopmentPath');
const testsPath = option('extensionTestsPath');
const userDataDir = option('user-data-dir');
const extensionsDir = option('extensions-dir');
const folder = args.filter((a, i) => !a.startsWith('--') && !(args[i - 1] ?? '').match(/^--(user-data-dir|extensions-dir|extensionDevelopmentPath|extensionTestsPath)$/)).pop();
for (const dir of [userDataDir, extensionsDir]) if (dir) mkdirSync(dir, { recursive: true });

const port = await new Promise((done) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: found } = probe.address();
    probe.close(() => done(found));
  });
});
const server = spawn(process.env.CODE_SERVER_BIN, [
  '--config', '/dev/null', '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, '--auth', 'none',
  '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
], { stdio: ['ignore', 'ignore', 'inherit'], detached: true });
const url = `http://127.0.0.1:${port}`;
for (let i = 0; i < 240; i += 1) {
  if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) break;
  await new Promise((r) => setTimeout(r, 250));
}
const remote = (path) => `vscode-remote://127.0.0.1:${port}${path}`;
const payload = [['extensionDevelopmentPath', remote(developmentPath)], ['extensionTestsPath', remote(testsPath)]];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
const page = await browser.newPage();
let finish;
const exitCode = new Promise((done) => (finish = done));
await page.exposeFunction('codeAutomationLog', (type, parts) => process.stdout.write(`${format(...(parts ?? []))}\n`));
await page.exposeFunction('codeAutomationExit', (code) => finish(code));
await page.goto(`${url}/?folder=${encodeURIComponent(folder ?? '/tmp')}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
const timeout = setTimeout(() => finish(2), 180_000);
const code = await exitCode;
clearTimeout(timeout);
await browser.close();
process.kill(-server.pid, 'SIGTERM');
process.exit(code);
