import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { runTests } from '@vscode/test-electron';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../support/fixture-repo';
import { temporaryDir } from '../support/temporary-dirs';
import { codeServerBinary, REPO_ROOT } from '../vscode/code-server';

/*
 * The extension-host mocha suite (test/vscode/suite) through @vscode/test-electron's runTests. No
 * VS Code build can be downloaded here, so `vscodeExecutablePath` is a stand-in that runs the same
 * payload in code-server + Chromium (test/vscode/code-stand-in.mjs); elsewhere the suite runs
 * unchanged against a real VS Code.
 */

describe('extension-host suite (runTests)', () => {
  it('passes inside the extension host', async () => {
    execFileSync('npm', ['run', 'build:extension'], { cwd: REPO_ROOT, stdio: 'ignore' });
    const outdir = join(REPO_ROOT, 'extension/dist/test');
    await build({
      entryPoints: [join(REPO_ROOT, 'test/vscode/suite/index.ts'), join(REPO_ROOT, 'test/vscode/suite/extension.suite.ts')],
      outdir,
      outExtension: { '.js': '.cjs' },
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      external: ['vscode', 'mocha'],
      logLevel: 'warning',
    });
    const folder = createFixtureRepo('buggy-calc').path;
    const profile = temporaryDir('dockhand-vscode-profile-');
    process.env.CODE_SERVER_BIN = codeServerBinary();
    const code = await runTests({
      vscodeExecutablePath: join(REPO_ROOT, 'test/vscode/code-stand-in.mjs'),
      extensionDevelopmentPath: join(REPO_ROOT, 'extension'),
      extensionTestsPath: join(outdir, 'index.cjs'),
      // Profile folders outside the project (runTests would otherwise create .vscode-test/ here).
      launchArgs: [folder, `--user-data-dir=${join(profile, 'data')}`, `--extensions-dir=${join(profile, 'extensions')}`],
    }).catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
    expect(code).toBe(0);
  });
});
