import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';

/** US dollars per million tokens, the way Anthropic publishes them. */
export const ModelPrices = z.object({
  input: z.number().min(0),
  output: z.number().min(0),
  /** Writing a 5-minute cache entry (1.25 × input on the public price list). */
  cacheWrite: z.number().min(0),
  /** Writing a 1-hour cache entry (2 × input). Falls back to `cacheWrite` when absent. */
  cacheWrite1h: z.number().min(0).optional(),
  cacheRead: z.number().min(0),
});
export type ModelPrices = z.infer<typeof ModelPrices>;

/** Keys are model ids or id prefixes (`claude-sonnet-4-5` also prices `claude-sonnet-4-5-20250929`). */
export const PriceTable = z.record(z.string(), ModelPrices);
export type PriceTable = z.infer<typeof PriceTable>;

const SONNET: ModelPrices = { input: 3, output: 15, cacheWrite: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const OPUS_4_5: ModelPrices = { input: 5, output: 25, cacheWrite: 6.25, cacheWrite1h: 10, cacheRead: 0.5 };
const OPUS_4: ModelPrices = { input: 15, output: 75, cacheWrite: 18.75, cacheWrite1h: 30, cacheRead: 1.5 };
const HAIKU_4_5: ModelPrices = { input: 1, output: 5, cacheWrite: 1.25, cacheWrite1h: 2, cacheRead: 0.1 };
const HAIKU_3_5: ModelPrices = { input: 0.8, output: 4, cacheWrite: 1, cacheWrite1h: 1.6, cacheRead: 0.08 };

/**
 * Public list prices. A deployment overrides or extends them through config (`mergePrices`);
 * the table is data, not logic, so a price change never needs a code change.
 */
export const DEFAULT_PRICES: PriceTable = {
  'claude-sonnet-4-5': SONNET,
  'claude-sonnet-4': SONNET,
  'claude-3-7-sonnet': SONNET,
  'claude-opus-4-5': OPUS_4_5,
  'claude-opus-4-1': OPUS_4,
  'claude-opus-4': OPUS_4,
  'claude-haiku-4-5': HAIKU_4_5,
  'claude-3-5-haiku': HAIKU_3_5,
  // Class fallbacks for ids the table does not know yet (matched by family word, see pricesFor).
  sonnet: SONNET,
  opus: OPUS_4_5,
  haiku: HAIKU_4_5,
};

export function mergePrices(base: PriceTable, overrides: PriceTable | undefined): PriceTable {
  return { ...base, ...(overrides ?? {}) };
}

/**
 * Prices for a model id: exact key, else the longest key that prefixes the id, else the family
 * word (opus/sonnet/haiku) in the id. An id with none of these is priced as Sonnet rather than
 * as free, so a cost budget never silently stops counting.
 */
export function pricesFor(model: string, table: PriceTable = DEFAULT_PRICES): ModelPrices {
  const exact = table[model];
  if (exact) return exact;
  let best: { key: string; prices: ModelPrices } | undefined;
  for (const [key, prices] of Object.entries(table)) {
    if (model.startsWith(key) && (!best || key.length > best.key.length)) best = { key, prices };
  }
  if (best) return best.prices;
  for (const family of ['opus', 'haiku', 'sonnet'] as const) {
    const prices = table[family];
    if (model.includes(family) && prices) return prices;
  }
  return table.sonnet ?? SONNET;
}

/** The fields of the SDK's `Usage` that cost money; `Anthropic.Usage` fits. */
export type BilledUsage = Pick<
  Anthropic.Usage,
  'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'
> & { cache_creation?: Anthropic.CacheCreation | null };

/**
 * Dollars for one response. `input_tokens` is only the uncached part (the API reports cache
 * reads and writes separately, and the three add up to the whole prompt), so each count is
 * billed once at its own rate. When the API splits writes by TTL, 1-hour writes cost more.
 */
export function costOf(usage: BilledUsage, prices: ModelPrices): number {
  const written = usage.cache_creation_input_tokens ?? 0;
  const written1h = Math.min(written, usage.cache_creation?.ephemeral_1h_input_tokens ?? 0);
  const dollars =
    usage.input_tokens * prices.input +
    usage.output_tokens * prices.output +
    (written - written1h) * prices.cacheWrite +
    written1h * (prices.cacheWrite1h ?? prices.cacheWrite) +
    (usage.cache_read_input_tokens ?? 0) * prices.cacheRead;
  return dollars / 1_000_000;
}
