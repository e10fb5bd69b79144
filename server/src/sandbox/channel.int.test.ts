import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxDriver } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';
import { checkSandboxHost } from './host-check';
import { ensureBaseImage } from './test-support';

/*
 * The command channel under gVisor: once it is up, file operations and commands go through it
 * with the exec path's semantics; when it dies, calls fall back to docker exec and it comes back.
 * docker-driver.int.test.ts runs its isolation proofs through the channel as well.
 */
const docker = new Docker();
let driver: DockerSandboxDriver;
let sandbox: DockerSandbox;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Makes calls until the channel has started and answers (the first calls take the exec path). */
async function channelUp(target: DockerSandbox, previousPid = 0): Promise<number> {
  for (let attempt = 0; attempt < 150; attempt += 1) {
    const before = target.transport.channel;
    await target.readFile('README.md');
    if (target.transport.channel > before && target.transport.channelPid !== previousPid) return target.transport.channelPid;
    await sleep(200);
  }
  throw new Error(`the channel did not come up: ${JSON.stringify(target.transport)}`);
}

beforeAll(async () => {
  ensureBaseImage();
  process.env.DOCKHAND_TEST_SERVER_SECRET = 'must-not-leak';
  const host = await checkSandboxHost(docker);
  driver = new DockerSandboxDriver({ docker, ownerId: `test-channel-${process.pid}`, runtime: host.runtime, limits: { memoryMiB: 1024, pids: 128 } });
  sandbox = await driver.start({ image: 'dockhand/base:latest', baseSha: 'channel-test' });
  await sandbox.writeFile('README.md', 'hello\n');
  await channelUp(sandbox);
});

afterAll(async () => {
  await driver?.destroyAll();
});

