import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Fleet } from '../runner/fleet';
import { composedFleet } from '../runner/testing/composed-fleet';
import { buildCli } from './main';

let dir: string;
let fleet: Fleet;
let url: string;
let bare: string;
let sha: string;
let token: string;
let output: string[];

beforeEach(async () => {
  ({ dir, fleet, bare, sha, token } = await composedFleet('dockhand-cli-'));
  url = await fleet.app.listen({ host: '127.0.0.1', port: 0 });
  output = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    output.push(chunk.toString());
    return true;
  });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await fleet.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('dockhand CLI against a running server', () => {
  it('submit streams the trajectory, approves at review and prints the PR link; tasks lists it', async () => {
    await buildCli().parseAsync(['node', 'dockhand', 'submit', '--server', url, '--token', token, '--title', 'Make two loud', '--repo', bare, '--base', sha, '--approve']);
    const text = output.join('');
    expect(text).toMatch(/task t_\S+ submitted/);
    expect(text).toContain('sandbox ready (snapshot, 5 ms)');
    expect(text).toContain('✎ modified src/a.ts');
    expect(text).toContain('awaiting_review');
    expect(text).toContain('PR opened: dockhand-local://app/pulls/1');
    expect(text.trimEnd().split('\n').at(-1)).toBe('PR: dockhand-local://app/pulls/1');
    output.length = 0;
    await buildCli().parseAsync(['node', 'dockhand', 'tasks', '--server', url, '--token', token]);
    expect(output.join('')).toMatch(/t_\S+\s+pr_open\s+\$0\.00\s+Make two loud\s+dockhand-local:\/\/app\/pulls\/1/);
  });

  it('token create takes the user as an argument; repo list shows the registration; an unknown repo name is refused at submission naming context.repo', async () => {
    const previous = process.env.DOCKHAND_DATA_DIR;
    process.env.DOCKHAND_DATA_DIR = join(dir, 'data');
    try {
      await buildCli().parseAsync(['node', 'dockhand', 'token', 'create', 'carol']);
    } finally {
      if (previous === undefined) delete process.env.DOCKHAND_DATA_DIR;
      else process.env.DOCKHAND_DATA_DIR = previous;
    }
    expect(output.join('')).toMatch(/token tok_\w+ for carol \(shown once; [^)]*\):\ndh_\S+/);
    output.length = 0;
    await buildCli().parseAsync(['node', 'dockhand', 'repo', 'list', '--server', url, '--token', token]);
    expect(output.join('')).toMatch(/^app\s+main\s+\S+\s+-\s+everyone$/m);
    await expect(buildCli().parseAsync(['node', 'dockhand', 'submit', '--server', url, '--token', token, '--title', 'x', '--repo', 'nope', '--base', sha]))
      .rejects.toMatchObject({ field: 'context.repo', message: 'context.repo: no repository named nope is registered' });
  });

  it('refuses a bad token with the server\'s error', async () => {
    await expect(buildCli().parseAsync(['node', 'dockhand', 'tasks', '--server', url, '--token', 'dh_wrong'])).rejects.toThrow(/unknown or revoked token/);
  });
});
