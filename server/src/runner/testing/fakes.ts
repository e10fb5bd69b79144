import { createHash } from 'node:crypto';
import { applyPatch, createTwoFilesPatch, parsePatch } from 'diff';
import type { Task, TaskEvent } from '@dockhand/protocol';
import type { ExecOptions, ExecResult, FileEntry, Sandbox, SandboxLoss } from '../../sandbox/types';
import type { AgentInput, AgentPort, AgentResult, PolicyPort, PolicyResult, PolicyVerdict, PublisherPort, PublishResult, SandboxProvider, SnapshotProgress } from '../ports';

/** Git's abbreviated blob id of a file's content (`0000000`: no file). */
function blobId(content: string | undefined): string {
  if (content === undefined) return '0000000';
  return createHash('sha1').update(`blob ${Buffer.byteLength(content)}\0`).update(content).digest('hex').slice(0, 7);
}

/**
 * One file's section as `git diff` writes it: the mode line of an added or deleted file (what
 * `splitDiff` and the policy read to tell a new file from an edit), the index line, a count of 1
 * left out of hunk headers, and no `---`/`+++` lines for an empty file.
 */
function gitFileDiff(path: string, before: string | undefined, after: string | undefined): string {
  const mode =
    before === undefined ? `new file mode 100644\nindex 0000000..${blobId(after)}\n`
      : after === undefined ? `deleted file mode 100644\nindex ${blobId(before)}..0000000\n`
        : `index ${blobId(before)}..${blobId(after)} 100644\n`;
  const header = `diff --git a/${path} b/${path}\n${mode}`;
  const patch = createTwoFilesPatch(before === undefined ? '/dev/null' : `a/${path}`, after === undefined ? '/dev/null' : `b/${path}`, before ?? '', after ?? '')
    .replace(/^=+\n/m, '')
    .replace(/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@/gm, (_line, from: string, fromCount = '', to: string, toCount = '') =>
      `@@ -${from}${fromCount === ',1' ? '' : fromCount} +${to}${toCount === ',1' ? '' : toCount} @@`);
  return /^@@ /m.test(patch) ? header + patch : header;
}