describe('sandbox command channel (runsc)', () => {
  it('serves file operations through the channel, binary-safe, refusing escapes as the exec path does', async () => {
    const before = { ...sandbox.transport };
    const bytes = Buffer.from([0, 1, 2, 200, 255, 10, 13]);
    await sandbox.writeFile('data/blob.bin', bytes);
    expect(Buffer.compare(await sandbox.readFile('data/blob.bin'), bytes)).toBe(0);
    expect(await sandbox.listFiles('data')).toEqual([{ path: 'data/blob.bin', type: 'file', size: 7 }]);
    await sandbox.exec({ cmd: ['sh', '-c', 'ln -sfn /etc etc-link && ln -sfn /tmp/nowhere dangling-link'] });
    await expect(sandbox.readFile('etc-link/passwd')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.writeFile('etc-link/evil', 'x')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.writeFile('dangling-link', 'x')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.listFiles('etc-link')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.readFile('../etc/passwd')).rejects.toThrow(/leaves the workspace/);
    await expect(sandbox.readFile('/etc/passwd')).rejects.toThrow(/absolute/);
    await expect(sandbox.readFile('missing.txt')).rejects.toThrow(/does not exist/);
    await expect(sandbox.readFile('data')).rejects.toThrow(/is a directory/);
    await expect(sandbox.listFiles('README.md')).rejects.toThrow(/not a directory/);
    const check = await sandbox.exec({ cmd: ['sh', '-c', 'test -e /tmp/nowhere && echo written || echo absent'] });
    expect(check.stdout).toBe('absent\n');
    expect(sandbox.transport.exec).toBe(before.exec);
    expect(sandbox.transport.channel - before.channel).toBe(12);
  });

  it('runs commands through the channel with the allowlisted env, no address-space cap, exit codes, stdin and the output cap', async () => {
    const before = { ...sandbox.transport };
    const env = await sandbox.exec({ cmd: ['sh', '-c', 'id -u; ulimit -v; env; pwd; exit 5'], cwd: 'data', env: { EXTRA: 'yes' } });
    expect(env.exitCode).toBe(5);
    // No address-space cap: memory is bounded by the cgroup and the channel's memory guard.
    expect(env.stdout).toMatch(/^1000\nunlimited\n/);
    expect(env.stdout).toContain('EXTRA=yes');
    expect(env.stdout).toContain('CI=true');
    expect(env.stdout).not.toContain('must-not-leak');
    expect(env.stdout).not.toContain('UV_THREADPOOL_SIZE');
    expect(env.stdout.endsWith('/workspace/data\n')).toBe(true);
    const chunks: string[] = [];
    const capped = await sandbox.exec({ cmd: ['sh', '-c', 'cat; seq 1 20000'], stdin: 'from-stdin\n', outputCapBytes: 1000, onOutput: (chunk) => chunks.push(chunk) });
    expect(capped.exitCode).toBe(0);
    expect(capped.truncated).toBe(true);
    expect(capped.stdout.startsWith('from-stdin\n1\n2\n')).toBe(true);
    expect(capped.stdout.endsWith('19999\n20000\n')).toBe(true);
    expect(chunks.join('').length).toBeGreaterThan(100_000);
    expect(sandbox.transport.exec).toBe(before.exec);
    expect(sandbox.transport.channel - before.channel).toBe(2);
  });

  it('kills a command at its timeout with its whole tree (124), and sweeps what a command leaves behind', async () => {
    const timed = await sandbox.exec({ cmd: ['bash', '-c', 'sleep 1000 & (sleep 1001 &); sleep 1002'], timeoutMs: 1500 });
    expect(timed.timedOut).toBe(true);
    expect(timed.exitCode).toBe(124);
    expect(timed.durationMs).toBeLessThan(6000);
    const left = await sandbox.exec({ cmd: ['bash', '-c', 'sleep 1003 & echo started'] });
    expect(left.stdout).toBe('started\n');
    const ps = await sandbox.exec({ cmd: ['ps', '-eo', 'args'] });
    expect(ps.stdout).not.toMatch(/sleep 100[0-3]/);
    expect(ps.stdout).toContain('dockhand-channel');
  });

  it('answers content searches from memory as ripgrep does, following what commands change', async () => {
    const query = { pattern: 'needle\\w*', path: 'src', fixedStrings: false, caseInsensitive: false, context: 0, maxCount: 100, limit: 100 };
    /** The same query by ripgrep in the sandbox: [path, line, text] of each match, in path order. */
    const ripgrep = async (): Promise<Array<[string, number, string]>> => {
      const result = await sandbox.exec({ cmd: ['rg', '--json', '--no-require-git', '--hidden', '-g', '!.git', '-e', query.pattern, '--', 'src'] });
      const found: Array<[string, number, string]> = [];
      for (const line of result.stdout.split('\n')) {
        if (!line.startsWith('{"type":"match"')) continue;
        const data = (JSON.parse(line) as { data: { path: { text: string }; line_number: number; lines: { text: string } } }).data;
        found.push([data.path.text, data.line_number, data.lines.text.replace(/\n$/, '')]);
      }
      return found.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
    };
    const resident = async (): Promise<Array<[string, number, string]>> => {
      const served = sandbox.transport.residentServed;
      const answer = await sandbox.searchContent(query);
      if (!answer) throw new Error(`declined: ${sandbox.transport.lastDeclined}`);
      expect(sandbox.transport.residentServed).toBe(served + 1);
      return answer.hits.map((hit) => [hit.path, hit.line, hit.text]);
    };
    await sandbox.writeFile('src/a.c', 'int needle_one;\nint other;\n');
    await sandbox.writeFile('src/old.c', 'int needle_old;\n');
    await sandbox.writeFile('.gitignore', 'ignored/\n');
    await sandbox.writeFile('src/ignored/x.c', 'int needle_ignored;\n');
    expect(await resident()).toEqual(await ripgrep());
    expect((await resident()).map(([path]) => path)).toEqual(['src/a.c', 'src/old.c']);
    // A command changes, creates and removes files; the very next query sees all of it.
    await sandbox.exec({ cmd: ['sh', '-c', 'echo "int needle_two;" >> src/a.c && mkdir -p src/b && echo "int needle_new;" > src/b/new.c && rm src/old.c'] });
    const after = await resident();
    expect(after).toEqual(await ripgrep());
    expect(after.map(([path, line]) => `${path}:${line}`)).toEqual(['src/a.c:1', 'src/a.c:3', 'src/b/new.c:1']);
    // read_file's slice of a held file follows a command's change at once.
    const slice = { start: 1, count: 10, maxLineChars: 1000, maxBytes: 1 << 20 };
    await sandbox.exec({ cmd: ['sh', '-c', 'echo "int needle_three;" >> src/a.c'] });
    expect((await sandbox.readLines('src/a.c', slice)).lines.map(([text]) => text)).toEqual(['int needle_one;', 'int other;', 'int needle_two;', 'int needle_three;']);
    // A pattern outside the translation is declined, and says why.
    expect(await sandbox.searchContent({ ...query, pattern: '(?i)needle' })).toBeUndefined();
    expect(sandbox.transport.lastDeclined).toMatch(/\(\?/);
  });

  it('reads a slice of a file\'s lines through the channel, refusing escapes', async () => {
    await sandbox.writeFile('src/lines.txt', Array.from({ length: 1000 }, (_, index) => `line ${index + 1}`).join('\n'));
    const request = { start: 500, count: 3, maxLineChars: 1000, maxBytes: 4 * 1024 * 1024 };
    const before = sandbox.transport.channel;
    expect(await sandbox.readLines('src/lines.txt', request)).toEqual({
      bytes: expect.any(Number),
      binary: false,
      total: 1000,
      lines: [
        ['line 500', 8],
        ['line 501', 8],
        ['line 502', 8],
      ],
    });
    expect(sandbox.transport.channel).toBe(before + 1);
    await expect(sandbox.readLines('etc-link/passwd', request)).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.readLines('src', request)).rejects.toThrow(/is a directory/);
  });

  it('lists a file\'s symbols from the resident ctags', async () => {
    await sandbox.writeFile('src/sym.c', 'int alpha(void) { return 1; }\nstatic int beta = 2;\n');
    const output = await sandbox.symbolsOf('src/sym.c');
    expect(output).toBeDefined();
    const tags = (output ?? '').split('\n').map((line) => JSON.parse(line) as { name: string; line: number });
    expect(tags.map((tag) => [tag.name, tag.line])).toEqual([
      ['alpha', 1],
      ['beta', 2],
    ]);
    expect(await sandbox.symbolsOf('src')).toBeUndefined();
  });

  it('falls back to docker exec when the channel dies, and starts it again lazily', async () => {
    const firstPid = sandbox.transport.channelPid;
    const starts = sandbox.transport.channelStarts;
    // A command in flight when the channel dies is not repeated, and what it started is killed.
    const running = sandbox.exec({ cmd: ['sh', '-c', 'echo begun; sleep 1004'], timeoutMs: 60_000 });
    await sleep(1000);
    const killed = await sandbox.raw(['kill', '-KILL', String(firstPid)]);
    expect(killed.exitCode).toBe(0);
    const lost = await running;
    expect(lost.exitCode).toBe(-1);
    expect(lost.stdout).toBe('begun\n');
    expect(lost.stderr).toMatch(/command channel stopped while this command ran/);
    // The next call is served by docker exec while the channel restarts in the background.
    const exec = sandbox.transport.exec;
    expect((await sandbox.readFile('README.md')).toString()).toBe('hello\n');
    expect(sandbox.transport.exec).toBe(exec + 1);
    const secondPid = await channelUp(sandbox, firstPid);
    expect(secondPid).not.toBe(firstPid);
    expect(sandbox.transport.channelStarts).toBe(starts + 1);
    const ps = await sandbox.exec({ cmd: ['ps', '-eo', 'args'] });
    expect(ps.stdout).not.toContain('sleep 1004');
    expect(ps.stdout.match(/dockhand-channel/g)).toHaveLength(1);
  });


  it('stops a fork bomb run through the channel; the sandbox and its channel keep working', async () => {
    const bomb = await driver.start({ image: 'dockhand/base:latest', baseSha: 'channel-bomb', limits: { pids: 64 } });
    await bomb.writeFile('README.md', 'hello\n');
    await channelUp(bomb);
    const before = { ...bomb.transport };
    // 8 s for the bomb to reach the 64-process limit: at load 17 (two integration files at once
    // beside other work) 3 s was not enough and stderr was still empty.
    const result = await bomb.exec({ cmd: ['bash', '-c', 'bomb() { bomb | bomb & }; bomb; sleep 8'], timeoutMs: 15_000 });
    expect(bomb.transport.channel).toBe(before.channel + 1);
    expect(result.stderr).toMatch(/fork: .*Resource temporarily unavailable/);
    const after = await bomb.exec({ cmd: ['sh', '-c', 'echo still here; ps -eo args'] });
    expect(after.stdout).toMatch(/^still here\n/);
    expect(after.stdout).not.toContain('bomb');
    await bomb.destroy();
  });

  it('kills a memory hog run through the channel while the sandbox survives; WebAssembly reserves freely', async () => {
    const hog = await driver.start({ image: 'dockhand/base:latest', baseSha: 'channel-hog', limits: { memoryMiB: 1024 } });
    await hog.writeFile('README.md', 'hello\n');
    await channelUp(hog);
    const before = { ...hog.transport };
    // V8 reserves gigabytes of address space per WebAssembly memory; under the old ulimit -v this failed.
    const wasm = await hog.exec({ cmd: ['node', '-e', 'WebAssembly.instantiate(new Uint8Array([0,97,115,109,1,0,0,0,5,3,1,0,1])).then(() => console.log("wasm ok"))'] });
    expect(wasm.stdout + wasm.stderr).toBe('wasm ok\n');
    for (const cmd of [
      ['node', '-e', 'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));'],
      ['python3', '-c', 'a = []\nwhile True: a.append(bytearray(16 << 20))'],
    ]) {
      const result = await hog.exec({ cmd, timeoutMs: 60_000 });
      expect(result.exitCode, result.stderr).toBe(137);
      expect(result.timedOut).toBe(false);
      expect(result.stderr).toMatch(/\[dockhand: killed: the sandbox ran out of memory \(limit 1024 MiB\); this command held \d+ MiB\]/);
      const after = await hog.exec({ cmd: ['echo', 'survived'] });
      expect(after.stdout).toBe('survived\n');
    }
    expect(hog.transport.channel).toBe(before.channel + 5);
    await hog.destroy();
  });
});
