import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
import { CHILD_NICE, runChild, Spawner, spawner } from './spawner';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

/** Running, not gone and not a zombie waiting for its reaper. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('the spawner', () => {
  it('runs a child in a process of its own, not as a fork of this one', async () => {
    const result = await runChild('sh', ['-c', 'echo "$PPID"; echo oops >&2; exit 3'], { env });
    expect(result.code).toBe(3);
    expect(result.stderr).toBe('oops\n');
    const parent = Number(result.stdout.toString().trim());
    expect(parent).not.toBe(process.pid);
    // The parent is the spawner program, a child of this process.
    expect(execFileSync('ps', ['-o', 'ppid=', '-p', String(parent)], { encoding: 'utf8' }).trim()).toBe(String(process.pid));
  });

  it('runs children at a lower CPU priority than the server, their own children too', async () => {
    // The nice value (field 19 of /proc/<pid>/stat) of a child and of a process it starts later.
    const niceOf = async (nice?: number) => {
      const result = await runChild('sh', ['-c', 'sleep 0.2; cut -d" " -f19 /proc/$$/stat; sh -c \'cut -d" " -f19 /proc/$$/stat\''], { env, ...(nice === undefined ? {} : { nice }) });
      return result.stdout.toString().trim().split('\n').map(Number);
    };
    const server = getPriority();
    expect(await niceOf()).toEqual([Math.min(19, server + CHILD_NICE), Math.min(19, server + CHILD_NICE)]);
    expect(await niceOf(0)).toEqual([server, server]);
    expect(await niceOf(3)).toEqual([Math.min(19, server + 3), Math.min(19, server + 3)]);
  });

  it('lowers the session group of a detached child where the kernel schedules by session (autogroup)', async () => {
    // A detached child is a session of its own: under autogroup its group competes with this
    // process's whole session as an equal unless the group's nice is raised.
    // Empty where this process is in no autogroup (the root task group, as under CI's init): nice 0.
    const groupNice = (text: string) => Number(/nice (-?\d+)/.exec(text)?.[1] ?? 0);
    const own = readFileSync('/proc/self/autogroup', 'utf8');
    const child = await runChild('sh', ['-c', 'sleep 0.2; cat /proc/self/autogroup'], { env });
    expect(child.code).toBe(0);
    expect(child.stdout.toString()).not.toBe(own);
    if (readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1' && process.getuid?.() === 0) {
      expect(groupNice(child.stdout.toString())).toBe(Math.min(19, groupNice(own) + CHILD_NICE));
    }
    const attached = await runChild('cat', ['/proc/self/autogroup'], { env, detached: false });
    expect(attached.stdout.toString()).toBe(own);
  });

  it('gives stdin whole and keeps binary output intact', async () => {
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 256));
    const result = await runChild('cat', [], { env, stdin: bytes });
    expect(result.code).toBe(0);
    expect(result.stdout.equals(bytes)).toBe(true);
  });

  it('kills the whole process group on timeout, abort and the output limit', async () => {
    const started = await runChild('sh', ['-c', 'sleep 30 & echo $!; wait'], { env, timeoutMs: 300 });
    expect(started.killed).toMatch(/did not finish within/);
    const grandchild = Number(started.stdout.toString().trim());
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive(grandchild)).toBe(false);

    const controller = new AbortController();
    const aborted = runChild('sleep', ['30'], { env, signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect((await aborted).killed).toBe('cancelled');

    const flood = await runChild('sh', ['-c', 'yes'], { env, maxBuffer: 1024 * 1024 });
    expect(flood.killed).toBe('printed more than the output limit');
    expect(flood.stdout.length).toBeLessThanOrEqual(1024 * 1024);

    const quiet = await runChild('sleep', ['30'], { env, idleTimeoutMs: 200 });
    expect(quiet.killed).toMatch(/printed nothing for/);
  });

  it('reports a command that cannot start as an error, not an exit code', async () => {
    const result = await runChild('/nonexistent/program', [], { env });
    expect(result.code).toBeNull();
    expect(result.error?.message).toMatch(/ENOENT/);
  });

  it('fails the children of a spawner that died, and starts a new one for the next', async () => {
    const own = new Spawner();
    const child = own.spawn('sleep', ['30'], { env });
    const pid = await new Promise<number>((resolve) => child.once('spawn', () => resolve(child.pid!)));
    const closed = new Promise<unknown[]>((resolve) => child.once('close', (...args: unknown[]) => resolve(args)));
    const failed = new Promise<Error>((resolve) => child.once('error', resolve));
    const spawnerPid = Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
    process.kill(spawnerPid, 'SIGKILL');
    expect((await failed).message).toMatch(/spawner process exited/);
    await closed;
    expect(own.running).toBe(0);
    process.kill(-pid, 'SIGKILL');

    const next = own.spawn('echo', ['again'], { env });
    const text = await new Promise<string>((resolve) => {
      let out = '';
      next.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      next.once('close', () => resolve(out));
    });
    expect(text).toBe('again\n');
    own.close();
  });

  it('runs many children at once', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => runChild('sh', ['-c', `echo ${i}`], { env })));
    expect(results.map((r) => r.stdout.toString().trim())).toEqual(Array.from({ length: 40 }, (_, i) => String(i)));
    expect(spawner.running).toBe(0);
  });
});
