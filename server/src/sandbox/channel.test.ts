import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChannelClosed, ChannelFailure, SandboxChannel } from './channel';
import { CHANNEL_PROGRAM } from './channel-program';

/*
 * The channel program run by the host's Node against a temporary directory standing in for
 * /workspace: the protocol and the path checks without Docker. The same program under gVisor is
 * checked by channel.int.test.ts and the isolation tests.
 */
let root: string;
let outside: string;
let child: ChildProcess;
let channel: SandboxChannel;

function open(dir: string): { channel: SandboxChannel; child: ChildProcess } {
  const proc = spawn(process.execPath, ['-e', CHANNEL_PROGRAM, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const opened = new SandboxChannel((line) => proc.stdin?.write(line));
  proc.stdout?.on('data', (data: Buffer) => opened.push(data));
  proc.on('close', () => opened.close());
  return { channel: opened, child: proc };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

function processesMatching(pattern: RegExp): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      } catch {
        return '';
      }
    })
    .filter((command) => pattern.test(command));
}

function failureOf(promise: Promise<unknown>): Promise<ChannelFailure> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => {
      if (!(error instanceof ChannelFailure)) throw error;
      return error;
    },
  );
}

beforeAll(async () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'dockhand-channel-')));
  root = join(base, 'workspace');
  outside = join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret'), 'secret\n');
  symlinkSync(outside, join(root, 'out-link'));
  symlinkSync(join(outside, 'not-yet'), join(root, 'dangling-out'));
  symlinkSync('inside.txt', join(root, 'in-link'));
  writeFileSync(join(root, 'inside.txt'), 'inside\n');
  ({ channel, child } = open(root));
  await channel.ready;
});

afterAll(() => {
  child?.kill('SIGKILL');
  rmSync(join(root, '..'), { recursive: true, force: true });
});

