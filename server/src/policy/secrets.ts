import type { AddedLine } from './diff';
import { decodeRuns, joinConcatenations } from './secret-decode';
import { ASSIGNMENT_RULE_IDS, GENERIC_NAME_ALLOW, SECRET_RULES, type SecretRule } from './secret-rules';

/**
 * Secret scanning of the lines a diff adds. Known token formats come from gitleaks' rules
 * (`secret-rules.ts`); a Shannon-entropy check catches long random strings no rule names.
 *
 * Deliberately absent: an inline "allow" comment such as `gitleaks:allow`. The diff is written by
 * the model, so an in-band escape hatch would let it wave its own leak through; a repo owner's
 * override (see `override.ts`) is the only way past a finding.
 */

export interface SecretFinding {
  rule: string;
  description: string;
  line: number;
  /** The offending line with the secret masked, trimmed to a readable length. */
  excerpt: string;
  /** The raw secret. Never put it in an event or a log; use `excerpt`. */
  secret: string;
}

export const HIGH_ENTROPY_RULE = 'high-entropy-string';

/** Bits per character. */
export function shannonEntropy(value: string): number {
  if (value.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) {
    const p = count / value.length;
    entropy -= p * Math.log2(p);
  }
  return entropy;
}

/**
 * The masked form of a secret: its kind and at most its last four characters (none for secrets
 * under 20 characters), e.g. `[secret:github-pat …x9Qa]`. Deterministic, so the same text always
 * masks to the same bytes (an override's diff digest stays valid), and recognisable, so a masked
 * secret in a diff is still a finding (`findMaskedSecrets`).
 */
export function secretMarker(rule: string, secret: string): string {
  const tail = secret.length >= 20 ? secret.slice(-4) : '';
  return /^[A-Za-z0-9]{4}$/.test(tail) ? `[secret:${rule} …${tail}]` : `[secret:${rule}]`;
}

/** A marker written by `secretMarker`; `kind` is the rule id. */
export const SECRET_MARKER = /\[secret:(?<kind>[a-z0-9-]{2,60})(?: …[A-Za-z0-9]{4})?\]/g;

const EXCERPT_MAX = 160;

function excerptOf(lineText: string, secrets: Array<{ rule: string; secret: string }>): string {
  let masked = lineText;
  for (const { rule, secret } of secrets) masked = masked.split(secret).join(secretMarker(rule, secret));
  masked = masked.trim();
  return masked.length > EXCERPT_MAX ? `${masked.slice(0, EXCERPT_MAX - 1)}…` : masked;
}

/**
 * Files where long random strings are expected (integrity hashes, minified bundles, source
 * maps). The named-token rules still run there; only the entropy and generic-assignment checks
 * are skipped, as gitleaks' global allowlist does for lockfiles.
 */
const ENTROPY_EXEMPT_FILES = [
  /(?:^|\/)(?:package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|deno\.lock|bun\.lock)$/,
  /(?:^|\/)(?:Cargo\.lock|go\.sum|go\.work\.sum|poetry\.lock|Pipfile\.lock|uv\.lock|composer\.lock|Gemfile\.lock|gradle\.lockfile|packages\.lock\.json)$/,
  /\.min\.(?:js|css)$/,
  /\.(?:map|svg)$/,
];

export function isEntropyExempt(path: string): boolean {
  return ENTROPY_EXEMPT_FILES.some((pattern) => pattern.test(path));
}

interface Block {
  text: string;
  /** Offsets in `text` where each line starts, and that line's number in the new file. */
  starts: { offset: number; line: AddedLine }[];
}

/** Consecutive added lines become one block so that multi-line rules (key blocks) can match. */
function toBlocks(added: AddedLine[]): Block[] {
  const blocks: Block[] = [];
  let current: Block | undefined;
  let previous: number | undefined;
  for (const line of added) {
    if (!current || previous === undefined || line.line !== previous + 1) {
      current = { text: '', starts: [] };
      blocks.push(current);
    } else {
      current.text += '\n';
    }
    current.starts.push({ offset: current.text.length, line });
    current.text += line.text;
    previous = line.line;
  }
  return blocks;
}

/** Index in `block.starts` of the line holding `offset` (binary search: a block may have 100,000 lines). */
function lineIndexAt(block: Block, offset: number): number {
  let low = 0;
  let high = block.starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (block.starts[mid]!.offset <= offset) low = mid;
    else high = mid - 1;
  }
  return low;
}

function lineAt(block: Block, offset: number): AddedLine {
  return block.starts[lineIndexAt(block, offset)]!.line;
}

