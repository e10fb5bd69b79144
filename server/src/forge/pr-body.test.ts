import { describe, expect, it } from 'vitest';
import { buildPullRequestBody, BODY_LIMIT, TEST_LOG_BUDGET } from './pr-body';
import { samples } from '../policy/testing/samples';
import { branchName } from './push';

const report = {
  ticket: { title: 'paginate drops the last item', url: 'https://github.com/acme/app/issues/42', id: '42' },
  summary: 'Slice end is now `start + size`.',
  requester: 'ada',
  taskId: 't_123',
  model: 'claude-sonnet-4-5',
  tests: { command: 'npm test -- paginate', passed: 12, failed: 0, skipped: 1, log: 'PASS src/paginate.test.js\n```\nfence in log\n```' },
  quarantined: ['src/flaky.test.js > retries network'],
  usage: { turns: 9, inputTokens: 123_456, outputTokens: 7_890, cacheReadTokens: 100_000, costUsd: 0.4321 },
};

describe('buildPullRequestBody', () => {
  it('holds the ticket link, summary, collapsed test log, quarantined tests, turns, tokens and cost', () => {
    const body = buildPullRequestBody(report);
    expect(body).toContain('[paginate drops the last item](https://github.com/acme/app/issues/42) (#42)');
    expect(body).toContain('Slice end is now `start + size`.');
    expect(body).toContain('`npm test -- paginate`: 12 passed, 0 failed, 1 skipped');
    expect(body).toMatch(/<details><summary>Test log<\/summary>\n\n````text\nPASS src\/paginate\.test\.js\n```\nfence in log\n```\n````\n\n<\/details>/);
    expect(body).toContain('- `src/flaky.test.js > retries network`');
    expect(body).toContain('| 9 | 123,456 | 7,890 | 100,000 | $0.43 |');
    expect(body).toContain('model claude-sonnet-4-5, task t_123');
  });

  it("links the push's signed attestation where the server serves it, and only when there is one", () => {
    const body = buildPullRequestBody({ ...report, attestation: { path: '/v1/tasks/t_123/attestation' } });
    expect(body).toContain('**Attestation:** a signed in-toto statement');
    expect(body).toContain('`GET /v1/tasks/t_123/attestation`');
    expect(body).toContain('`Dockhand-Attestation:` trailer');
    expect(buildPullRequestBody(report)).not.toContain('Attestation');
  });

  it('shows the full-suite run before the PR and lists pre-existing failures apart', () => {
    const body = buildPullRequestBody({
      ...report,
      tests: { command: 'npm test → tape test/*.js', scope: 'full', passed: 83, failed: 1, log: 'not ok 84 rounds', preExisting: ['money > rounds half up'] },
    });
    expect(body).toContain('`npm test → tape test/*.js` (full suite): 83 passed, 1 failed (1 of them pre-existing)');
    expect(body).toContain('**Pre-existing failures** — these fail at the base commit too (run twice before any change), so this change did not cause them:\n\n- `money > rounds half up`');
    expect(buildPullRequestBody(report)).not.toContain('Pre-existing');
  });

  it('lists the policy violations a repo owner overrode, and none when nothing was overridden', () => {
    const body = buildPullRequestBody({
      ...report,
      policyOverride: { by: 'olive', violations: [{ rule: 'ci-config', path: '.github/workflows/ci.yml', message: 'CI configuration changed (modified)' }, { rule: 'diff-size:lines', path: '', message: 'the diff changes 900 lines; the cap is 800' }] },
    });
    expect(body).toContain('## Policy overridden\n\nThese violations of the repository policy were overridden by olive, a repo owner:\n\n'
      + '- `ci-config` `.github/workflows/ci.yml`: CI configuration changed (modified)\n- `diff-size:lines`: the diff changes 900 lines; the cap is 800');
    expect(buildPullRequestBody(report)).not.toContain('Policy overridden');
  });

  it('clips a huge test log to head and tail and stays under the body limit', () => {
    const log = `${'first line\n'.repeat(10)}${'x'.repeat(200_000)}\nlast line`;
    const body = buildPullRequestBody({ ...report, tests: { ...report.tests, log } });
    expect(body.length).toBeLessThan(BODY_LIMIT);
    expect(body.length).toBeGreaterThan(TEST_LOG_BUDGET);
    expect(body).toContain('first line');
    expect(body).toContain('last line');
    expect(body).toMatch(/characters omitted/);
  });

  it('redacts the given secrets', () => {
    const secret = samples(5).github('ghs');
    const body = buildPullRequestBody({ ...report, summary: `used ${secret}` }, [secret]);
    expect(body).not.toContain(secret);
  });
});

describe('branchName', () => {
  it('is dockhand/<id>-<slug>, ASCII and bounded', () => {
    expect(branchName('42', 'Fix paginate() off-by-one!')).toBe('dockhand/42-fix-paginate-off-by-one');
    expect(branchName('t_AbC', 'Ünïcödé   title ✨')).toBe('dockhand/t-abc-unicode-title');
    expect(branchName('7', '!!!')).toBe('dockhand/7');
    expect(branchName('7', 'a'.repeat(200)).length).toBeLessThanOrEqual('dockhand/7-'.length + 48);
  });
});
