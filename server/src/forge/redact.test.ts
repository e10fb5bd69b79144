import { describe, expect, it } from 'vitest';
import { samples } from '../policy/testing/samples';
import { createRedactor, redact, REDACTED } from './redact';

describe('redact', () => {
  const token = samples(11).github('ghs');

  it('removes every occurrence, URL-encoded and Basic-auth forms included', () => {
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    const text = `push with ${token}\nurl=https://u:${encodeURIComponent(token)}@h\nAuthorization: Basic ${basic}\n${token}`;
    const out = redact(text, [token]);
    expect(out).not.toContain(token);
    expect(out).not.toContain(Buffer.from(token).toString('base64').replace(/=+$/, ''));
    expect(out.split(REDACTED).length - 1).toBe(4);
  });

  it('redacts special characters literally and the longest secret first', () => {
    const secret = 'p@ss/w+rd$(x)';
    expect(redact(`a ${secret} b`, [secret])).toBe(`a ${REDACTED} b`);
    expect(redact('abcdefgh-123456', ['abcdefgh', 'abcdefgh-123456'])).toBe(REDACTED);
  });

  it('ignores missing and too-short secrets', () => {
    expect(redact('a b c', [undefined, '', 'a', 'abc'])).toBe('a b c');
  });

  it('binds a redactor', () => {
    const scrub = createRedactor([token]);
    expect(scrub(`x${token}y`)).toBe(`x${REDACTED}y`);
  });
});
