import { describe, expect, it } from 'vitest';
import { gateOutbound } from './outbound';
import { STORED_SECRET_RULE } from './known-secrets';
import { addedFile } from './testing/diffs';

/*
 * A repository secret no scanner rule recognises (plain words, low entropy) is still blocked by
 * the content gate when the server holds it: in the diff and in the PR text, raw, URL-encoded or
 * base64; the violation never repeats the value.
 */
const VALUE = 'acme deploy password/for staging';
const forms = {
  raw: VALUE,
  url: encodeURIComponent(VALUE),
  base64: Buffer.from(VALUE).toString('base64'),
  base64url: Buffer.from(VALUE).toString('base64url'),
};

function gate(diff: string, text: { body?: string; title?: string } = {}, known: string[] = [VALUE]) {
  return gateOutbound({ diff, allowTestEdits: false, stage: 'push', overrides: [], text, known });
}

describe('stored secrets in the content gate', () => {
  it.each(Object.entries(forms))('blocks a diff adding the value %s-encoded, naming the file and line only', (_name, form) => {
    const result = gate(addedFile('src/config.ts', ['export const a = 1;', `export const password = "${form}";`]));
    expect(result.ok).toBe(false);
    const violation = result.violations.find((found) => found.rule === STORED_SECRET_RULE);
    expect(violation).toMatchObject({ path: 'src/config.ts', line: 2 });
    expect(JSON.stringify(result.violations)).not.toContain(form);
  });

  it.each(Object.entries(forms))('blocks PR text holding the value %s-encoded', (_name, form) => {
    const result = gate(addedFile('src/ok.ts', ['export const a = 1;']), { title: 'Fix login', body: `Tested with\n${form}\n` });
    expect(result.ok).toBe(false);
    expect(result.violations).toContainEqual(expect.objectContaining({ rule: STORED_SECRET_RULE, path: 'pr-body', line: 2 }));
    expect(JSON.stringify(result.violations)).not.toContain(form);
  });

  it('passes the same change when the server holds no such value (no scanner rule finds it)', () => {
    const result = gate(addedFile('src/config.ts', [`export const password = "${VALUE}";`]), { body: VALUE }, []);
    expect(result.violations.filter((found) => found.rule === STORED_SECRET_RULE)).toEqual([]);
  });

  it('ignores values too short to look for', () => {
    const result = gate(addedFile('src/a.ts', ['export const abc = "abc";']), { body: 'abc' }, ['abc']);
    expect(result.ok).toBe(true);
  });
});
