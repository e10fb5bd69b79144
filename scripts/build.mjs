// Builds every target with esbuild: the server bundle (CLI), the webview UI and the extension.
// `npm run package` additionally makes the extension's .vsix.
import { execFileSync } from 'node:child_process';

const steps = [
  ['server', 'scripts/build-server.mjs'],
  ['webview-ui', 'webview-ui/build.mjs'],
  ['extension', 'extension/build.mjs'],
];
for (const [name, script] of steps) {
  process.stdout.write(`[build] ${name}\n`);
  execFileSync(process.execPath, [script, ...process.argv.slice(2)], { stdio: 'inherit' });
}
