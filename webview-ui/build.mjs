// Bundles the side panel into dist/webview.js + dist/webview.css (loaded by the extension with a
// nonce'd <script> and a <link>; the CSP forbids inline scripts and styles).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const outdir = join(root, 'dist');
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: [join(root, 'src/main.ts')],
  bundle: true,
  format: 'iife',
  target: 'es2022',
  platform: 'browser',
  outfile: join(outdir, 'webview.js'),
  minify: process.argv.includes('--minify'),
  sourcemap: process.argv.includes('--minify') ? false : 'linked',
  logLevel: 'warning',
});
copyFileSync(join(root, 'src/styles.css'), join(outdir, 'webview.css'));
