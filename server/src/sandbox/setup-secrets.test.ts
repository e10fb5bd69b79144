import { describe, expect, it } from 'vitest';
import { describeSetupSecretSearch, maskSetupSecrets, resolveSetupSecrets, secretForms } from './setup-secrets';

const VALUE = 'tok/en+with spaces&more';

describe('setup secrets', () => {
  it('masks the raw, base64, base64url and URL-encoded forms, naming the secret', () => {
    const secrets = [{ name: 'SENTRY_AUTH', value: VALUE }];
    const text = [VALUE, Buffer.from(VALUE).toString('base64'), Buffer.from(VALUE).toString('base64url'), encodeURIComponent(VALUE)].join('\n');
    const masked = maskSetupSecrets(text, secrets);
    for (const form of secretForms(VALUE)) expect(masked).not.toContain(form);
    expect(masked.split('\n')).toEqual(Array(4).fill('[secret SENTRY_AUTH]'));
  });

  it('looks for no form shorter than 6 characters (it would match ordinary text)', () => {
    expect(secretForms('ab')).toEqual([]);
    expect(maskSetupSecrets('a b c', [{ name: 'X', value: 'b' }])).toBe('a b c');
  });

  it('a missing secret fails naming it and the command that sets it', async () => {
    const credentials = async (_repo: string, names: readonly string[]) => ({ values: new Map<string, string>(), missing: [...names] });
    const error = await resolveSetupSecrets({ repo: 'acme/web', usedBy: 'test', names: ['SENTRY_AUTH'], credentials }).then(() => undefined, (caught: unknown) => caught as Error & { hint?: string });
    if (!error) throw new Error('resolved without the missing secret');
    expect(error.message).toBe('acme/web has no secret SENTRY_AUTH, which .dockhand/environment.yml gives to .dockhand/setup.sh');
    expect(error.hint).toBe('dockhand secret set acme/web SENTRY_AUTH --from-file <file>');
  });
});

describe('the build failure for a setup secret in the layer', () => {
  it('names each file and the form found, never the value, and says how to fix setup.sh', () => {
    const failure = describeSetupSecretSearch({ found: [{ secret: 'SENTRY_AUTH', path: '/workspace/deploy.hex', encoding: 'hex' }, { secret: 'SENTRY_AUTH', path: '/home/dockhand/.npmrc', encoding: 'base64 (inside a longer text)' }], unreadable: [], notes: [] }, '/data/build.log');
    expect(failure?.message).toBe("a setup secret's value is in the snapshot after .dockhand/setup.sh: /workspace/deploy.hex (SENTRY_AUTH, hex), /home/dockhand/.npmrc (SENTRY_AUTH, base64 (inside a longer text))");
    expect(failure?.hint).toMatch(/^make \.dockhand\/setup\.sh read \$<NAME>_FILE .* in any encoding .* under \/tmp .*full log: \/data\/build\.log$/);
    expect(describeSetupSecretSearch({ found: [], unreadable: ['/workspace/locked'], notes: [] }, 'l')?.message).toBe('the snapshot would keep files the build user cannot read, so they cannot be searched for setup secrets: /workspace/locked');
    expect(describeSetupSecretSearch({ found: [], unreadable: [], notes: ['x'] }, 'l')).toBeUndefined();
  });

  it('masks the hex, reversed and embedded-base64 forms in the build log too', () => {
    const text = [Buffer.from(VALUE).toString('hex'), [...VALUE].reverse().join(''), Buffer.from(`u:${VALUE}`).toString('base64')].join('\n');
    const masked = maskSetupSecrets(text, [{ name: 'SENTRY_AUTH', value: VALUE }]);
    expect(masked.split('\n').slice(0, 2)).toEqual(['[secret SENTRY_AUTH]', '[secret SENTRY_AUTH]']);
    expect(masked).toContain('[secret SENTRY_AUTH]');
    expect(masked).not.toContain(Buffer.from(`u:${VALUE}`).toString('base64'));
  });
});
