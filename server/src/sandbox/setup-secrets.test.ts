import { describe, expect, it } from 'vitest';
import { maskSetupSecrets, resolveSetupSecrets, secretForms } from './setup-secrets';

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