/** An in-memory sandbox for unit tests of the runner only (the real one is DockerSandboxDriver). */
export class MemorySandbox implements Sandbox {
  readonly image = 'fake:latest';
  destroyed = false;
  readonly files = new Map<string, string>();
  constructor(readonly id: string, readonly baseSha: string, base: Record<string, string> = {}) {
    for (const [path, content] of Object.entries(base)) this.files.set(path, content);
    this.base = new Map(this.files);
  }
  private readonly base: Map<string, string>;
  lost: SandboxLoss | undefined;
  private readonly lossListeners: Array<(loss: SandboxLoss) => void> = [];
  /** What the real sandbox does when its container dies: every later call fails, listeners hear it. */
  lose(reason: string, running: string[] = []): void {
    this.lost = { reason, at: new Date().toISOString(), running };
    for (const listener of this.lossListeners.splice(0)) listener(this.lost);
  }
  onLost(listener: (loss: SandboxLoss) => void): void {
    if (this.lost) listener(this.lost);
    else this.lossListeners.push(listener);
  }
  /** `rm -f -- path` and `git apply -` (stdin) are the commands the runner itself runs. */
  async exec(opts: ExecOptions): Promise<ExecResult> {
    if (this.lost) throw new Error(`The sandbox was lost: ${this.lost.reason}`);
    if (opts.cmd[0] === 'rm') this.files.delete(opts.cmd.at(-1) ?? '');
    if (opts.cmd[0] === 'git' && opts.cmd[1] === 'apply') {
      for (const file of parsePatch(opts.stdin ?? '')) {
        const path = (file.newFileName === '/dev/null' ? file.oldFileName : file.newFileName)?.replace(/^[ab]\//, '') ?? '';
        if (file.newFileName === '/dev/null') {
          this.files.delete(path);
          continue;
        }
        const next = applyPatch(this.files.get(path) ?? '', file);
        if (next === false) return { exitCode: 1, stdout: '', stderr: `error: patch failed: ${path}`, truncated: false, timedOut: false, durationMs: 0 };
        this.files.set(path, next);
      }
    }
    return { exitCode: 0, stdout: '', stderr: '', truncated: false, timedOut: false, durationMs: 0 };
  }
  async readFile(path: string): Promise<Buffer> {
    const content = this.files.get(path);
    if (content === undefined) throw new Error(`no such file ${path}`);
    return Buffer.from(content);
  }
  async writeFile(path: string, content: string | Buffer): Promise<void> {
    this.files.set(path, content.toString());
  }
  async listFiles(): Promise<FileEntry[]> {
    return [...this.files.keys()].map((path) => ({ path, type: 'file', size: this.files.get(path)?.length ?? 0 }));
  }
  /** The change from the base as `git diff` writes it (paths in git's order). */
  async diff(): Promise<string> {
    if (this.lost) throw new Error(`The sandbox was lost: ${this.lost.reason}`);
    let out = '';
    const paths = [...new Set([...this.base.keys(), ...this.files.keys()])].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    for (const path of paths) {
      const before = this.base.get(path);
      const after = this.files.get(path);
      if (before !== after) out += gitFileDiff(path, before, after);
    }
    return out;
  }
  async destroy(): Promise<void> {
    this.destroyed = true;
  }
}

export class FakeSandboxProvider implements SandboxProvider {
  acquired: MemorySandbox[] = [];
  released: string[] = [];
  alive = new Map<string, MemorySandbox>();
  /** Snapshot build progress reported to the caller during the next acquire (a cold build). */
  progress: SnapshotProgress[] = [];
  constructor(private readonly base: Record<string, string> = { 'src/a.ts': 'one\ntwo\nthree\n' }) {}
  async acquire(input: { baseSha: string; taskId: string; onProgress?: (progress: SnapshotProgress) => void }) {
    for (const progress of this.progress.splice(0)) input.onProgress?.(progress);
    const sandbox = new MemorySandbox(`sbx-${this.acquired.length + 1}`, input.baseSha, this.base);
    this.acquired.push(sandbox);
    this.alive.set(sandbox.id, sandbox);
    return { sandbox, source: 'snapshot' as const, startMs: 5 };
  }
  async reattach(input: { sandboxId: string }) {
    return this.alive.get(input.sandboxId);
  }
  async release(sandbox: Sandbox) {
    this.released.push(sandbox.id);
    this.alive.delete(sandbox.id);
    await sandbox.destroy();
  }
}

export type AgentScript = (input: AgentInput, call: number) => Promise<AgentResult>;

export class ScriptedAgent implements AgentPort {
  calls: AgentInput[] = [];
  constructor(private readonly script: AgentScript) {}
  async run(input: AgentInput): Promise<AgentResult> {
    this.calls.push(input);
    return this.script(input, this.calls.length);
  }
}

/** An agent step that edits src/a.ts through the sandbox and records file.changed, like edit_file. */
export async function editLikeTheAgent(input: AgentInput, from: string, to: string): Promise<void> {
  const before = (await input.sandbox.readFile('src/a.ts')).toString();
  const after = before.replace(from, to);
  await input.sandbox.writeFile('src/a.ts', after);
  const patch = createTwoFilesPatch('a/src/a.ts', 'b/src/a.ts', before, after, undefined, undefined, { context: 3 });
  await input.events.append({ type: 'file.changed', data: { path: 'src/a.ts', change: 'modified', patch } });
}

/** Scripted results, never overridden (`policyPort` over a real policy is the override-aware one). */
export class FakePolicy implements PolicyPort {
  results: PolicyResult[] = [];
  /** The repo owners every verdict names (none: a block cannot be overridden). */
  owners: string[] = [];
  checks: Array<{ task: Task; diff: string; stage: 'review' | 'push'; events: TaskEvent[] }> = [];
  async check(input: { task: Task; diff: string; stage: 'review' | 'push'; events: TaskEvent[] }): Promise<PolicyVerdict> {
    this.checks.push(input);
    return { ...(this.results.shift() ?? { ok: true, stage: input.stage, violations: [] }), overridden: false, owners: this.owners };
  }
}

export class CountingPublisher implements PublisherPort {
  pushes = 0;
  async publish(input: { task: Task }): Promise<PublishResult> {
    this.pushes += 1;
    return { number: 1, url: `dockhand-local://app/pulls/1`, branch: `dockhand/${input.task.id}`, headSha: 'c'.repeat(40) };
  }
}
