import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDir } from '../../test/support/temporary-dirs';
import { withBuildLock } from './build';

/* Two corpus builders of one repository on one machine: the second waits for the first. */

const scratch = temporaryDir('corpus-lock-');
afterEach(() => rmSync(join(scratch, 'repo.lock'), { force: true }));

describe('the corpus build lock', () => {
  it('waits while a live process holds it, then builds and releases it', () => {
    // Another process, not a child of this one (a child would stay a zombie while the lock sleeps).
    const holder = { pid: Number(spawnSync('sh', ['-c', 'sleep 2 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).stdout.trim()) };
    writeFileSync(join(scratch, 'repo.lock'), String(holder.pid));
    const said: string[] = [];
    const started = Date.now();
    const result = withBuildLock(join(scratch, 'repo'), (line) => said.push(line), () => existsSync(join(scratch, 'repo.lock')));
    expect(result).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(said.join('\n')).toMatch(new RegExp(`waiting for the build in process ${holder.pid}`));
    expect(existsSync(join(scratch, 'repo.lock'))).toBe(false);
  });

  it('takes over a lock whose process is gone', () => {
    writeFileSync(join(scratch, 'repo.lock'), '999999999');
    expect(withBuildLock(join(scratch, 'repo'), () => undefined, () => 'built')).toBe('built');
    expect(existsSync(join(scratch, 'repo.lock'))).toBe(false);
  });
});
