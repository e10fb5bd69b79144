import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './local-server';

/*
 * A PostgreSQL cluster of one test's own (root only): initialised as the `postgres` user in a
 * scratch directory, listening on loopback and on the addresses given (the host ends of network
 * namespaces' veth pairs), trust authentication for loopback and `trustNetwork`. The shared test
 * server (`.ci/needs/postgres.sh`) listens on loopback only and other test files use it, so a test
 * that needs Postgres on other addresses, or restarts it, starts its own instead of touching that one.
 */

export interface PrivatePostgres {
  port: number;
  /** `postgres://postgres@<host>:<port>/postgres`. */
  url(host: string): string;
  stop(): void;
}

function binDir(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = `/usr/lib/postgresql/${version}/bin`;
    if (existsSync(join(bin, 'initdb'))) return bin;
  }
  throw new Error('PostgreSQL is not installed: run .ci/needs/postgres.sh (it installs Debian\'s postgresql package)');
}

/** `settings`: more server settings (`-c name=value`), such as `shared_preload_libraries`. */
export async function startPrivatePostgres(options: { listen: string[]; trustNetwork: string; settings?: Record<string, string> }): Promise<PrivatePostgres> {
  const bin = binDir();
  const dir = mkdtempSync('/var/tmp/dockhand-pg-');
  chmodSync(dir, 0o755);
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(dir, uid, gid);
  const asOwner = (command: string, ...args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const data = join(dir, 'data');
  asOwner('initdb', '-D', data, '--username=postgres', '--auth=trust', '--encoding=UTF8', '--no-locale');
  appendFileSync(join(data, 'pg_hba.conf'), `host all all ${options.trustNetwork} trust\n`);
  const port = await freePort();
  const listen = ['127.0.0.1', ...options.listen].join(',');
  const settings = Object.entries(options.settings ?? {}).map(([name, value]) => ` -c ${name}=${value}`).join('');
  try {
    asOwner('pg_ctl', '-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', `-p ${port} -k ${dir} -c listen_addresses=${listen} -c max_connections=400 -c fsync=off${settings}`, 'start');
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    port,
    url: (host) => `postgres://postgres@${host}:${port}/postgres`,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        asOwner('pg_ctl', '-D', data, '-m', 'immediate', 'stop');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
