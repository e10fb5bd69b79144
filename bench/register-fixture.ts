/**
 * The generated repository of `npm run bench:register`: GIGABYTES of incompressible history
 * (random blobs, so no delta or zlib can shrink what a fetch moves) across COMMITS commits on
 * `main`, and BRANCHES branches pointing at commits spread over that history. Made once with
 * `git fast-import` (one process, one pack) under /var/tmp and reused while its marker file
 * exists. `tsx bench/register-fixture.ts [dir]` makes it alone.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface GeneratedRepository {
  path: string;
  bytes: number;
  commits: number;
  branches: number;
}

export async function generatedRepository(dir: string, options: { bytes?: number; commits?: number; branches?: number } = {}): Promise<GeneratedRepository> {
  const bytes = options.bytes ?? 1024 ** 3;
  const commits = options.commits ?? 300;
  const branches = options.branches ?? 5000;
  const marker = join(dir, `dockhand-bench-${bytes}-${commits}-${branches}.done`);
  if (existsSync(marker)) return { path: dir, bytes, commits, branches };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const init = spawnSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', dir]);
  if (init.status !== 0) throw new Error(`git init ${dir}: ${init.stderr.toString()}`);
  const importer = spawn('git', ['fast-import', '--quiet', '--depth=0'], { cwd: dir, stdio: ['pipe', 'inherit', 'inherit'] });
  const done = new Promise<void>((resolve, reject) => importer.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited with ${code}`)))));
  const write = (data: string | Buffer) => (importer.stdin.write(data) ? Promise.resolve() : new Promise<void>((resolve) => importer.stdin.once('drain', () => resolve())));
  const perCommit = Math.ceil(bytes / commits);
  for (let index = 1; index <= commits; index++) {
    // A few files per commit, each rewritten now and then: a history, not one file per commit.
    const blob = randomBytes(perCommit);
    await write(`blob\nmark :${index * 2}\ndata ${blob.length}\n`);
    await write(blob);
    await write('\n');
    const message = `commit ${index}\n`;
    const when = 1_700_000_000 + index * 60;
    await write(`commit refs/heads/main\nmark :${index * 2 + 1}\nauthor Bench <bench@dockhand.invalid> ${when} +0000\ncommitter Bench <bench@dockhand.invalid> ${when} +0000\ndata ${message.length}\n${message}`);
    if (index > 1) await write(`from :${index * 2 - 1}\n`);
    await write(`M 100644 :${index * 2} data/part-${index % 40}.bin\nM 100644 inline README.md\ndata ${message.length}\n${message}\n`);
  }
  // Branches at commits spread over the history (several share a commit, as real ones do).
  for (let branch = 0; branch < branches; branch++) {
    const at = 1 + ((branch * 7919) % commits);
    await write(`reset refs/heads/topic/${String(branch).padStart(4, '0')}\nfrom :${at * 2 + 1}\n\n`);
  }
  importer.stdin.end();
  await done;
  writeFileSync(marker, `${new Date().toISOString()}\n`);
  return { path: dir, bytes, commits, branches };
}

if (process.argv[1]?.endsWith('register-fixture.ts')) {
  const dir = process.argv[2] ?? '/var/tmp/dockhand-bench-register-1g.git';
  const started = Date.now();
  generatedRepository(dir).then((made) => {
    process.stdout.write(`${JSON.stringify({ ...made, seconds: (Date.now() - started) / 1000 })}\n`);
  }, (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
}
