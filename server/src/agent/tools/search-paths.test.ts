import { mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../../../../test/support/fixture-repo';
import { ResidentHostSandbox } from '../../sandbox/testing/resident-host-sandbox';
import { toolContext } from '../testing/context';
import { defaultTools, executeTool } from './index';

/*
 * Issue #23 item 10: search followed symlinks that read_file refuses, and a huge file ran into
 * search's timeouts. Through the channel program (what a gVisor sandbox serves) and real ripgrep:
 * a link out of the workspace is refused by search as by read_file, and a file over the cap is
 * refused at once with its size and the cap.
 */
const tools = defaultTools();
let repo: FixtureRepo;
let outside: string;
let sandbox: ResidentHostSandbox;

async function run(name: string, input: unknown): Promise<{ isError: boolean; output: string; ms: number }> {
  const started = Date.now();
  const result = await executeTool(tools, name, input, toolContext(sandbox), 20_000);
  return { isError: result.isError, output: result.output, ms: Date.now() - started };
}

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  outside = mkdtempSync(join(tmpdir(), 'dockhand-outside-'));
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE_SECRET=hunter2\n');
  symlinkSync(outside, join(repo.path, 'escape'));
  symlinkSync(join(outside, 'secret.txt'), join(repo.path, 'secret-link.txt'));
  // Sparse: 200 MiB by its size, nothing written.
  writeFileSync(join(repo.path, 'huge.log'), '');
  truncateSync(join(repo.path, 'huge.log'), 200 * 1024 * 1024);
  sandbox = await ResidentHostSandbox.open(repo.path);
});

afterAll(async () => {
  await sandbox?.destroy();
  rmSync(outside, { recursive: true, force: true });
});

describe('search stays where read_file stays', () => {
  it.each([
    ['a symlinked directory', { pattern: 'OUTSIDE_SECRET', path: 'escape' }],
    ['a file under a symlinked directory', { pattern: 'OUTSIDE_SECRET', path: 'escape/secret.txt' }],
    ['a symlinked file', { pattern: 'OUTSIDE_SECRET', path: 'secret-link.txt' }],
  ])('refuses %s, as read_file does', async (_what, input) => {
    const searched = await run('search', input);
    expect(searched.isError).toBe(true);
    expect(searched.output).toContain('leads outside the workspace');
    expect(searched.output).not.toContain('hunter2');
    const read = await run('read_file', { path: input.path.endsWith('.txt') ? input.path : `${input.path}/secret.txt` });
    expect(read.isError).toBe(true);
  });

  it('a search of the whole workspace does not walk into the links', async () => {
    const searched = await run('search', { pattern: 'OUTSIDE_SECRET' });
    expect(searched.output).not.toContain('hunter2');
  });

  it('refuses a 200 MiB file at once, naming its size and the cap (read_file too)', async () => {
    const searched = await run('search', { pattern: 'x', path: 'huge.log' });
    expect(searched).toMatchObject({ isError: true });
    expect(searched.output).toContain('huge.log is 200.0 MiB, over search\'s 16.0 MiB cap');
    expect(searched.ms).toBeLessThan(5_000);
    const read = await run('read_file', { path: 'huge.log' });
    expect(read.isError).toBe(true);
    expect(read.output).toContain('200.0 MiB, over the 4 MiB cap');
    expect(read.ms).toBeLessThan(5_000);
  });
});
