/*
 * Version specs as repositories write them (.nvmrc "22", engines ">=20 <23", packageManager
 * "pnpm@9.1.0+sha512…", .tool-versions "nodejs 20.11.1") matched against a package's published
 * versions. A small subset of node-semver: comparators (= > >= < <=), caret, tilde, x-ranges,
 * hyphen ranges and `||`; prerelease versions are never chosen. Pure.
 */

type Triple = [number, number, number];

function parseVersion(text: string): Triple | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(text.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}

export function compareVersions(a: string, b: string): number {
  const left = parseVersion(a) ?? [0, 0, 0];
  const right = parseVersion(b) ?? [0, 0, 0];
  for (let index = 0; index < 3; index += 1) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

type Bound = { op: '>=' | '>' | '<' | '<=' | '='; version: Triple };

/** A partial version "20", "20.1", "20.x", "*" as [major?, minor?, patch?]. */
function partial(text: string): Array<number | undefined> | undefined {
  const cleaned = text.trim().replace(/^v/, '');
  if (cleaned === '' || cleaned === '*' || cleaned === 'x' || cleaned === 'X') return [];
  const parts = cleaned.split('.');
  if (parts.length > 3) return undefined;
  const numbers: Array<number | undefined> = [];
  for (const part of parts) {
    if (part === 'x' || part === 'X' || part === '*') break;
    if (!/^\d+$/.test(part)) return undefined;
    numbers.push(Number(part));
  }
  return numbers;
}

function lowerOf(parts: Array<number | undefined>): Triple {
  return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0];
}

/** The exclusive upper bound of a partial: "20" → <21.0.0, "20.1" → <20.2.0. */
function upperOf(parts: Array<number | undefined>): Triple | undefined {
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return [(parts[0] ?? 0) + 1, 0, 0];
  if (parts.length === 2) return [parts[0] ?? 0, (parts[1] ?? 0) + 1, 0];
  return undefined;
}

function comparatorBounds(token: string): Bound[] | undefined {
  const match = /^(\^|~|>=|<=|>|<|=)?\s*(.*)$/.exec(token);
  if (!match) return undefined;
  const op = match[1] ?? '';
  // "1.2.3-beta" style suffixes and "+build" metadata are not ranges we pick from.
  const parts = partial((match[2] ?? '').replace(/\+.*$/, ''));
  if (!parts) return undefined;
  const low = lowerOf(parts);
  const high = upperOf(parts);
  switch (op) {
    case '':
    case '=':
      if (parts.length === 3) return [{ op: '=', version: low }];
      return [{ op: '>=', version: low }, ...(high ? [{ op: '<' as const, version: high }] : [])];
    case '>=':
      return [{ op: '>=', version: low }];
    case '>':
      return parts.length === 3 ? [{ op: '>', version: low }] : high ? [{ op: '>=', version: high }] : [];
    case '<':
      return [{ op: '<', version: low }];
    case '<=':
      return parts.length === 3 ? [{ op: '<=', version: low }] : high ? [{ op: '<', version: high }] : [];
    case '^': {
      const [major, minor = 0, patch = 0] = [parts[0] ?? 0, parts[1], parts[2]];
      let upper: Triple;
      if (major > 0 || parts.length < 2) upper = [major + 1, 0, 0];
      else if (minor > 0 || parts.length < 3) upper = [0, minor + 1, 0];
      else upper = [0, 0, patch + 1];
      return [{ op: '>=', version: low }, { op: '<', version: upper }];
    }
    case '~': {
      const upper: Triple = parts.length <= 1 ? [(parts[0] ?? 0) + 1, 0, 0] : [parts[0] ?? 0, (parts[1] ?? 0) + 1, 0];
      return [{ op: '>=', version: low }, { op: '<', version: upper }];
    }
    default:
      return undefined;
  }
}

function compareTriples(a: Triple, b: Triple): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

function satisfiesBound(version: Triple, bound: Bound): boolean {
  const order = compareTriples(version, bound.version);
  switch (bound.op) {
    case '=':
      return order === 0;
    case '>=':
      return order >= 0;
    case '>':
      return order > 0;
    case '<':
      return order < 0;
    case '<=':
      return order <= 0;
  }
}

/** The range as alternatives of bound sets, or undefined when it is not a range this module reads. */
export function parseRange(range: string): Bound[][] | undefined {
  const alternatives: Bound[][] = [];
  for (const alternative of range.split('||')) {
    const text = alternative.trim();
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text);
    if (hyphen) {
      const from = partial(hyphen[1] ?? '');
      const to = partial(hyphen[2] ?? '');
      if (!from || !to) return undefined;
      const upper = to.length === 3 ? { op: '<=' as const, version: lowerOf(to) } : upperOf(to) ? { op: '<' as const, version: upperOf(to) ?? [0, 0, 0] } : undefined;
      alternatives.push([{ op: '>=', version: lowerOf(from) }, ...(upper ? [upper] : [])]);
      continue;
    }
    // ">= 20" is written with a space at times: join an operator to its version.
    const tokens = text.replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1').split(/\s+/).filter((token) => token !== '');
    const bounds: Bound[] = [];
    for (const token of tokens) {
      const parsed = comparatorBounds(token);
      if (!parsed) return undefined;
      bounds.push(...parsed);
    }
    alternatives.push(bounds);
  }
  return alternatives;
}

export function satisfies(version: string, range: string): boolean {
  const triple = parseVersion(version);
  const parsed = parseRange(range);
  if (!triple || !parsed) return false;
  return parsed.some((bounds) => bounds.every((bound) => satisfiesBound(triple, bound)));
}

/** The newest release (no prerelease) in `versions` that satisfies `range`, or undefined. */
export function newestSatisfying(versions: readonly string[], range: string): string | undefined {
  let best: string | undefined;
  for (const version of versions) {
    if (!parseVersion(version) || !satisfies(version, range)) continue;
    if (best === undefined || compareVersions(version, best) > 0) best = version;
  }
  return best;
}

export function isExactVersion(text: string): boolean {
  return parseVersion(text) !== undefined;
}

export function majorOf(version: string): number | undefined {
  return parseVersion(version)?.[0];
}
