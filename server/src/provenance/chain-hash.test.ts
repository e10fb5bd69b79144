import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { canonicalEvent, canonicalParts, eventHash, wellFormed } from './chain-hash';

const fields = { taskId: 't_1', seq: 7, type: 'tool.called', ts: '2026-12-07T23:00:00.000Z', data: { name: 'search', input: { q: 'x' } } };

describe('canonical event hashing', () => {
  it('is RFC 8785: keys sorted at every depth, no whitespace, numbers in their shortest form', () => {
    const text = canonicalEvent({ ...fields, data: { z: 1, a: { y: 1e21, b: 0.1, c: -0 }, m: [3, 'é', null] } });
    expect(text).toBe('{"data":{"a":{"b":0.1,"c":0,"y":1e+21},"m":[3,"é",null],"z":1},"seq":7,"taskId":"t_1","ts":"2026-12-07T23:00:00.000Z","type":"tool.called"}');
  });

  it('does not depend on the order a store wrote keys in', () => {
    const shuffled = { ...fields, data: JSON.parse('{"input":{"q":"x"},"name":"search"}') };
    expect(eventHash('', shuffled)).toBe(eventHash('', fields));
  });

  it('is sha256 over the previous hash (hex) followed by the canonical JSON', () => {
    const previous = 'ab'.repeat(32);
    const expected = createHash('sha256').update(previous + canonicalize(fields)).digest('hex');
    expect(eventHash(previous, fields)).toBe(expected);
    expect(eventHash('', fields)).toBe(createHash('sha256').update(canonicalize(fields) ?? '').digest('hex'));
  });

  it('changes with every stored field and with the previous hash', () => {
    const base = eventHash('', fields);
    const variants = [
      { ...fields, taskId: 't_2' }, { ...fields, seq: 8 }, { ...fields, type: 'tool.finished' },
      { ...fields, ts: '2026-12-07T23:00:00.001Z' }, { ...fields, data: { name: 'search', input: { q: 'y' } } },
    ];
    for (const variant of variants) expect(eventHash('', variant)).not.toBe(base);
    expect(eventHash('0'.repeat(64), fields)).not.toBe(base);
  });

  it('splits around the seq even when the data holds the same key names (the Postgres writer joins the parts around its seq)', () => {
    const tricky = { ...fields, data: { a: 1, seq: 0, taskId: 'evil', z: { seq: 0, taskId: '"seq":0,' } } };
    const { before, after } = canonicalParts(tricky);
    expect(`${before}${tricky.seq}${after}`).toBe(canonicalize(tricky));
    expect(`${before}123456${after}`).toBe(canonicalize({ ...tricky, seq: 123456 }));
  });

  it('replaces lone surrogates (which RFC 8785 refuses) and keeps well-formed text, pairs included, as it is', () => {
    const data = { text: 'cut \uD83D', pair: '\uD83D\uDE00', list: ['\uDE00x'], ['k\uD800']: 1 };
    const fixed = wellFormed(data);
    expect(fixed).toEqual({ text: 'cut \uFFFD', pair: '\uD83D\uDE00', list: ['\uFFFDx'], ['k\uFFFD']: 1 });
    expect(() => eventHash('', { ...fields, data })).toThrow(/canonicalised/);
    expect(eventHash('', { ...fields, data: fixed })).toMatch(/^[0-9a-f]{64}$/);
    const clean = { a: ['x'], b: { c: 'y' } };
    expect(wellFormed(clean)).toBe(clean);
  });
});
