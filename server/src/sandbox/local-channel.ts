import { spawn } from 'node:child_process';
import { CHANNEL_PROGRAM } from './channel-program';
import { SandboxChannel } from './channel';

/**
 * The channel program run on this machine over a directory, as a child process of this one: the
 * very code that serves file operations, resident search and resident ctags inside a sandbox, on
 * the host kernel. For tests of the channel program without Docker, and for bench:tools, whose
 * host side is "the same tool on the host". Not a sandbox: nothing is isolated.
 */
export async function openLocalChannel(root: string, options: { heapMiB?: number; startTimeoutMs?: number } = {}): Promise<{ channel: SandboxChannel; close: () => void }> {
  const child = spawn(process.execPath, ['--v8-pool-size=1', `--max-old-space-size=${options.heapMiB ?? 256}`, '-e', CHANNEL_PROGRAM, root], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', UV_THREADPOOL_SIZE: '1' },
  });
  const channel = new SandboxChannel((line) => child.stdin.write(line));
  child.stdout.on('data', (data: Buffer) => channel.push(data));
  child.on('exit', () => channel.close());
  child.on('error', () => channel.close());
  child.stdin.on('error', () => channel.close());
  const close = (): void => {
    channel.close();
    child.stdin.end();
    child.kill('SIGKILL');
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      channel.ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the local channel did not start in time')), options.startTimeoutMs ?? 15_000);
      }),
    ]);
    return { channel, close };
  } catch (error) {
    close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
