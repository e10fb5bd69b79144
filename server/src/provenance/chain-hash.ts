import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { DockhandError } from '../errors';

/*
 * The hash of one event in its task's chain (issue #33):
 *
 *   hash_n = sha256( utf8( hash_{n-1} as lowercase hex ‖ JCS({ taskId, seq, type, ts, data }) ) )
 *
 * JCS is RFC 8785 (JSON Canonicalization Scheme), through the maintained `canonicalize` package:
 * the same JSON value gives the same bytes whatever the key order or number spelling a store
 * wrote, and a verifier in another language can recompute it with any JCS library. The first
 * chained event of a task has no predecessor hash (the empty string). Pure: no I/O, so the
 * stores (which write the hash in the event's own transaction) and the verifier share it.
 */

export interface ChainedFields {
  taskId: string;
  seq: number;
  type: string;
  ts: string;
  data: unknown;
}

/** `canonical(event)` split around its seq, for a writer that learns the seq inside SQL (Postgres). */
export interface CanonicalParts {
  before: string;
  after: string;
}

// JCS sorts keys, so the object reads `{"data":…,"seq":N,"taskId":…,"ts":…,"type":…}`. The marker's
// last occurrence is the real one: what follows it is three JSON strings, and a string cannot hold
// an unescaped `"`. The data before it may hold the same characters (a nested `seq` key).
const SEQ_MARKER = ',"seq":0,"taskId":';

/**
 * A string with a lone UTF-16 surrogate is not Unicode text and RFC 8785 refuses it, so the event
 * could not be hashed. Such strings (a model's output cut mid-character, a binary file read as
 * text) are stored with U+FFFD in place of each lone surrogate: the stored event is then exactly
 * what was hashed.
 */
export function wellFormed<T>(value: T): T {
  return repair(value) as T;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

function repair(value: unknown): unknown {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? value.replace(LONE_SURROGATES, '\uFFFD') : value;
  if (Array.isArray(value)) {
    let changed = false;
    const items = value.map((item) => {
      const fixed = repair(item);
      if (fixed !== item) changed = true;
      return fixed;
    });
    return changed ? items : value;
  }
  if (value !== null && typeof value === 'object') {
    let changed = false;
    const entries = Object.entries(value).map(([key, item]) => {
      const fixedKey = repair(key);
      const fixed = repair(item);
      if (fixed !== item || fixedKey !== key) changed = true;
      return [fixedKey, fixed];
    });
    return changed ? Object.fromEntries(entries) : value;
  }
  return value;
}

function jcs(value: unknown): string {
  try {
    const text = canonicalize(value);
    if (text === undefined) throw new Error('the value has no JSON form');
    return text;
  } catch (error) {
    throw new DockhandError('bad_request', `event data cannot be canonicalised (RFC 8785): ${error instanceof Error ? error.message : String(error)}`, { field: 'data' });
  }
}

/** The canonical JSON of an event's stored fields, minus its seq (see `CanonicalParts`). */
export function canonicalParts(fields: Omit<ChainedFields, 'seq'>): CanonicalParts {
  const whole = jcs({ taskId: fields.taskId, seq: 0, type: fields.type, ts: fields.ts, data: fields.data });
  const at = whole.lastIndexOf(SEQ_MARKER);
  if (at < 0) throw new DockhandError('internal', 'canonical event has no seq field');
  return { before: whole.slice(0, at + ',"seq":'.length), after: whole.slice(at + ',"seq":0'.length) };
}

/** RFC 8785 canonical JSON of an event's stored fields. */
export function canonicalEvent(fields: ChainedFields): string {
  const { before, after } = canonicalParts(fields);
  return `${before}${fields.seq}${after}`;
}

/** hash_n from hash_{n-1} (`''` for a task's first chained event) and event n's stored fields. */
export function eventHash(previous: string, fields: ChainedFields): string {
  return hashOfParts(previous, canonicalParts(fields), fields.seq);
}

/** `eventHash` from parts already made: a verifier tries one event at several seqs. */
export function hashOfParts(previous: string, parts: CanonicalParts, seq: number): string {
  return createHash('sha256').update(previous, 'utf8').update(`${parts.before}${seq}${parts.after}`, 'utf8').digest('hex');
}
