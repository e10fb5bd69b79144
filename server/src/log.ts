import pino, { type Logger } from 'pino';

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
 * The server's logger. `secrets` are scrubbed from every message string as well (the push token
 * is known at start-up), in addition to the `redact` paths.
 */
export function createLogger(options: { level?: string; secrets?: string[]; destination?: pino.DestinationStream } = {}): Logger {
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
  return options.destination ? pino(base, options.destination) : pino(base);
}