/**
 * Spans already claimed by a finding (or an earlier marker), kept per line so that checking a
 * new span costs what its own lines hold, not every finding of the block (a big random file has
 * one finding per line; one list made the scan quadratic).
 */
class Taken {
  private readonly byLine = new Map<number, Span[]>();
  constructor(private readonly block: Block) {}

  private lines(span: Span): number[] {
    const first = lineIndexAt(this.block, span.start);
    const last = lineIndexAt(this.block, Math.max(span.start, span.end - 1));
    const out: number[] = [];
    for (let i = first; i <= last; i += 1) out.push(i);
    return out;
  }

  overlaps(span: Span): boolean {
    return this.lines(span).some((line) => this.byLine.get(line)?.some((other) => span.start < other.end && other.start < span.end) ?? false);
  }

  add(span: Span): void {
    for (const line of this.lines(span)) {
      const spans = this.byLine.get(line);
      if (spans) spans.push(span);
      else this.byLine.set(line, [span]);
    }
  }
}

function passesRuleFilters(rule: SecretRule, secret: string, name: string | undefined): boolean {
  if (rule.entropy !== undefined && shannonEntropy(secret) < rule.entropy) return false;
  if (rule.allow?.some((pattern) => pattern.test(secret))) return false;
  const lower = secret.toLowerCase();
  if (rule.stopwords?.some((word) => lower.includes(word))) return false;
  if (name !== undefined && GENERIC_NAME_ALLOW.test(name)) return false;
  if (name !== undefined && rule.nameAllow?.test(name)) return false;
  return true;
}

/** The pieces of a (possibly multi-line) secret to mask; a `-----BEGIN …-----` header is not secret. */
function secretParts(secret: string): string[] {
  if (!secret.includes('\n')) return [secret];
  return secret.split('\n').filter((part) => part.length >= 8 && !part.startsWith('-----BEGIN'));
}

interface Span {
  start: number;
  end: number;
}

/** Minimum entropy for a random-looking string of this length (about the 1st percentile of random base62). */
export function entropyThreshold(length: number): number {
  return Math.min(4.2 + (length - 32) * 0.025, 4.7);
}

function characterClass(char: string): number {
  if (char >= 'a' && char <= 'z') return 0;
  if (char >= 'A' && char <= 'Z') return 1;
  if (char >= '0' && char <= '9') return 2;
  return 3;
}

/**
 * Share of adjacent characters whose class (lower, upper, digit, other) differs. Random base62
 * sits near 0.6; camelCase identifiers, paths and words near 0.2, which is what separates
 * `HTTPRequestHandlerFactory2024` from a token of the same entropy.
 */
export function classSwitchRate(value: string): number {
  if (value.length < 2) return 0;
  let switches = 0;
  for (let i = 1; i < value.length; i += 1) {
    if (characterClass(value[i]!) !== characterClass(value[i - 1]!)) switches += 1;
  }
  return switches / (value.length - 1);
}

