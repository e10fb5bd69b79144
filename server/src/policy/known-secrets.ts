import type { ChangedFile } from './diff';

/**
 * Stored values the gate blocks, not only masks: a repository secret (`secrets/service.ts`,
 * `maskInto`) or another value the server holds, found in a diff's added lines or in the words
 * that go with it, in its raw, URL-encoded or base64 form. The violation names the secret's
 * place and never the value (no excerpt). Masking alone would publish a PR whose code holds a
 * marker where the key was; the gate stops it before that.
 */
export const STORED_SECRET_RULE = 'secret:stored-secret';

/** Shorter values are not looked for: "ab" would be found everywhere (as `mask.ts` masks them). */
const MIN_LENGTH = 6;

/** The forms looked for: raw, URL-encoded, base64 (padded or not) and base64url. */
export function storedSecretForms(value: string): string[] {
  const base64 = Buffer.from(value, 'utf8').toString('base64');
  const forms = [value, encodeURIComponent(value), base64, base64.replace(/=+$/, ''), Buffer.from(value, 'utf8').toString('base64url')];
  return [...new Set(forms)].filter((form) => form.length >= MIN_LENGTH);
}

function formsOf(known: readonly (string | undefined)[]): string[] {
  return [...new Set(known.filter((value): value is string => typeof value === 'string' && value.length >= MIN_LENGTH).flatMap(storedSecretForms))];
}

/** The first line (1-based) of `lines` holding any form, or undefined. */
function firstLineWith(lines: readonly { line: number; text: string }[], forms: readonly string[]): number | undefined {
  return lines.find((line) => forms.some((form) => line.text.includes(form)))?.line;
}

/** Added lines holding a stored value, one violation per file. */
export function storedSecretInDiff(files: readonly ChangedFile[], known: readonly (string | undefined)[]): { path: string; line: number }[] {
  const forms = formsOf(known);
  if (forms.length === 0) return [];
  const found: { path: string; line: number }[] = [];
  for (const file of files) {
    const line = firstLineWith(file.added, forms);
    if (line !== undefined) found.push({ path: file.path, line });
  }
  return found;
}

/** The line (1-based) of `text` holding a stored value, or undefined. */
export function storedSecretInText(text: string, known: readonly (string | undefined)[]): number | undefined {
  const forms = formsOf(known);
  if (forms.length === 0) return undefined;
  return firstLineWith(text.split('\n').map((line, index) => ({ line: index + 1, text: line })), forms);
}
