import pino, { type Logger } from 'pino';
import { maskSecrets } from './policy/mask';
import { mayHoldSecret } from './policy/secrets';

export type { Logger } from 'pino';

/** Paths pino blanks out in every log line: credentials must never reach a log. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["sec-websocket-protocol"]',
  'headers.authorization',
  'token',
  'pushToken',
  '*.token',
  '*.pushToken',
  '*.apiKey',
  'config.forge.pushToken',
  'config.model.apiKey',
  // A Postgres URL may carry a password.
  'databaseUrl',
  '*.databaseUrl',
];

/**
 * Whether a serialized line could hold anything the gate detects: what its scanner looks for
 * (`mayHoldSecret`: a rule keyword or an entropy candidate) or a known value. This is a superset on
 * JSON text (escaping touches only quotes, backslashes and control characters, which no keyword
 * holds and which end a run anyway), so skipping the other lines changes nothing but the cost.
 */
function maySecret(line: string, known: readonly string[]): boolean {
  return known.some((secret) => line.includes(secret)) || mayHoldSecret(line);
}

function maskStrings(value: unknown, known: readonly string[]): unknown {
  // Most values (states, ids, short messages) hold nothing any rule runs on: not scanned.
  if (typeof value === 'string') return maySecret(value, known) ? maskSecrets(value, { known }) : value;
  if (Array.isArray(value)) return value.map((item) => maskStrings(item, known));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) out[name] = maskStrings(item, known);
    return out;
  }
  return value;
}

/**
 * One serialized log line with every secret the content gate detects replaced by its marker
 * (`[secret:github-pat …x9Qa]`, policy/mask.ts), and the `known` values as well. A JSON line is
 * parsed and each string value masked as the text it is (a PEM key's newlines, a quoted password),
 * then written again as one JSON line; a line that is not JSON is masked as text.
 */
export function maskLogLine(line: string, known: readonly string[] = []): string {
  if (!maySecret(line, known)) return line;
  const end = line.endsWith('\n') ? '\n' : '';
  const body = end ? line.slice(0, -1) : line;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return maskSecrets(body, { known }) + end;
  }
  return JSON.stringify(maskStrings(parsed, known)) + end;
}

/** A pino destination that masks each line before the inner one writes it (flush and end pass through). */
export function maskingDestination(inner: pino.DestinationStream, known: readonly string[] = []): pino.DestinationStream {
  const passthrough = inner as pino.DestinationStream & Record<string, unknown>;
  const wrapped: pino.DestinationStream & Record<string, unknown> = {
    write(line: string) {
      return inner.write(maskLogLine(line, known));
    },
  };
  for (const name of ['flush', 'flushSync', 'end', 'reopen']) {
    const method = passthrough[name];
    if (typeof method === 'function') wrapped[name] = (...args: unknown[]) => method.apply(inner, args);
  }
  return wrapped;
}

/**
 * The server's logger. `secrets` are scrubbed from every message string as well (the push token
 * is known at start-up), in addition to the `redact` paths; and every line is scanned with the
 * content gate's secret rules before it is written (`maskingDestination`; `scan: false` turns
 * that off, for the log-throughput figure only).
 */
export function createLogger(options: { level?: string; secrets?: string[]; destination?: pino.DestinationStream; scan?: boolean } = {}): Logger {
  const secrets = (options.secrets ?? []).filter((secret) => secret.length >= 6);
  const scrub = (text: string): string => secrets.reduce((out, secret) => out.split(secret).join('[REDACTED]'), text);
  const base = {
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
      // Tokens in `?token=` query strings (browser WebSocket auth) must not be logged either.
      req: (req: { method?: string; url?: string; id?: unknown }) => ({
        method: req.method,
        url: scrub((req.url ?? '').replace(/([?&]token=)[^&]*/g, '$1[REDACTED]')),
        id: req.id,
      }),
    },
    hooks: {
      logMethod(this: Logger, args: Parameters<pino.LogFn>, method: pino.LogFn) {
        if (secrets.length === 0) return method.apply(this, args);
        const cleaned = args.map((arg: unknown) => (typeof arg === 'string' ? scrub(arg) : arg));
        return method.apply(this, cleaned as Parameters<pino.LogFn>);
      },
    },
  };
  const destination = options.destination ?? pino.destination(1);
  return pino(base, options.scan === false ? destination : maskingDestination(destination, secrets));
}
