import { createHash } from 'node:crypto';

/** Same JSON for the same value regardless of key order. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${stableJson(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function toolCallKey(name: string, input: unknown): string {
  return `${name}:${createHash('sha256').update(stableJson(input)).digest('hex').slice(0, 16)}`;
}

export type StuckVerdict = { action: 'none' } | { action: 'redirect'; note: string } | { action: 'stop'; reason: string };

/**
 * Detects a model repeating the same failing tool call. The first time one call (name + input)
 * has failed `limit` times the loop redirects the model once with a note; if the model then
 * keeps failing the same way (that call again, or any call reaching the limit), the loop stops.
 */
export class StuckDetector {
  private readonly failures = new Map<string, number>();
  private redirected = false;
  private redirectedKey: string | undefined;

  constructor(private readonly limit: number) {}

  record(name: string, input: unknown, isError: boolean): StuckVerdict {
    const key = toolCallKey(name, input);
    if (!isError) return { action: 'none' };
    const count = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, count);
    if (this.redirected && (key === this.redirectedKey || count >= this.limit)) {
      return { action: 'stop', reason: `the same failing ${name} call was repeated after a redirect (${count} failures)` };
    }
    if (count >= this.limit && !this.redirected) {
      this.redirected = true;
      this.redirectedKey = key;
      return {
        action: 'redirect',
        note:
          `You have made the same ${name} call ${count} times and it failed every time. Repeating it will not work. ` +
          'Stop, re-read the error, look at the relevant files again and try a different approach. If the ticket ' +
          'cannot be done, call finish and explain why.',
      };
    }
    return { action: 'none' };
  }
}
