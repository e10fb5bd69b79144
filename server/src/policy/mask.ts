import { TaskEvent, type NewEvent } from '@dockhand/protocol';
import type { AddedLine } from './diff';
import { replaceMany } from './replace-many';
import { scanSecrets, scanText, secretMarker, type SecretFinding } from './secrets';

/**
 * Masking before anything is written. Every detected secret in a text becomes its marker
 * (`[secret:github-pat …x9Qa]`, see `secretMarker`): events, the stored diff and summary, API
 * answers and log lines hold the masked form only. Masking is deterministic and idempotent (a
 * masked text masks to itself), so digests of a masked diff stay stable across writes.
 *
 * What this does not do: it masks what the scanner finds (`secrets.ts`, `RULES.md`) plus the
 * `known` values the caller holds (the push token, the model key). A secret no rule knows stays.
 */

export interface MaskOptions {
  /** The file the text is the content of, for the lockfile allowances (`isEntropyExempt`). */
  path?: string;
  /** Values the server knows are secret (push token, model API key): masked wherever they appear. */
  known?: readonly (string | undefined)[];
}

export const KNOWN_SECRET_RULE = 'server-credential';

/** Known secrets shorter than this are not masked: replacing "ab" everywhere would wreck the text. */
const MIN_KNOWN_LENGTH = 6;

function knownForms(secret: string): string[] {
  // The raw value, its URL-encoded form, and base64 (Basic auth headers carry base64(user:token)).
  const forms = new Set([secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64').replace(/=+$/, '')]);
  return [...forms].filter((form) => form.length >= MIN_KNOWN_LENGTH);
}

/** The pieces of a finding to replace: a key block's body lines, or the secret itself. */
function piecesOf(finding: SecretFinding): string[] {
  if (finding.secret.startsWith('[secret:')) return []; // already a marker
  if (!finding.secret.includes('\n')) return [finding.secret];
  return finding.secret.split('\n').map((part) => part.trim()).filter((part) => part.length >= 8 && !part.startsWith('-----'));
}

/** Every piece of every finding replaced by its marker, wherever it occurs, in one pass (`replaceMany`). */
function applyFindings(text: string, findings: SecretFinding[]): string {
  const replacements = new Map<string, string>();
  for (const finding of findings) {
    for (const piece of piecesOf(finding)) if (!replacements.has(piece)) replacements.set(piece, secretMarker(finding.rule, piece));
  }
  return replaceMany(text, replacements);
}

function maskKnown(text: string, known: MaskOptions['known']): string {
  const forms = (known ?? []).filter((secret): secret is string => secret !== undefined && secret.length >= MIN_KNOWN_LENGTH).flatMap(knownForms);
  return replaceMany(text, new Map(forms.map((form) => [form, secretMarker(KNOWN_SECRET_RULE, form)])));
}

/** Masks the secrets in free text (a message, a summary, a tool's output, a file's content). */
export function maskSecrets(text: string, options: MaskOptions = {}): string {
  if (text === '') return text;
  const known = maskKnown(text, options.known);
  return applyFindings(known, scanText(known, options.path ?? ''));
}

/**
 * Masks the secrets in a unified diff: every line of every hunk (added, removed and context: a
 * removed secret must not be stored either), judged with its file's path so lockfiles keep their
 * integrity hashes. Markers in the result are still findings of the policy (`findMaskedSecrets`),
 * so a masked diff is blocked just like the diff it came from.
 */
export function maskDiff(diff: string, options: Pick<MaskOptions, 'known'> = {}): string {
  if (diff.trim() === '') return diff;
  const known = maskKnown(diff, options.known);
  // Lines grouped by the file they belong to, numbered by position so key blocks stay contiguous.
  const files = new Map<string, AddedLine[]>();
  let path = '';
  // A binary patch's payload (base85 of deflated bytes) is no text a secret can be read in: it is
  // skipped here, and the policy lists the file by name, size and hash (`binary-files.ts`).
  let binary = false;
  known.split('\n').forEach((text, index) => {
    const header = /^diff --git a\/.* b\/(.*)$/.exec(text) ?? /^\+\+\+ b\/(.*)$/.exec(text);
    if (header) {
      path = unquote(header[1] ?? '');
      binary = false;
    }
    if (text === 'GIT binary patch') binary = true;
    if (binary) return;
    let lines = files.get(path);
    if (!lines) files.set(path, (lines = []));
    const isBody = /^[-+ ]/.test(text) && !/^(?:---|\+\+\+) /.test(text);
    lines.push({ line: index + 1, text: isBody ? text.slice(1) : text });
  });
  return applyFindings(known, [...files].flatMap(([file, lines]) => scanSecrets(file, lines)));
}

function unquote(path: string): string {
  return path.startsWith('"') && path.endsWith('"') ? path.slice(1, -1) : path;
}

/**
 * Keys whose values are identifiers or digests, never prose: left as they are. `envelope`: a signed
 * attestation's DSSE envelope (`attestation.signed`), masked before it was signed
 * (`provenance/attestation.ts`); masking its base64 after would break the signature.
 */
const IDENTIFIER_KEY = /^(?:id|sha|digest|image|signature|envelope|seq|ts|type|state|kind|stage|rule|code|tool|name|model|stopReason|source|change|path|oldPath)$|(?:Id|Sha|Digest|_id)$/;

/**
 * Masks every string inside a JSON-like value (an event's data). `file.changed` patches are
 * masked as diffs of their path. Identifier-like keys (`toolUseId`, `headSha`, `signature` of a
 * thinking block, which the API verifies byte for byte) are left alone.
 */
export function maskDeep(value: unknown, options: MaskOptions = {}, key = ''): unknown {
  if (typeof value === 'string') {
    if (IDENTIFIER_KEY.test(key)) return value;
    return key === 'patch' ? maskPatch(value, options) : maskSecrets(value, options);
  }
  if (Array.isArray(value)) return value.map((item) => maskDeep(item, options, key));
  if (value !== null && typeof value === 'object') {
    const path = 'path' in value && typeof value.path === 'string' ? value.path : options.path;
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) out[name] = maskDeep(item, { ...options, ...(path ? { path } : {}) }, name);
    return out;
  }
  return value;
}

/** A one-file patch without `diff --git` headers (`file.changed`): masked line by line for its path. */
function maskPatch(patch: string, options: MaskOptions): string {
  const known = maskKnown(patch, options.known);
  const lines = known.split('\n').map((text, index) => ({ line: index + 1, text: /^[-+ ]/.test(text) && !/^(?:---|\+\+\+) /.test(text) ? text.slice(1) : text }));
  return applyFindings(known, scanSecrets(options.path ?? '', lines));
}

/**
 * An event with every secret in its data masked, validated again against its schema (so the
 * masked event is still exactly an event of its type). The one place events are masked is the
 * event log's append (`store/hub.ts`), so no writer can miss it.
 */
export function maskEvent(event: NewEvent, known?: readonly (string | undefined)[]): NewEvent {
  const data = maskDeep(event.data, known ? { known } : {});
  const parsed = TaskEvent.parse({ taskId: '', seq: 1, ts: '', type: event.type, data });
  const { taskId: _taskId, seq: _seq, ts: _ts, ...masked } = parsed;
  return masked;
}
