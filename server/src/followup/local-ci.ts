import type { Task } from '@dockhand/protocol';
import type { CheckConclusion, PullRequestCheck } from '../forge/checks';
import type { PullRequestThreads, PullRequestThreadStore } from '../forge/comments';
import type { PullRequest } from '../forge/types';
import type { FeedbackEngine } from '../feedback/types';
import type { Logger } from '../log';
import type { SandboxProvider } from '../runner/ports';

/*
 * The local forge's own CI (opt-in: DOCKHAND_LOCAL_CI): on each new PR head, the repository's test
 * command (its `prePr` when the recipe has one) in a fresh sandbox — the base snapshot with the
 * PR's diff applied — recorded as the check `dockhand/tests` with its log. A red run is run again
 * at the same commit (a pass then makes it flaky) and, when still red, once at the base commit (a
 * red there makes it pre-existing), so the follower's triage has the evidence a forge's CI gives.
 * Results are posted the green ones first: the follower triages a red as soon as it sees it.
 */

export const LOCAL_CHECK = 'dockhand/tests';

export interface LocalCiOptions {
  sandboxes: SandboxProvider;
  feedback: (repo: string) => FeedbackEngine;
  threads: PullRequestThreads;
  threadStore: PullRequestThreadStore;
  logger?: Logger;
}

interface Run {
  conclusion: CheckConclusion;
  log: string;
}

export class LocalCi {
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly options: LocalCiOptions) {}

  /** Starts the check of the PR's head unless it ran or runs; resolves when this call's run ends. */
  checkHead(task: Task, pr: PullRequest, diff: string): Promise<void> {
    const key = `${pr.repo}@${pr.headSha}`;
    const current = this.running.get(key);
    if (current) return current;
    const run = this.run(task, pr, diff)
      .catch((error: unknown) => this.options.logger?.warn({ err: error, taskId: task.id }, 'local CI check failed to run'))
      .finally(() => this.running.delete(key));
    this.running.set(key, run);
    return run;
  }

  /** True while a check of this head runs here. */
  isRunning(pr: Pick<PullRequest, 'repo' | 'headSha'>): boolean {
    return this.running.has(`${pr.repo}@${pr.headSha}`);
  }

  private async run(task: Task, pr: PullRequest, diff: string): Promise<void> {
    const existing = await this.options.threadStore.listChecks(pr.repo, pr.headSha);
    if (existing.some((check) => check.name === LOCAL_CHECK)) return;
    const first = await this.once(task, diff, `${task.id}-ci-1`);
    if (first.conclusion !== 'failure') {
      await this.post(pr, pr.headSha, first);
      return;
    }
    const again = await this.once(task, diff, `${task.id}-ci-2`);
    if (again.conclusion === 'success') {
      await this.post(pr, pr.headSha, again);
      await this.post(pr, pr.headSha, first);
      return;
    }
    const atBase = (await this.options.threadStore.listChecks(pr.repo, task.context.baseSha)).some((check) => check.name === LOCAL_CHECK);
    if (!atBase) await this.post(pr, task.context.baseSha, await this.once(task, '', `${task.id}-ci-base`));
    await this.post(pr, pr.headSha, first);
    await this.post(pr, pr.headSha, again);
  }

  private post(pr: PullRequest, sha: string, run: Run): Promise<PullRequestCheck> {
    return this.options.threads.check({ repo: pr.repo, number: pr.number, name: LOCAL_CHECK, conclusion: run.conclusion, log: run.log, postedBy: 'dockhand', sha });
  }

  /** One run of the suite: base snapshot, the diff applied, the full suite (or prePr). */
  private async once(task: Task, diff: string, runId: string): Promise<Run> {
    const started = Date.now();
    let acquired;
    try {
      acquired = await this.options.sandboxes.acquire({ repo: task.context.repo, baseSha: task.context.baseSha, taskId: runId });
    } catch (error) {
      return { conclusion: 'cancelled', log: `the runner could not start: ${error instanceof Error ? error.message : String(error)}` };
    }
    const { sandbox } = acquired;
    try {
      if (diff.trim() !== '') {
        const applied = await sandbox.exec({ cmd: ['git', 'apply', '--whitespace=nowarn', '-'], stdin: diff, timeoutMs: 120_000 });
        if (applied.exitCode !== 0) return { conclusion: 'cancelled', log: `the PR's diff did not apply in the runner: ${applied.stderr.slice(0, 2000)}` };
      }
      const report = await this.options.feedback(task.context.repo).runTests(sandbox, { scope: 'full', prePr: true });
      const red = report.failed > 0 || !report.ok;
      return { conclusion: red ? 'failure' : 'success', log: `$ ${report.command}\n${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped in ${((Date.now() - started) / 1000).toFixed(1)} s\n${report.output}` };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { conclusion: /timed? ?out/i.test(message) ? 'timed_out' : 'cancelled', log: `the run ended before its tests did: ${message}` };
    } finally {
      await this.options.sandboxes.release(sandbox).catch(() => undefined);
    }
  }
}
