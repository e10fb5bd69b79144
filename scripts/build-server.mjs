// Bundles the server CLI (`dockhand`) to server/dist/cli.js. Dependencies stay external (they are
// installed beside it, and better-sqlite3/dockerode carry native or optional parts); the
// @dockhand/protocol sources are bundled in.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// `--outfile <path>` (relative to the repository root): test/support/local-server.ts builds its own copy.
const outfileAt = process.argv.indexOf('--outfile');
const outfile = outfileAt > 0 && process.argv[outfileAt + 1] ? process.argv[outfileAt + 1] : 'server/dist/cli.js';
const server = JSON.parse(readFileSync(resolve(root, 'server/package.json'), 'utf8'));
const external = Object.keys(server.dependencies ?? {}).filter((name) => name !== '@dockhand/protocol');

await build({
  entryPoints: [resolve(root, 'server/src/cli/bin.ts')],
  outfile: resolve(root, outfile),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  external: [...external, 'zod'],
  banner: { js: '#!/usr/bin/env node' },
  logLevel: 'warning',
});
process.stdout.write(`${outfile}\n`);
