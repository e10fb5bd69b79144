import { describe, expect, it } from 'vitest';
import { applyMutation, mutationsOf, withoutTests } from './mutate';

const AVA = `import test from 'ava';
import yn from '.';

test('truthy cases', t => {
\tt.true(yn('y'));
});

test('falsey cases', t => {
\tt.false(yn('n'));
});

test.failing('one line', t => t.is(yn('x'), undefined));

test('last', t => {
\tt.pass();
});
`;

describe('withoutTests', () => {
  it('removes the named top-level blocks, one-line ones too, and keeps the rest as written', () => {
    const result = withoutTests(AVA, ['falsey cases', 'one line']);
    expect(result.missing).toEqual([]);
    expect(result.left).toBe(2);
    expect(result.text).toBe(`import test from 'ava';
import yn from '.';

test('truthy cases', t => {
\tt.true(yn('y'));
});

test('last', t => {
\tt.pass();
});
`);
  });

  it('names the titles it found no block for and counts what is left', () => {
    const result = withoutTests(AVA, ['truthy cases', 'falsey cases', 'one line', 'last', 'nowhere']);
    expect(result.missing).toEqual(['nowhere']);
    expect(result.left).toBe(0);
  });
});

describe('mutationsOf', () => {
  it('mutates inside functions only, never inside strings, and applies to the line it was made for', () => {
    const text = "const limit = 1;\nfunction clamp(value) {\n  if (value > limit) return 'a > b';\n  return value;\n}\n";
    const mutations = mutationsOf('src/clamp.js', text);
    expect(mutations.map((mutation) => mutation.after)).toEqual(["  if (value >= limit) return 'a > b';"]);
    expect(applyMutation(text, mutations[0]!)).toContain('value >= limit');
    expect(() => applyMutation('other\n', mutations[0]!)).toThrow(/not the line/);
  });
});
