import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import { ReadinessReport } from '@dockhand/protocol';
import { renderReadiness } from './readiness';

describe('readiness report', () => {
  it('puts what blocks a rollout first, each with what to do, then the checks and the environment', () => {
    const report = ReadinessReport.parse({
      repo: 'shop',
      sha: '0123456789abcdef0123',
      ready: false,
      environment: {
        repo: 'shop',
        node: { version: '20.11.1', source: '.nvmrc' },
        packageManager: { name: 'pnpm', version: '9.1.0', source: 'package.json packageManager' },
        install: { command: 'pnpm install --frozen-lockfile', source: 'default' },
        test: { command: 'pnpm test', source: 'package.json' },
      },
      snapshot: { image: 'dockhand/snap-shop:abc', built: true, buildSeconds: 84, startSeconds: 0.6 },
      install: { ok: true, detail: 'installed 812 packages', seconds: 41.2 },
      tests: { ok: false, detail: 'the runner timed out', action: 'Raise the test timeout in .dockhand/environment.yml', command: 'pnpm test', passed: 120, failed: 2, preExistingFailures: ['test/legacy.test.ts > dates'] },
      selection: { ok: true, detail: 'imports resolved', testFiles: 40, sourceFiles: 200 },
      blocking: [{ problem: 'Tests do not finish', action: 'Raise the test timeout in .dockhand/environment.yml' }],
    });
    const markdown = renderReadiness(report);
    expect(markdown.split('\n')[0]).toBe('# ✗ shop: not ready yet');
    expect(markdown.indexOf('## What blocks a rollout')).toBeLessThan(markdown.indexOf('## Checks'));
    expect(markdown).toContain('- **Tests do not finish** — Raise the test timeout in .dockhand/environment.yml');
    expect(markdown).toContain('| ✗ | Tests | the runner timed out: 120 passed, 2 failed (`pnpm test`) — *Raise the test timeout in .dockhand/environment.yml* |');
    expect(markdown).toContain('| ✓ | Install | installed 812 packages (41.2 s) |');
    expect(markdown).toContain('- `test/legacy.test.ts > dates`');
    expect(markdown).toContain('| Package manager | pnpm 9.1.0 | package.json packageManager |');
    expect(markdown).toContain('Checked at commit `0123456789ab`.');
    const head = renderReadiness(ReadinessReport.parse({ ...report, head: { branch: 'main', source: '/srv/git/shop' } }));
    expect(head).toContain('Checked at commit `0123456789ab`, the head of `main` at /srv/git/shop when the check began.');
  });
});

describe('readiness check against the route', () => {
  it('starts the check, follows its stages until done and returns the report', async () => {
    const { startFakeServer } = await import('../../test/vscode/fake-server');
    const { ApiClient } = await import('./api-client');
    const { waitForReport } = await import('./readiness');
    const server = await startFakeServer();
    try {
      const api = new ApiClient({ baseUrl: server.url, token: async () => server.token });
      const stages: string[] = [];
      const report = await waitForReport(api, 'shop', 10, (status) => stages.push(status.progress.map((p) => p.stage).join('>')));
      expect(stages).toEqual(['mirror', 'mirror>snapshot', 'mirror>snapshot>baseline']);
      expect(report.blocking[0]?.problem).toBe('Test selection misses src/legacy/');
      expect(renderReadiness(report)).toContain('- `test/dates.test.ts > parses ISO weeks`');
      await expect(waitForReport(api, 'nope', 10, () => undefined)).rejects.toThrow('no registered repository nope');
      expect(server.requests.map((r) => `${r.method} ${r.path}`).slice(0, 3)).toEqual(['POST /v1/repos/shop/check', 'GET /v1/repos/shop/check', 'GET /v1/repos/shop/check']);
    } finally {
      await server.close();
    }
  });
});
