import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Scratch directories a test makes under the system's temporary folder and needs no longer than
 * its test file: fixture repositories, markers, small stores. Each is removed when the file ends
 * (test/support/vitest-setup.ts registers the afterAll in every vitest project), so test runs stop
 * leaving a directory per test behind in /tmp. Outside vitest (a bench or script using the fixture
 * helpers) they go when the process exits. A directory that must outlive its test file is made
 * with mkdtempSync directly, and its owner removes it.
 */

const made = new Set<string>();
let removedAtExit = false;

/** A new directory `<tmpdir>/<prefix>XXXXXX`, removed at the end of the test file (or the process). */
export function temporaryDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  // Under vitest this module is loaded once per test file in a long-lived worker: no exit
  // listener there (they would pile up), the setup file's afterAll removes the directories.
  if (!process.env.VITEST && !removedAtExit) {
    removedAtExit = true;
    process.once('exit', removeTemporaryDirs);
  }
  return dir;
}

/** Removes every directory temporaryDir made so far. */
export function removeTemporaryDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}
