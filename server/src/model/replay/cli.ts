import { basename, extname } from 'node:path';
import { parseArgs } from 'node:util';
import { DockhandError } from '../../errors';
import { loadCassette, type Cassette } from './cassette';
import { startReplayServer } from './server';

/*
 * Runs the replay model server on its own:
 *   npm run replay-server -- --cassette path/to/fix.yaml [--cassette name=other.json] [--port 8790] [--host 127.0.0.1]
 * A cassette's session name is the part before `=`, else the file name without its extension.
 * With a single cassette, requests that name no session get it.
 */

const USAGE = 'usage: replay-server --cassette [session=]path.yaml [--cassette ...] [--port N] [--host H]';

export async function main(argv: string[]): Promise<{ close(): Promise<void> }> {
  const { values } = parseArgs({
    args: argv,
    options: {
      cassette: { type: 'string', multiple: true },
      port: { type: 'string', default: '8790' },
      host: { type: 'string', default: '127.0.0.1' },
    },
    strict: true,
  });
  const specs = values.cassette ?? [];
  if (specs.length === 0) throw new DockhandError('bad_request', `--cassette is required\n${USAGE}`, { field: 'cassette' });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new DockhandError('bad_request', `--port must be an integer 0-65535, got ${values.port}`, { field: 'port' });
  }
  const cassettes: Record<string, Cassette> = {};
  for (const spec of specs) {
    const separator = spec.indexOf('=');
    const path = separator > 0 ? spec.slice(separator + 1) : spec;
    const name = separator > 0 ? spec.slice(0, separator) : basename(path, extname(path));
    cassettes[name] = loadCassette(path);
  }
  const names = Object.keys(cassettes);
  const server = await startReplayServer({
    port,
    host: values.host,
    cassettes,
    ...(names.length === 1 && names[0] !== undefined ? { defaultSession: names[0] } : {}),
  });
  process.stdout.write(
    `replay model server on ${server.url} (sessions: ${names.join(', ')}); ` +
      `use baseURL ${server.url} and apiKey "replay:<session>"\n`,
  );
  return server;
}

const invokedDirectly = process.argv[1] !== undefined && /replay[/\\]cli\.[cm]?[jt]s$/.test(process.argv[1]);
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (server) => {
      const stop = (): void => {
        void server.close().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(2);
    },
  );
}
