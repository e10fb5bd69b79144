import { createHash } from 'node:crypto';
import type { CountTokensRequest } from './request';

/*
 * Prompt caching as the Messages API reports it, close enough that the agent loop's cache
 * discipline (and its cost arithmetic) can be tested offline.
 *
 * The prompt is the sequence of blocks tools → system → messages (a string system or message
 * content counts as one text block). A block with `cache_control` is a breakpoint; at most 4.
 * Token estimate: ceil(characters / 4) of each block's JSON without its `cache_control` — the
 * same estimate `count_tokens` returns. Not modelled: per-message framing tokens, images,
 * thinking blocks, the tools/system invalidation rules when only tool_choice changes.
 *
 * Per request:
 *  - read  = the longest cached prefix ending at a breakpoint or at one of the 20 blocks before
 *            it (the API's automatic lookback), so a breakpoint that moves to the newest message
 *            each turn still hits what the previous turn wrote;
 *  - write = from there up to the last breakpoint, and every breakpoint's prefix is stored;
 *  - input = the rest, after the last breakpoint (or everything, if nothing is cacheable).
 * A prefix shorter than the model's minimum (1024 tokens, 2048 for Haiku) is neither read nor
 * written. Entries live 5 minutes (1 hour with `ttl: '1h'`), refreshed by each read or write.
 * The cache is per replay session and per model.
 */

export const MAX_BREAKPOINTS = 4;
export const LOOKBACK_BLOCKS = 20;
const FIVE_MINUTES_MS = 5 * 60_000;
const ONE_HOUR_MS = 60 * 60_000;

export function estimateTokens(value: unknown): number {
  return Math.ceil((JSON.stringify(value) ?? '').length / 4);
}

export function minCacheableTokens(model: string): number {
  return model.includes('haiku') ? 2048 : 1024;
}

interface PromptBlock {
  tokens: number;
  /** Tokens of the prefix up to and including this block. */
  prefixTokens: number;
  /** Hash of the model and the prefix up to and including this block. */
  prefixHash: string;
  breakpoint: { ttlMs: number; ttl: '5m' | '1h' } | undefined;
}

export interface CacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

export class TooManyBreakpointsError extends Error {
  constructor(readonly found: number) {
    super(`A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${found}.`);
  }
}

function withoutCacheControl(block: object): object {
  if (!('cache_control' in block)) return block;
  const { cache_control: _ignored, ...rest } = block;
  return rest;
}

/** The prompt as an ordered list of blocks with cumulative tokens and hashes. */
export function promptBlocks(request: CountTokensRequest): PromptBlock[] {
  // `hashed` is what identifies the block in the cache (a message block with its role);
  // `counted` is what its tokens are estimated from.
  const items: { hashed: unknown; counted: object; cacheControl: unknown }[] = [];
  const addBlock = (block: object, role?: string): void => {
    const counted = withoutCacheControl(block);
    const cacheControl = 'cache_control' in block ? block.cache_control : undefined;
    items.push({ hashed: role === undefined ? counted : { role, block: counted }, counted, cacheControl });
  };
  for (const tool of request.tools ?? []) addBlock(tool);
  if (typeof request.system === 'string') addBlock({ type: 'text', text: request.system });
  else for (const block of request.system ?? []) addBlock(block);
  for (const message of request.messages) {
    if (typeof message.content === 'string') addBlock({ type: 'text', text: message.content }, message.role);
    else for (const block of message.content) addBlock(block, message.role);
  }

  const blocks: PromptBlock[] = [];
  let prefixTokens = 0;
  let prefixHash = createHash('sha256').update(request.model).digest('hex');
  for (const item of items) {
    const tokens = estimateTokens(item.counted);
    prefixTokens += tokens;
    prefixHash = createHash('sha256').update(prefixHash).update(JSON.stringify(item.hashed)).digest('hex');
    const ttl = ttlOf(item.cacheControl);
    blocks.push({
      tokens,
      prefixTokens,
      prefixHash,
      breakpoint: ttl === undefined ? undefined : { ttl, ttlMs: ttl === '1h' ? ONE_HOUR_MS : FIVE_MINUTES_MS },
    });
  }
  return blocks;
}

function ttlOf(cacheControl: unknown): '5m' | '1h' | undefined {
  if (typeof cacheControl !== 'object' || cacheControl === null) return undefined;
  return 'ttl' in cacheControl && cacheControl.ttl === '1h' ? '1h' : '5m';
}

export function totalTokens(request: CountTokensRequest): number {
  return promptBlocks(request).at(-1)?.prefixTokens ?? 0;
}

export class PromptCache {
  /** prefix hash → expiry (ms since epoch) and the TTL it is refreshed with. */
  private readonly entries = new Map<string, { expiresAt: number; ttlMs: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly lookbackBlocks = LOOKBACK_BLOCKS,
  ) {}

  /** Usage for this request, and the cache updated as the API would after processing it. */
  process(request: CountTokensRequest): CacheUsage {
    const blocks = promptBlocks(request);
    const breakpoints = blocks.flatMap((block, index) => (block.breakpoint ? [index] : []));
    if (breakpoints.length > MAX_BREAKPOINTS) throw new TooManyBreakpointsError(breakpoints.length);
    const total = blocks.at(-1)?.prefixTokens ?? 0;
    const minimum = minCacheableTokens(request.model);
    const now = this.now();
    this.evictExpired(now);

    let readEnd = -1;
    for (const breakpoint of breakpoints) {
      for (let index = breakpoint; index >= 0 && index > breakpoint - this.lookbackBlocks; index--) {
        const block = blocks[index];
        if (!block || index <= readEnd || block.prefixTokens < minimum) break;
        if (this.entries.has(block.prefixHash)) {
          readEnd = index;
          break;
        }
      }
    }
    const read = readEnd >= 0 ? (blocks[readEnd]?.prefixTokens ?? 0) : 0;
    if (readEnd >= 0) this.refresh(blocks[readEnd]?.prefixHash, now);

    const written = { '5m': 0, '1h': 0 };
    let writtenUpTo = read;
    for (const index of breakpoints) {
      const block = blocks[index];
      if (!block?.breakpoint || block.prefixTokens < minimum) continue;
      const previous = this.entries.get(block.prefixHash);
      this.entries.set(block.prefixHash, {
        expiresAt: now + Math.max(block.breakpoint.ttlMs, previous?.ttlMs ?? 0),
        ttlMs: Math.max(block.breakpoint.ttlMs, previous?.ttlMs ?? 0),
      });
      if (block.prefixTokens > writtenUpTo) {
        written[block.breakpoint.ttl] += block.prefixTokens - writtenUpTo;
        writtenUpTo = block.prefixTokens;
      }
    }
    const creation = written['5m'] + written['1h'];
    return {
      input_tokens: total - read - creation,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: creation,
      cache_creation: { ephemeral_5m_input_tokens: written['5m'], ephemeral_1h_input_tokens: written['1h'] },
    };
  }

  private refresh(hash: string | undefined, now: number): void {
    const entry = hash === undefined ? undefined : this.entries.get(hash);
    if (hash !== undefined && entry) this.entries.set(hash, { ...entry, expiresAt: now + entry.ttlMs });
  }

  private evictExpired(now: number): void {
    for (const [hash, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(hash);
  }
}
