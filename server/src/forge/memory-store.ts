import { notFound } from '../errors';
import type { NewPullRequestRecord, PullRequestRecord, PullRequestState, PullRequestStore } from './types';

/** `PullRequestStore` in memory: for tests and for a server run without persistence. */
export class InMemoryPullRequestStore implements PullRequestStore {
  private readonly records = new Map<string, PullRequestRecord[]>();

  private of(repo: string): PullRequestRecord[] {
    let list = this.records.get(repo);
    if (!list) {
      list = [];
      this.records.set(repo, list);
    }
    return list;
  }

  async insert(record: NewPullRequestRecord): Promise<PullRequestRecord> {
    const list = this.of(record.repo);
    const stored: PullRequestRecord = { ...record, number: list.length + 1 };
    list.push(stored);
    return { ...stored };
  }

  async get(repo: string, number: number): Promise<PullRequestRecord | undefined> {
    const found = this.of(repo).find((record) => record.number === number);
    return found ? { ...found } : undefined;
  }

  async findByBranch(repo: string, branch: string): Promise<PullRequestRecord | undefined> {
    const found = this.of(repo).filter((record) => record.branch === branch).at(-1);
    return found ? { ...found } : undefined;
  }

  async update(
    repo: string,
    number: number,
    patch: Parameters<PullRequestStore['update']>[2],
  ): Promise<PullRequestRecord> {
    const list = this.of(repo);
    const index = list.findIndex((record) => record.number === number);
    if (index < 0) throw notFound('pull request', `${repo}#${number}`);
    const current = list[index]!;
    const updated: PullRequestRecord = { ...current, ...patch };
    list[index] = updated;
    return { ...updated };
  }

  async list(repo: string, filter: { state?: PullRequestState } = {}): Promise<PullRequestRecord[]> {
    return this.of(repo)
      .filter((record) => filter.state === undefined || record.state === filter.state)
      .map((record) => ({ ...record }));
  }
}
