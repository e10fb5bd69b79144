import { describe, expect, it } from 'vitest';
import { describeSecretUses, secretUses } from './dep-cache-private';

describe("a snapshot build's secret audit", () => {
  it('names each secret with its step and the requests sent upstream with it, never a value', () => {
    const registries = [
      { scope: '@acme', url: new URL('https://npm.acme.internal/'), authorization: 'Bearer s3cr3t-acme', secret: 'NPM_ACME' },
      { url: new URL('https://npm.acme.internal/all/'), authorization: 'Bearer s3cr3t-all', secret: 'NPM_DEFAULT' },
    ];
    const uses = secretUses(registries, new Map([['NPM_ACME', 3]]), ['SENTRY_AUTH']);
    expect(uses).toEqual([
      { name: 'NPM_ACME', step: 'registry front', scope: '@acme', requests: 3 },
      { name: 'NPM_DEFAULT', step: 'registry front', requests: 0 },
      { name: 'SENTRY_AUTH', step: 'setup.sh' },
    ]);
    const line = describeSecretUses(uses);
    expect(line).toBe('NPM_ACME (registry front for @acme: 3 requests upstream), NPM_DEFAULT (registry front for the default registry: 0 requests upstream), SENTRY_AUTH (given to setup.sh)');
    expect(JSON.stringify(uses) + line).not.toContain('s3cr3t');
  });
});
