import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RepoMirror } from '../sandbox/mirror';
import { mirrorFirst } from './sandboxes';
import { FakeSandboxProvider } from './testing/fakes';

describe('mirrorFirst', () => {
  it("keeps a class provider's release and reattach (methods on its prototype)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-mirror-first-'));
    try {
      const inner = new FakeSandboxProvider();
      const wrapped = mirrorFirst(inner, new RepoMirror(dir));
      expect(typeof wrapped.release).toBe('function');
      expect(typeof wrapped.reattach).toBe('function');
      const acquired = await inner.acquire({ baseSha: 'a'.repeat(40), taskId: 't1' });
      await wrapped.release(acquired.sandbox);
      expect(inner.released).toEqual([acquired.sandbox.id]);
      expect(await wrapped.reattach?.({ sandboxId: 'gone', baseSha: 'a'.repeat(40), taskId: 't1' })).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
