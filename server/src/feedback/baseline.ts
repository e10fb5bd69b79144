import type { BaselineKey, BaselineResult, BaselineStore } from './types';

/*
 * The baseline: the repository's full suite at the base commit, before any change, run twice.
 * Tests that fail both times are pre-existing failures (reported, never the agent's to fix and
 * never blocking a correct fix); tests whose outcome differs are flaky and go to quarantine. It
 * is kept per (repository, environment recipe, base SHA): the second task on the same base, and
 * a task after `dockhand repo check`, reuse it.
 */

function keyOf(key: BaselineKey): string {
  return `${key.repo}\0${key.recipe}\0${key.baseSha}`;
}

export class InMemoryBaselineStore implements BaselineStore {
  private readonly results = new Map<string, BaselineResult>();

  async get(key: BaselineKey): Promise<BaselineResult | undefined> {
    const result = this.results.get(keyOf(key));
    return result ? structuredClone(result) : undefined;
  }

  async put(key: BaselineKey, result: BaselineResult): Promise<void> {
    this.results.set(keyOf(key), structuredClone(result));
  }
}