describe('sandbox channel program', () => {
  it('reads and writes binary-safe, creating parent directories', async () => {
    const bytes = Buffer.from([0, 1, 2, 200, 255, 10, 13]);
    await channel.writeFile('deep/dir/blob.bin', bytes);
    expect(Buffer.compare(readFileSync(join(root, 'deep/dir/blob.bin')), bytes)).toBe(0);
    expect(Buffer.compare(await channel.readFile('deep/dir/blob.bin'), bytes)).toBe(0);
    expect((await channel.readFile('in-link')).toString()).toBe('inside\n');
  });

  it('refuses symlinks that resolve outside the root, existing or not, with exit 3', async () => {
    expect((await failureOf(channel.readFile('out-link/secret'))).exitCode).toBe(3);
    expect((await failureOf(channel.writeFile('out-link/new', Buffer.from('x')))).exitCode).toBe(3);
    expect((await failureOf(channel.writeFile('dangling-out', Buffer.from('x')))).exitCode).toBe(3);
    expect((await failureOf(channel.writeFile('out-link/../escape', Buffer.from('x')))).exitCode).toBe(3);
    expect((await failureOf(channel.listFiles('out-link', false, 10))).exitCode).toBe(3);
    expect((await failureOf(channel.readFile('/etc/passwd'))).exitCode).toBe(3);
    expect(readFileSync(join(outside, 'secret'), 'utf8')).toBe('secret\n');
    expect(() => readFileSync(join(outside, 'not-yet'))).toThrow();
  });

  it('reports missing files, directories and non-directories as the shell path does', async () => {
    expect((await failureOf(channel.readFile('missing'))).stderr).toMatch(/No such file/);
    expect((await failureOf(channel.readFile('deep'))).stderr).toMatch(/Is a directory/);
    expect((await failureOf(channel.listFiles('inside.txt', false, 10))).exitCode).toBe(4);
  });

  it('lists like find, pruning .git and node_modules, and stops after limit + 1', async () => {
    mkdirSync(join(root, 'tree/.git'), { recursive: true });
    mkdirSync(join(root, 'tree/node_modules/x'), { recursive: true });
    writeFileSync(join(root, 'tree/a.txt'), 'abc');
    mkdirSync(join(root, 'tree/sub'));
    writeFileSync(join(root, 'tree/sub/b.txt'), 'b');
    const flat = await channel.listFiles('tree', false, 100);
    expect(flat.map(([kind, , name]) => `${kind} ${name}`).sort()).toEqual(['d sub', 'f a.txt']);
    const deep = await channel.listFiles('tree', true, 100);
    expect(deep.map(([, size, name]) => `${name} ${name.endsWith('.txt') ? size : ''}`).sort()).toEqual(['a.txt 3', 'sub ', 'sub/b.txt 1']);
    expect(await channel.listFiles('tree', true, 1)).toHaveLength(2);
  });

  it('runs commands with cwd, exactly the given env, stdin, streamed output and exit codes; requests interleave', async () => {
    const chunks: string[] = [];
    const run = channel.run(
      { cmd: ['sh', '-c', 'pwd; cat; echo "[$HOME][$PATH_EXTRA]"; echo oops >&2; exit 7'], cwd: join(root, 'tree'), env: { PATH: '/usr/bin:/bin', HOME: '/h' }, stdin: Buffer.from('in\n') },
      (chunk, stream) => chunks.push(`${stream}:${chunk.toString()}`),
    );
    const [exitCode, read] = await Promise.all([run.exitCode, channel.readFile('inside.txt')]);
    expect(exitCode).toBe(7);
    expect(read.toString()).toBe('inside\n');
    const stdout = chunks.filter((chunk) => chunk.startsWith('stdout:')).map((chunk) => chunk.slice(7)).join('');
    expect(stdout).toBe(`${join(root, 'tree')}\nin\n[/h][]\n`);
    expect(chunks.filter((chunk) => chunk.startsWith('stderr:')).join('')).toBe('stderr:oops\n');
  });

  it('reports a command that cannot start as a failure before spawn, and kills on cancel', async () => {
    const missing = channel.run({ cmd: ['/no/such/binary'], cwd: root, env: {} }, () => undefined);
    await expect(missing.spawned).rejects.toBeInstanceOf(ChannelFailure);
    const long = channel.run({ cmd: ['sleep', '30'], cwd: root, env: { PATH: '/usr/bin:/bin' } }, () => undefined);
    await long.spawned;
    long.cancel();
    expect(await long.exitCode).toBe(-1);
  });

  it('runs direct commands in a session of their own: limited, killed at the deadline, leftovers swept', async () => {
    const pidFile = join(root, 'pidfile');
    const env = { PATH: '/usr/bin:/bin' };
    const chunks: Buffer[] = [];
    // No address-space cap (it breaks V8's WebAssembly reservations): memory is the guard's and the cgroup's.
    const limited = channel.run({ cmd: ['sh', '-c', 'ulimit -v; sleep 1005 & echo $!'], cwd: root, env, direct: { timeoutMs: 10_000, memoryLimitBytes: 512 * 1024 * 1024, pidFile } }, (chunk) => chunks.push(chunk));
    expect(await limited.exitCode).toBe(0);
    const [limit, leftover] = Buffer.concat(chunks).toString().trim().split('\n');
    expect(limit).toBe('unlimited');
    await sleep(100);
    expect(alive(Number(leftover))).toBe(false);
    const started = Date.now();
    const endless = channel.run({ cmd: ['bash', '-c', 'sleep 1006 & (sleep 1007 &); sleep 1008'], cwd: root, env, direct: { timeoutMs: 500, memoryLimitBytes: 512 * 1024 * 1024, pidFile } }, () => undefined);
    expect(await endless.exitCode).toBe(137);
    expect(Date.now() - started).toBeLessThan(3000);
    await sleep(100);
    expect(processesMatching(/^sleep 100[5-8]/)).toEqual([]);
  });

  it('fails everything in flight with ChannelClosed when the program dies', async () => {
    const dying = open(root);
    await dying.channel.ready;
    const run = dying.channel.run({ cmd: ['sleep', '30'], cwd: root, env: { PATH: '/usr/bin:/bin' } }, () => undefined);
    await run.spawned;
    dying.child.kill('SIGKILL');
    const error = await run.exitCode.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChannelClosed);
    expect(error instanceof ChannelClosed && error.started).toBe(true);
    await expect(dying.channel.readFile('inside.txt')).rejects.toBeInstanceOf(ChannelClosed);
  });
});
