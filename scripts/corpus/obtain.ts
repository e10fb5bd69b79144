/**
 * Obtains a corpus repository's sources the way a fresh machine can: `npm pack` from the npm
 * registry, `apt-get source` / `apt-get download` from Debian's mirror through a private apt
 * configuration (its own deb and deb-src lists under `<corpus>/.apt/`, so the host's sources and
 * package state are not touched). Downloads are cached under `<corpus>/.downloads/`.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CorpusSource } from '../../test/corpus/types';

export interface Provenance {
  source: string;
  file: string;
  sha256: string;
}

const MIRROR = 'http://deb.debian.org/debian';

function aptOptions(root: string): string[] {
  const apt = join(root, '.apt');
  const list = join(apt, 'sources.list');
  if (!existsSync(list)) {
    mkdirSync(join(apt, 'lists', 'partial'), { recursive: true });
    mkdirSync(join(apt, 'cache', 'archives', 'partial'), { recursive: true });
    writeFileSync(list, `deb ${MIRROR} bookworm main\ndeb-src ${MIRROR} bookworm main\n`);
  }
  return [
    '-o', `Dir::Etc::SourceList=${list}`,
    '-o', 'Dir::Etc::SourceParts=/dev/null',
    '-o', `Dir::State::Lists=${join(apt, 'lists')}`,
    '-o', `Dir::Cache=${join(apt, 'cache')}`,
    '-o', 'APT::Sandbox::User=root',
    '-o', 'Debug::NoLocking=1',
  ];
}

let aptUpdated = false;
function aptUpdate(root: string): void {
  if (aptUpdated) return;
  execFileSync('apt-get', [...aptOptions(root), '-qq', 'update'], { stdio: ['ignore', 'ignore', 'pipe'] });
  aptUpdated = true;
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

function onlyChild(dir: string): string {
  const entries = readdirSync(dir);
  if (entries.length !== 1) throw new Error(`${dir}: expected one top-level folder in the archive, found ${entries.join(', ')}`);
  return join(dir, entries[0] ?? '');
}

/** Downloads (cached) and extracts `source` into `target` (created). */
export function obtain(root: string, source: Exclude<CorpusSource, { kind: 'workspace' }>, target: string): Provenance {
  const downloads = join(root, '.downloads');
  mkdirSync(downloads, { recursive: true });
  const scratch = mkdtempSync(join(downloads, 'extract-'));
  try {
    if (source.kind === 'npm') {
      const file = join(downloads, `${source.package.replace('@', '').replace('/', '-')}-${source.version}.tgz`);
      if (!existsSync(file)) {
        const packed = execFileSync('npm', ['pack', `${source.package}@${source.version}`, '--silent', '--pack-destination', scratch], { cwd: scratch, encoding: 'utf8' }).trim().split('\n').at(-1) ?? '';
        cpSync(join(scratch, packed), file);
        rmSync(join(scratch, packed));
      }
      execFileSync('tar', ['xzf', file, '-C', scratch]);
      cpSync(join(scratch, 'package'), target, { recursive: true });
      return { source: `npm registry: npm pack ${source.package}@${source.version}`, file: file.slice(root.length + 1), sha256: sha256(file) };
    }
    if (source.kind === 'debian-source') {
      const dir = join(downloads, `${source.package}_${source.version}`);
      if (!existsSync(join(dir, '.complete'))) {
        aptUpdate(root);
        mkdirSync(dir, { recursive: true });
        // Only the .dsc and the upstream orig tarball(s): the mirror here does not serve every
        // debian.tar.xz, and the packaging is not part of the repository anyway.
        const uris = execFileSync('apt-get', [...aptOptions(root), '-qq', 'source', '--print-uris', `${source.package}=${source.version}`], { encoding: 'utf8' });
        for (const match of uris.matchAll(/^'([^']+)' (\S+) \d+ SHA256:([0-9a-f]{64})$/gm)) {
          const [, uri = '', name = '', hash = ''] = match;
          if (!/\.(dsc|orig\.tar\.(gz|xz|bz2))$/.test(name)) continue;
          execFileSync('/usr/lib/apt/apt-helper', ['download-file', uri, join(dir, name), `SHA256:${hash}`], { stdio: ['ignore', 'ignore', 'pipe'] });
        }
        writeFileSync(join(dir, '.complete'), '');
      }
      // The upstream tree is the main orig tarball (not the debian/ packaging, not component tarballs).
      const orig = readdirSync(dir).find((name) => /\.orig\.tar\.(gz|xz|bz2)$/.test(name));
      if (!orig) throw new Error(`apt-get source ${source.package}=${source.version}: no .orig tarball in ${dir}`);
      execFileSync('tar', ['xf', join(dir, orig), '-C', scratch]);
      cpSync(onlyChild(scratch), target, { recursive: true });
      return { source: `Debian bookworm source package ${source.package} ${source.version} (apt-get source; upstream orig tarball)`, file: join(dir, orig).slice(root.length + 1), sha256: sha256(join(dir, orig)) };
    }
    const dir = join(downloads, `${source.package}_${source.version}`);
    if (!existsSync(join(dir, '.complete'))) {
      aptUpdate(root);
      mkdirSync(dir, { recursive: true });
      execFileSync('apt-get', [...aptOptions(root), '-qq', 'download', `${source.package}=${source.version}`], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
      writeFileSync(join(dir, '.complete'), '');
    }
    const deb = readdirSync(dir).find((name) => name.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${source.package}=${source.version}: no .deb in ${dir}`);
    execFileSync('dpkg-deb', ['-x', join(dir, deb), scratch]);
    mkdirSync(target, { recursive: true });
    cpSync(join(scratch, source.from), join(target, source.to), { recursive: true });
    return { source: `Debian bookworm binary package ${source.package} ${source.version} (apt-get download; ${source.from})`, file: join(dir, deb).slice(root.length + 1), sha256: sha256(join(dir, deb)) };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
