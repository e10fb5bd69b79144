// Builds the extension (CJS, `vscode` external) and copies the side panel's bundle beside it.
// `--minify` is used for the .vsix.
import { build } from 'esbuild';
import { cpSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

const root = dirname(fileURLToPath(import.meta.url));
const minify = process.argv.includes('--minify');
execFileSync(process.execPath, [join(root, '../webview-ui/build.mjs'), ...(minify ? ['--minify'] : [])], { stdio: 'inherit' });
await build({
  entryPoints: [join(root, 'src/extension.ts')],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outfile: join(root, 'dist/extension.cjs'),
  // ws loads these optional native helpers inside try/catch; they are not installed.
  external: ['vscode', 'bufferutil', 'utf-8-validate'],
  minify,
  sourcemap: minify ? false : 'linked',
  logLevel: 'warning',
});
mkdirSync(join(root, 'dist/webview'), { recursive: true });
for (const file of ['webview.js', 'webview.css']) cpSync(join(root, '../webview-ui/dist', file), join(root, 'dist/webview', file));