// The lookbehind starts a match only at the start of a run, which keeps the scan linear.
const ENTROPY_CANDIDATE = /(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{32,}/g;
const ENTROPY_MIN_LENGTH = 32;
const URL_BEFORE = /[a-z][a-z0-9+.-]*:\/\/[^\s'"`]*$/i;
const URL_LOOKBACK = 2048;

/** A long string that looks randomly generated: mixed case and digits, busy, high entropy. */
export function looksRandom(candidate: string): boolean {
  const value = candidate.replace(/=+$/, '');
  if (value.length < ENTROPY_MIN_LENGTH) return false;
  if (/^[0-9a-f]+$/i.test(value)) return false; // hex digests: commit SHAs, checksums, colours
  if (value.includes('EXAMPLE')) return false; // documentation values such as AWS's example keys
  if (!/[a-z]/.test(value) || !/[A-Z]/.test(value) || !/[0-9]/.test(value)) return false;
  if (classSwitchRate(value) < 0.35) return false;
  return shannonEntropy(value) >= entropyThreshold(value.length);
}

function scanEntropy(line: AddedLine, taken: Taken, lineStart: number): SecretFinding[] {
  const findings: SecretFinding[] = [];
  ENTROPY_CANDIDATE.lastIndex = 0;
  for (const match of line.text.matchAll(ENTROPY_CANDIDATE)) {
    const candidate = match[0];
    const start = lineStart + match.index;
    if (taken.overlaps({ start, end: start + candidate.length })) continue;
    const before = line.text.slice(Math.max(0, match.index - 8), match.index);
    if (/base64,$/.test(before) || /sha(?:1|256|384|512)-$/.test(before)) continue; // data URIs, SRI hashes
    // Inside a URL, path segments are judged one by one: `owner/repo/blob/<sha>/src` is a link,
    // while a token as one segment or query value is still caught.
    // Only a bounded stretch before the candidate is read: a minified line holds thousands of them.
    const inUrl = URL_BEFORE.test(line.text.slice(Math.max(0, match.index - URL_LOOKBACK), match.index));
    const random = inUrl ? candidate.split('/').some(looksRandom) : looksRandom(candidate);
    if (!random) continue;
    findings.push({
      rule: HIGH_ENTROPY_RULE,
      description: `Random-looking string of ${candidate.length} characters (entropy ${shannonEntropy(candidate).toFixed(2)} bits/char)`,
      line: line.line,
      excerpt: excerptOf(line.text, [{ rule: HIGH_ENTROPY_RULE, secret: candidate }]),
      secret: candidate,
    });
  }
  return findings;
}

function matchesKeywords(rule: SecretRule, lower: string): boolean {
  return rule.keywords.some((keyword) => lower.includes(keyword));
}

/**
 * Could `text` hold anything the scanner finds: a keyword of one of its rules or an entropy
 * candidate? A text for which this is false has no finding, so a caller may skip scanning it
 * (the log's fast path for the many lines with nothing in them).
 */
export function mayHoldSecret(text: string): boolean {
  if (text.search(ENTROPY_CANDIDATE) >= 0) return true;
  const lower = text.toLowerCase();
  return SECRET_RULES.some((rule) => matchesKeywords(rule, lower));
}

const MULTILINE_RULES = SECRET_RULES.filter((rule) => rule.multiline === true);
const LINE_RULES = SECRET_RULES.filter((rule) => rule.multiline !== true);
/** Any line rule's keyword: one test that lets most lines skip the per-rule keyword checks. */
const ANY_LINE_KEYWORD = new RegExp([...new Set(LINE_RULES.flatMap((rule) => rule.keywords))].map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));

/**
 * Runs one rule over `text` (which starts at `offset` within its block) and records findings
 * whose span is not already taken by an earlier rule.
 */
function applyRule(rule: SecretRule, block: Block, text: string, offset: number, taken: Taken, findings: SecretFinding[]): void {
  if (rule.context && !rule.context.test(text)) return;
  rule.regex.lastIndex = 0;
  for (const match of text.matchAll(rule.regex)) {
    const secret = match.groups?.['secret'] ?? match[0];
    const start = offset + match.index + Math.max(0, match[0].indexOf(secret));
    const span = { start, end: start + secret.length };
    if (taken.overlaps(span)) continue;
    if (!passesRuleFilters(rule, secret, match.groups?.['name'])) continue;
    taken.add(span);
    const line = lineAt(block, start);
    findings.push({ rule: rule.id, description: rule.description, line: line.line, excerpt: excerptOf(line.text, secretParts(secret).map((part) => ({ rule: rule.id, secret: part }))), secret });
  }
}

/** How deep decoded text is decoded again (base64 of hex of a token): bounded. */
const MAX_DECODE_DEPTH = 2;
/** Lines longer than this are not searched for concatenations (minified code; keeps it linear). */
const MAX_JOINED_LINE = 4096;

/** The rules' findings in a decoded text (no entropy check: decoding random bytes is noise). */
function rulesIn(text: string, depth: number): SecretFinding[] {
  return scanSecrets('', text.split('\n').map((line, index) => ({ line: index + 1, text: line })), { depth, entropy: false });
}

/** Hex and base64 runs on a line that decode to text holding a secret: the run is the finding. */
function encodedFindings(line: AddedLine, lineStart: number, taken: Taken, depth: number): SecretFinding[] {
  const findings: SecretFinding[] = [];
  for (const run of decodeRuns(line.text)) {
    const inner = rulesIn(run.text, depth + 1)[0];
    const index = line.text.indexOf(run.encoded);
    const span = { start: lineStart + index, end: lineStart + index + run.encoded.length };
    if (!inner || taken.overlaps(span)) continue;
    taken.add(span);
    const rule = inner.rule;
    findings.push({ rule, description: `${inner.description} (${run.encoding}-encoded)`, line: line.line, excerpt: excerptOf(line.text, [{ rule, secret: run.encoded }]), secret: run.encoded });
  }
  return findings;
}

/** Strings split across lines by concatenation, joined and scanned whole (`joinConcatenations`). */
function joinedFindings(block: Block, depth: number): SecretFinding[] {
  const lines = block.starts.map((start) => (start.line.text.length > MAX_JOINED_LINE ? '' : start.line.text));
  const findings: SecretFinding[] = [];
  for (const joined of joinConcatenations(lines)) {
    const found = scanSecrets('', [{ line: 1, text: joined.text }], { depth: depth + 1, entropy: true }).filter((finding) => !finding.secret.startsWith('[secret:'))[0];
    // A secret whole inside one part was not split: the line's own scan reports it.
    if (!found || joined.parts.some((part) => part.includes(found.secret))) continue;
    const line = block.starts[joined.first]!.line;
    // The parts are what stands in the file: masking replaces each (`piecesOf`).
    const secret = joined.parts.filter((part) => part.length > 0).join('\n');
    findings.push({ rule: found.rule, description: `${found.description} (split across ${joined.last - joined.first + 1} lines)`, line: line.line, excerpt: excerptOf(line.text, joined.parts.map((part) => ({ rule: found.rule, secret: part }))), secret });
  }
  return findings;
}

export interface ScanOptions {
  /** Decoding depth reached (`MAX_DECODE_DEPTH`). */
  depth?: number;
  /** The entropy check; off for decoded text. */
  entropy?: boolean;
}

/** Scans the added lines of one file. */
export function scanSecrets(path: string, added: AddedLine[], options: ScanOptions = {}): SecretFinding[] {
  const exempt = isEntropyExempt(path);
  const depth = options.depth ?? 0;
  // Lockfiles and minified files are full of encoded hashes: they are not decoded (precision).
  const decode = !exempt && depth < MAX_DECODE_DEPTH;
  const findings: SecretFinding[] = [];
  for (const block of toBlocks(added)) {
    // Markers of secrets masked earlier are not scanned again (`[secret:github-pat …]` is no `secret: …` assignment).
    const taken = new Taken(block);
    if (block.text.includes('[secret:')) for (const match of block.text.matchAll(SECRET_MARKER)) taken.add({ start: match.index, end: match.index + match[0].length });
    const lowerBlock = block.text.toLowerCase();
    for (const rule of MULTILINE_RULES) {
      if (matchesKeywords(rule, lowerBlock)) applyRule(rule, block, block.text, 0, taken, findings);
    }
    for (const start of block.starts) {
      const lower = start.line.text.toLowerCase();
      if (ANY_LINE_KEYWORD.test(lower)) for (const rule of LINE_RULES) {
        if (exempt && ASSIGNMENT_RULE_IDS.has(rule.id)) continue;
        if (matchesKeywords(rule, lower)) applyRule(rule, block, start.line.text, start.offset, taken, findings);
      }
      if (decode) findings.push(...encodedFindings(start.line, start.offset, taken, depth));
      if (!exempt && options.entropy !== false) findings.push(...scanEntropy(start.line, taken, start.offset));
      findings.push(...findMaskedSecrets(start.line));
    }
    if (decode && block.starts.length > 1) findings.push(...joinedFindings(block, depth));
  }
  return findings.sort((a, b) => a.line - b.line);
}

/**
 * Secrets Dockhand masked before storing the text (`secretMarker`). The stored diff and summary
 * hold markers instead of the values, so a check of the stored form must still see that a secret
 * was there: pushing the marker would publish a broken file, and the finding is the same one the
 * unmasked text produced.
 */
export function findMaskedSecrets(line: AddedLine): SecretFinding[] {
  if (!line.text.includes('[secret:')) return [];
  const findings: SecretFinding[] = [];
  SECRET_MARKER.lastIndex = 0;
  for (const match of line.text.matchAll(SECRET_MARKER)) {
    const kind = match.groups?.['kind'] ?? 'secret';
    findings.push({
      rule: kind,
      description: `${describeRule(kind)} (masked by Dockhand before it was stored)`,
      line: line.line,
      excerpt: excerptOf(line.text, []),
      secret: match[0],
    });
  }
  return findings;
}

function describeRule(id: string): string {
  if (id === HIGH_ENTROPY_RULE) return 'Random-looking string';
  return SECRET_RULES.find((rule) => rule.id === id)?.description ?? `Secret (${id})`;
}

/**
 * Scans free text (a PR title or body, a commit message, a summary, a tool's output): every line
 * is treated as added. `path`, when the text is a file's content, applies the lockfile allowances.
 */
export function scanText(text: string, path = ''): SecretFinding[] {
  if (text === '') return [];
  const added = text.split('\n').map((line, index) => ({ line: index + 1, text: line }));
  return scanSecrets(path, added);
}
