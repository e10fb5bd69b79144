import { createHash } from 'node:crypto';

/*
 * Planted bugs, SWE-smith style: one small mutation of one line of a source file (an operator,
 * a comparison, a boolean, an off-by-one), inside a function. Whether it is a bug worth keeping
 * is decided by running the tests (make.ts): only mutations that make tests fail become instances.
 * Lines that are comments, imports or module-level declarations are left alone, as are tokens
 * inside string literals.
 */

export interface Mutation {
  file: string;
  /** 1-based line. */
  line: number;
  before: string;
  after: string;
  /** What was changed, e.g. "`<=` → `<`". */
  rule: string;
  /** The function the line belongs to, when it can be told. */
  functionName?: string;
}

const RULES: Array<{ pattern: RegExp; replace: string; rule: string; python?: boolean; js?: boolean }> = [
  { pattern: / <= /, replace: ' < ', rule: '`<=` → `<`' },
  { pattern: / >= /, replace: ' > ', rule: '`>=` → `>`' },
  { pattern: / < (?!=)/, replace: ' <= ', rule: '`<` → `<=`' },
  { pattern: / > (?!=)/, replace: ' >= ', rule: '`>` → `>=`' },
  { pattern: / === /, replace: ' !== ', rule: '`===` → `!==`', js: true },
  { pattern: / !== /, replace: ' === ', rule: '`!==` → `===`', js: true },
  { pattern: / == /, replace: ' != ', rule: '`==` → `!=`', python: true },
  { pattern: / != /, replace: ' == ', rule: '`!=` → `==`', python: true },
  { pattern: / && /, replace: ' || ', rule: '`&&` → `||`', js: true },
  { pattern: / \|\| /, replace: ' && ', rule: '`||` → `&&`', js: true },
  { pattern: / and /, replace: ' or ', rule: '`and` → `or`', python: true },
  { pattern: / or /, replace: ' and ', rule: '`or` → `and`', python: true },
  { pattern: / \+ (?!=)/, replace: ' - ', rule: '`+` → `-`' },
  { pattern: / - (?!=)/, replace: ' + ', rule: '`-` → `+`' },
  { pattern: / \* (?!=)/, replace: ' / ', rule: '`*` → `/`' },
  { pattern: /Math\.floor\(/, replace: 'Math.ceil(', rule: '`Math.floor` → `Math.ceil`', js: true },
  { pattern: /Math\.max\(/, replace: 'Math.min(', rule: '`Math.max` → `Math.min`', js: true },
  { pattern: /Math\.min\(/, replace: 'Math.max(', rule: '`Math.min` → `Math.max`', js: true },
  { pattern: /\bmax\(/, replace: 'min(', rule: '`max` → `min`', python: true },
  { pattern: /\bmin\(/, replace: 'max(', rule: '`min` → `max`', python: true },
  { pattern: /\breturn true\b/, replace: 'return false', rule: '`true` → `false`', js: true },
  { pattern: /\breturn false\b/, replace: 'return true', rule: '`false` → `true`', js: true },
  { pattern: /\breturn True\b/, replace: 'return False', rule: '`True` → `False`', python: true },
  { pattern: /\breturn False\b/, replace: 'return True', rule: '`False` → `True`', python: true },
  { pattern: /(?<![\w.])1(?![\w.])/, replace: '2', rule: '`1` → `2`' },
  { pattern: /(?<![\w.])0(?![\w.])/, replace: '1', rule: '`0` → `1`' },
];

const SKIP_LINE = /^\s*(?:\/\/|#|\*|\/\*|import\b|from\b|export\s+(?:\*|\{)|require\(|@|"""|''')/;

/** Index of the first match outside a string literal (quotes counted before it on the line). */
function outsideStrings(line: string, pattern: RegExp, python: boolean): RegExpExecArray | undefined {
  const global = new RegExp(pattern.source, 'g');
  for (let match = global.exec(line); match; match = global.exec(line)) {
    const before = line.slice(0, match.index);
    const quotes = (before.match(/(?<!\\)["'`]/g) ?? []).length;
    const comment = python ? before.replace(/["'][^"']*["']/g, '').includes('#') : before.includes('//');
    if (quotes % 2 === 0 && !comment) return match;
  }
  return undefined;
}

function functionAt(lines: string[], index: number, python: boolean): string | undefined {
  for (let at = index; at >= 0; at--) {
    const text = lines[at] ?? '';
    const match = python
      ? /^\s*def\s+([A-Za-z_]\w*)/.exec(text)
      : /\bfunction\s+([A-Za-z_$][\w$]*)|^\s*(?:export\s+)?(?:const|let)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?\(|^\s{2,}(?:async\s+)?([A-Za-z_$][\w$]*)\s*\([^)]*\)\s*\{/.exec(text);
    if (match) return match[1] ?? match[2] ?? match[3];
    if (!python && at < index && /^\S/.test(text) && !/^[}\])]/.test(text)) return undefined;
  }
  return undefined;
}

/** Every mutation of `text` the rules allow, in line order; lines at column 0 (declarations) excluded. */
export function mutationsOf(file: string, text: string): Mutation[] {
  const python = file.endsWith('.py');
  const lines = text.split('\n');
  const found: Mutation[] = [];
  lines.forEach((line, index) => {
    if (!/^\s+\S/.test(line) || SKIP_LINE.test(line)) return;
    const functionName = functionAt(lines, index, python);
    if (!functionName) return;
    for (const rule of RULES) {
      if ((python && rule.js) || (!python && rule.python)) continue;
      const match = outsideStrings(line, rule.pattern, python);
      if (!match) continue;
      const after = line.slice(0, match.index) + match[0].replace(rule.pattern, rule.replace) + line.slice(match.index + match[0].length);
      if (after !== line) found.push({ file, line: index + 1, before: line, after, rule: rule.rule, functionName });
    }
  });
  return found;
}

/** The file's text with the mutation applied. */
export function applyMutation(text: string, mutation: Mutation): string {
  const lines = text.split('\n');
  if (lines[mutation.line - 1] !== mutation.before) throw new Error(`${mutation.file}:${mutation.line} is not the line the mutation was made for`);
  lines[mutation.line - 1] = mutation.after;
  return lines.join('\n');
}

/** A fixed, well-spread order (by a hash of file, line and rule), so a set is the same on every machine. */
export function spreadOrder(mutations: Mutation[]): Mutation[] {
  const key = (mutation: Mutation) => createHash('sha256').update(`${mutation.file}:${mutation.line}:${mutation.rule}`).digest('hex');
  return [...mutations].sort((a, b) => key(a).localeCompare(key(b)));
}

const TEST_START = /^(?:test|it)(?:\.\w+)?\(\s*(['"`])((?:\\.|(?!\1).)*)\1/;
const BLOCK_END = /^\}\s*\)\s*;?\s*$/;

/**
 * The test file without the top-level `test('<title>', …)` blocks of `titles` (a repository with
 * one test file cannot have the file hidden: its runner would find nothing to run). `missing`
 * lists the titles no block was found for; `left` counts the top-level tests that remain.
 */
export function withoutTests(text: string, titles: string[]): { text: string; missing: string[]; left: number } {
  const lines = text.split('\n');
  const wanted = new Set(titles);
  const found = new Set<string>();
  const kept: string[] = [];
  let left = 0;
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    const start = TEST_START.exec(line);
    if (!start) {
      kept.push(line);
      continue;
    }
    const title = start[2] ?? '';
    const opens = (line.match(/\(/g) ?? []).length;
    const closes = (line.match(/\)/g) ?? []).length;
    let end = index;
    if (!(opens === closes && /\)\s*;?\s*$/.test(line))) {
      while (end < lines.length && !BLOCK_END.test(lines[end] ?? '')) end++;
    }
    if (!wanted.has(title) || end >= lines.length) {
      left++;
      kept.push(...lines.slice(index, Math.min(end, lines.length - 1) + 1));
      index = end;
      continue;
    }
    found.add(title);
    index = end;
    if ((lines[index + 1] ?? '').trim() === '') index++;
  }
  return { text: kept.join('\n'), missing: titles.filter((title) => !found.has(title)), left };
}
