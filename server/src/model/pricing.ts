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

// Public list prices (platform.claude.com pricing page, November 2026). 5-minute cache writes are
// 1.25 × input and 1-hour writes 2 × input; cache reads are 0.1 × input, less on the newest models.
const price = (input: number, output: number, cacheRead: number): ModelPrices => ({
  input,
  output,
  cacheWrite: input * 1.25,
  cacheWrite1h: input * 2,
  cacheRead,
});
const SONNET_4 = price(3, 15, 0.3);
const SONNET_5 = price(2, 10, 0.2);
const SONNET_5_5 = price(2, 10, 0.1);
const OPUS_4 = price(15, 75, 1.5);
const OPUS_4_5 = price(5, 25, 0.5);
const OPUS_5_5 = price(4, 20, 0.2);
const HAIKU_3_5 = price(0.8, 4, 0.08);
const HAIKU_4_5 = price(1, 5, 0.1);
/** The price for prompts up to 100k tokens; longer Haiku 5.5 prompts cost 5 × more (not modelled). */
const HAIKU_5_5 = price(0.1, 0.5, 0.01);
const FABLE_5 = price(10, 50, 1);
const FABLE_5_1 = price(10, 50, 0.25);

/**
 * The default table. A deployment overrides or extends it through config (`mergePrices`): the
 * table is data, not logic, so a price change never needs a code change.
 */
export const DEFAULT_PRICES: PriceTable = {
  'claude-sonnet-5-5': SONNET_5_5,
  'claude-sonnet-5': SONNET_5,
  'claude-sonnet-4-6': SONNET_4,
  'claude-sonnet-4-5': SONNET_4,
  'claude-sonnet-4': SONNET_4,
  'claude-3-7-sonnet': SONNET_4,
  'claude-opus-5-5': OPUS_5_5,
  'claude-opus-5': OPUS_4_5,
  'claude-opus-4-8': OPUS_4_5,
  'claude-opus-4-7': OPUS_4_5,
  'claude-opus-4-6': OPUS_4_5,
  'claude-opus-4-5': OPUS_4_5,
  'claude-opus-4-1': OPUS_4,
  'claude-opus-4': OPUS_4,
  'claude-haiku-5-5': HAIKU_5_5,
  'claude-haiku-4-5': HAIKU_4_5,
  'claude-3-5-haiku': HAIKU_3_5,
  'claude-fable-5-1': FABLE_5_1,
  'claude-fable-5': FABLE_5,
  'claude-mythos-5-1': FABLE_5_1,
  'claude-mythos-5': FABLE_5,
  // Family fallbacks for ids the table does not know yet (matched by word, see pricesFor).
  sonnet: SONNET_4,
  opus: OPUS_4_5,
  haiku: HAIKU_4_5,
  fable: FABLE_5_1,
  mythos: FABLE_5_1,
};

export function mergePrices(base: PriceTable, overrides: PriceTable | undefined): PriceTable {
  return { ...base, ...(overrides ?? {}) };
}

/**
 * Prices for a model id: exact key, else the longest key that prefixes the id, else the family
 * word (opus/sonnet/haiku/fable/mythos) in the id. An id with none of these is priced as Sonnet rather than
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
  for (const family of ['opus', 'haiku', 'sonnet', 'fable', 'mythos'] as const) {
    const prices = table[family];
    if (model.includes(family) && prices) return prices;
  }
  return table.sonnet ?? SONNET_4;
}

/**
 * Whether `model` has prices of its own in `table` — an exact key or a key that prefixes the id —
 * rather than only the family-word or Sonnet fallback of `pricesFor`. A model a deployment names
 * for routing (`model.routine`, `routineModel` in `.dockhand/policy.yml`) must be one of these, so
 * its cost per merged PR is its own and a typo is an error instead of a Sonnet price.
 */
export function hasOwnPrices(model: string, table: PriceTable = DEFAULT_PRICES): boolean {
  return Object.keys(table).some((key) => key.startsWith('claude-') && model.startsWith(key));
}

/** The error text for a model without prices of its own: what is wrong and the ids that are known. */
export function unpricedModelMessage(model: string, table: PriceTable = DEFAULT_PRICES): string {
  const known = Object.keys(table).filter((key) => key.startsWith('claude-'));
  return `model ${JSON.stringify(model)} has no prices in model/pricing.ts (known: ${known.join(', ')}); name one of them, or a dated id that starts with one`;
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

/** The whole prompt of a response: the uncached, cache-read and cache-written parts together. */
export function promptTokensOf(usage: BilledUsage): number {
  return usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
}
