import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

describe('the dependency cache switch and bound', () => {
  it('DOCKHAND_DEP_CACHE takes on/off (and 1/0, true/false); on by default', () => {
    expect(loadConfig({}).sandbox.depCache).toEqual({ enabled: true, maxGiB: 4 });
    expect(loadConfig({ DOCKHAND_DEP_CACHE: 'off' }).sandbox.depCache.enabled).toBe(false);
    expect(loadConfig({ DOCKHAND_DEP_CACHE: 'OFF' }).sandbox.depCache.enabled).toBe(false);
    expect(loadConfig({ DOCKHAND_DEP_CACHE: '0' }).sandbox.depCache.enabled).toBe(false);
    expect(loadConfig({ DOCKHAND_DEP_CACHE: 'on' }).sandbox.depCache.enabled).toBe(true);
    expect(() => loadConfig({ DOCKHAND_DEP_CACHE: 'disabled' })).toThrow('configuration DOCKHAND_DEP_CACHE: "disabled" is not one of on, 1, true, off, 0, false');
  });

  it('DOCKHAND_DEP_CACHE_MAX_GIB is a positive number of GiB; a bad one names the variable', () => {
    expect(loadConfig({ DOCKHAND_DEP_CACHE_MAX_GIB: '16' }).sandbox.depCache).toEqual({ enabled: true, maxGiB: 16 });
    expect(loadConfig({ DOCKHAND_DEP_CACHE_MAX_GIB: '0.25' }).sandbox.depCache.maxGiB).toBe(0.25);
    for (const bad of ['0', '-1', 'lots']) {
      let error: unknown;
      try {
        loadConfig({ DOCKHAND_DEP_CACHE_MAX_GIB: bad });
      } catch (caught) {
        error = caught;
      }
      expect(error, bad).toMatchObject({ code: 'bad_request', field: 'DOCKHAND_DEP_CACHE_MAX_GIB' });
    }
  });

  it('reads the same settings from a config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-config-'));
    try {
      const file = join(dir, 'dockhand.yml');
      writeFileSync(file, 'sandbox:\n  depCache:\n    enabled: false\n    maxGiB: 2\n');
      expect(loadConfig({ DOCKHAND_CONFIG: file }).sandbox.depCache).toEqual({ enabled: false, maxGiB: 2 });
      expect(loadConfig({ DOCKHAND_CONFIG: file, DOCKHAND_DEP_CACHE: 'on' }).sandbox.depCache).toEqual({ enabled: true, maxGiB: 2 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
