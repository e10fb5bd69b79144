import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/** Builds (or finds, by recipe hash) the sandbox base image; integration tests call it first. */
export function ensureBaseImage(): void {
  const script = resolve(import.meta.dirname, '../../../sandbox-images/base/build.sh');
  execFileSync('bash', [script], { stdio: ['ignore', 'ignore', 'inherit'] });
}
