import { describe, expect, it } from 'vitest';
import { loadConfig } from './config';
import { DockhandError } from './errors';

describe('boolean configuration flags', () => {
  it('DOCKHAND_UNSAFE_RUNC takes 1/true/0/false and names the variable and the allowed values otherwise', () => {
    expect(loadConfig({ DOCKHAND_UNSAFE_RUNC: '1' }).sandbox.unsafeRunc).toBe(true);
    expect(loadConfig({ DOCKHAND_UNSAFE_RUNC: 'TRUE' }).sandbox.unsafeRunc).toBe(true);
    expect(loadConfig({ DOCKHAND_UNSAFE_RUNC: '0' }).sandbox.unsafeRunc).toBe(false);
    expect(loadConfig({}).sandbox.unsafeRunc).toBe(false);
    let error: unknown;
    try {
      loadConfig({ DOCKHAND_UNSAFE_RUNC: 'yes' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DockhandError);
    expect(error).toMatchObject({ code: 'bad_request', field: 'DOCKHAND_UNSAFE_RUNC' });
    expect(String(error)).toContain('configuration DOCKHAND_UNSAFE_RUNC: "yes" is not one of 1, true, 0, false');
  });
});
