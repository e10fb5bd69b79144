import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PolicyPool } from './pool';

/** A new file of `megabytes` of random base64 lines: one entropy finding per line. */
function randomTextDiff(megabytes: number): string {
  const lines: string[] = [];
  for (let size = 0; size < megabytes * 1e6; size += 66) lines.push(`+${randomBytes(48).toString('base64')}`);
  return `diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,${lines.length} @@\n${lines.join('\n')}\n`;
}

describe('policy worker threads', () => {
  const pool = new PolicyPool(1);
  afterAll(() => pool.close());

  it('mask a multi-megabyte diff while the event loop keeps answering', async () => {
    const diff = randomTextDiff(4);
    await pool.run('maskSecrets', 'warm-up', {}); // the thread's start is not what is measured
    let last = Date.now();
    let worstGap = 0;
    const ticker = setInterval(() => {
      worstGap = Math.max(worstGap, Date.now() - last);
      last = Date.now();
    }, 10);
    const started = Date.now();
    const masked = await pool.run('maskResult', { diff, summary: 'done' }, []);
    clearInterval(ticker);
    expect(Date.now() - started).toBeGreaterThan(100); // real work happened meanwhile
    expect(masked.diff).toContain('[secret:high-entropy-string');
    expect(masked.diff.length).toBeLessThan(diff.length);
    expect(worstGap).toBeLessThan(250);
  }, 120_000);

  it('a job that throws rejects with its message; the thread serves the next job', async () => {
    await expect(pool.run('checkPolicy', null as never)).rejects.toThrow(/policy worker: /);
    const result = await pool.run('checkPolicy', { diff: 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n', allowTestEdits: false, stage: 'review' });
    expect(result.ok).toBe(true);
  }, 60_000);
});
