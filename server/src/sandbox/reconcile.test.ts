import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { LABELS, isOrphan, ownerLabels } from './docker-driver';

describe('isOrphan (reconcile decisions)', () => {
  const me = 'server-a';

  it('treats our own unheld containers as orphans', () => {
    expect(isOrphan(ownerLabels(me), me)).toBe(true);
  });

  it('leaves a live server on this host alone', () => {
    expect(isOrphan(ownerLabels('server-b'), me)).toBe(false);
  });

  it('removes containers of a server process that is gone, or past their deadline', () => {
    expect(isOrphan({ [LABELS.owner]: 'server-c', [LABELS.ownerHost]: hostname(), [LABELS.ownerPid]: '999999' }, me)).toBe(true);
    expect(isOrphan({ ...ownerLabels('server-b'), [LABELS.deadline]: String(Date.now() - 1000) }, me)).toBe(true);
  });

  it('leaves other hosts sharing the engine alone until their deadline', () => {
    const remote = { [LABELS.owner]: 'server-d', [LABELS.ownerHost]: 'another-host', [LABELS.ownerPid]: '1' };
    expect(isOrphan(remote, me)).toBe(false);
    expect(isOrphan({ ...remote, [LABELS.deadline]: String(Date.now() - 1) }, me)).toBe(true);
  });
});
