/**
 * Redaction of known secrets (push tokens, API keys the server holds) from text that leaves the
 * process: logs, events, PR bodies, error messages. It replaces exact occurrences, including the
 * URL-encoded and base64 forms a token takes in URLs and Basic auth headers. It cannot find a
 * secret it was not given; the policy's secret scan is the net for those.
 */

export const REDACTED = '[REDACTED]';

/** Secrets shorter than this are not redacted: replacing "ab" everywhere would wreck the text. */
const MIN_SECRET_LENGTH = 6;

function formsOf(secret: string): string[] {
  const forms = new Set<string>([secret, encodeURIComponent(secret)]);
  // Basic auth sends base64("x-access-token:" + token); that prefix is 15 bytes, a multiple of 3,
  // so the token's own base64 appears verbatim inside the header.
  forms.add(Buffer.from(secret).toString('base64').replace(/=+$/, ''));
  return [...forms].filter((form) => form.length >= MIN_SECRET_LENGTH);
}

export function redact(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  const forms = secrets
    .filter((secret): secret is string => secret !== undefined && secret.length >= MIN_SECRET_LENGTH)
    .flatMap(formsOf)
    .sort((a, b) => b.length - a.length); // longest first, so a secret containing another goes whole
  for (const form of forms) out = out.split(form).join(REDACTED);
  return out;
}

/** A redactor bound to a fixed set of secrets (e.g. for a logger's serializer). */
export function createRedactor(secrets: ReadonlyArray<string | undefined>): (text: string) => string {
  const list = [...secrets];
  return (text) => redact(text, list);
}
