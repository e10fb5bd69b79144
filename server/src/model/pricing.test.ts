import { describe, expect, it } from 'vitest';
import { DEFAULT_PRICES, costOf, hasOwnPrices, mergePrices, pricesFor, promptTokensOf } from './pricing';

const sonnet = { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 };

describe('costOf', () => {
  it('reproduces the design figure for a cached 40-turn task: about $2.15', () => {
    // Each turn reads the 54k stable prefix from the cache, writes the 6k new tokens to the
    // cache (they become next turn's prefix) and produces 1k output tokens.
    const perTurn = costOf(
      { input_tokens: 0, cache_read_input_tokens: 54_000, cache_creation_input_tokens: 6_000, output_tokens: 1_000 },
      sonnet,
    );
    expect(perTurn).toBeCloseTo(0.0162 + 0.0225 + 0.015, 10);
    const total = 40 * perTurn;
    expect(total).toBeCloseTo(2.148, 10);
    expect(total.toFixed(2)).toBe('2.15');
  });

  it('reproduces the design figure for the same task without caching: $7.80', () => {
    const perTurn = costOf(
      { input_tokens: 60_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 1_000 },
      sonnet,
    );
    expect(40 * perTurn).toBeCloseTo(7.8, 10);
  });

  it('treats null cache counters as zero', () => {
    const cost = costOf(
      { input_tokens: 1_000_000, output_tokens: 0, cache_creation_input_tokens: null, cache_read_input_tokens: null },
      sonnet,
    );
    expect(cost).toBe(3);
  });

  it('bills 1-hour cache writes at the 1-hour rate', () => {
    const cost = costOf(
      {
        input_tokens: 0,
        output_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 2_000_000,
        cache_creation: { ephemeral_1h_input_tokens: 1_000_000, ephemeral_5m_input_tokens: 1_000_000 },
      },
      { ...sonnet, cacheWrite1h: 6 },
    );
    expect(cost).toBeCloseTo(3.75 + 6, 10);
  });
});

describe('pricesFor', () => {
  it('matches exact ids, dated ids by prefix, and unknown ids by family', () => {
    expect(pricesFor('claude-sonnet-4-5')).toMatchObject(sonnet);
    expect(pricesFor('claude-sonnet-4-5-20250929')).toMatchObject(sonnet);
    expect(pricesFor('claude-opus-4-1-20250805').input).toBe(15);
    expect(pricesFor('claude-opus-4-5-20251101').input).toBe(5);
    expect(pricesFor('claude-haiku-4-5').output).toBe(5);
    expect(pricesFor('claude-3-5-haiku-latest').input).toBe(0.8);
    expect(pricesFor('claude-haiku-9').input).toBe(1);
    expect(pricesFor('some-unknown-model').input).toBe(3);
    expect(pricesFor('claude-sonnet-5-5')).toMatchObject({ input: 2, output: 10, cacheRead: 0.1 });
    expect(pricesFor('claude-sonnet-5')).toMatchObject({ input: 2, cacheRead: 0.2 });
    expect(pricesFor('claude-fable-5-2').output).toBe(50);
  });

  it('lets config override and extend the table', () => {
    const table = mergePrices(DEFAULT_PRICES, {
      'claude-sonnet-4-5': { input: 2, output: 10, cacheWrite: 2.5, cacheRead: 0.2 },
      'in-house-model': { input: 0.5, output: 1, cacheWrite: 0.6, cacheRead: 0.05 },
    });
    expect(pricesFor('claude-sonnet-4-5-20250929', table).input).toBe(2);
    expect(pricesFor('in-house-model', table).output).toBe(1);
    expect(pricesFor('claude-opus-4-5', table).input).toBe(5);
  });
});

describe('promptTokensOf', () => {
  it('adds the uncached, read and written parts of the prompt', () => {
    expect(
      promptTokensOf({ input_tokens: 6_000, cache_read_input_tokens: 54_000, cache_creation_input_tokens: 1_000, output_tokens: 9 }),
    ).toBe(61_000);
  });
});

describe('hasOwnPrices', () => {
  it('knows ids with a price key of their own (exact or dated), not ids priced only by family word or the Sonnet fallback', () => {
    expect(hasOwnPrices('claude-haiku-4-5')).toBe(true);
    expect(hasOwnPrices('claude-haiku-4-5-20251001')).toBe(true);
    expect(hasOwnPrices('claude-haiku-4.5')).toBe(false);
    expect(hasOwnPrices('haiku')).toBe(false);
    expect(hasOwnPrices('gpt-4o')).toBe(false);
  });
});
