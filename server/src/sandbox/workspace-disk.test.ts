import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { diskFullNote, imageLayers } from './workspace-disk';

describe('workspace disk settings', () => {
  it('reads DOCKHAND_SANDBOX_DISK as a size in MiB, 10 GiB by default, off as none', () => {
    const disk = (value?: string) => loadConfig(value === undefined ? {} : { DOCKHAND_SANDBOX_DISK: value }, {}).sandbox.diskMiB;
    expect(disk()).toBe(10_240);
    expect(disk('10g')).toBe(10_240);
    expect(disk('512MiB')).toBe(512);
    expect(disk('2048')).toBe(2048);
    expect(disk('1.5G')).toBe(1536);
    expect(disk('off')).toBe(0);
    expect(() => disk('lots')).toThrow(/DOCKHAND_SANDBOX_DISK|sandbox\.diskMiB/);
  });

  it('takes an image\u2019s overlay2 layers top first, and none from other storage drivers', () => {
    expect(imageLayers({ Name: 'overlay2', Data: { UpperDir: '/l/3/diff', LowerDir: '/l/2/diff:/l/1/diff', MergedDir: '/m', WorkDir: '/w' } })).toEqual(['/l/3/diff', '/l/2/diff', '/l/1/diff']);
    expect(imageLayers({ Name: 'overlay2', Data: { UpperDir: '/l/1/diff' } })).toEqual(['/l/1/diff']);
    expect(imageLayers({ Name: 'btrfs', Data: null })).toBeUndefined();
    expect(imageLayers(undefined)).toBeUndefined();
  });

  it('names the limit and the setting when the disk is full', () => {
    expect(diskFullNote(10_240)).toContain('/workspace holds at most 10 GiB (DOCKHAND_SANDBOX_DISK)');
    expect(diskFullNote(300)).toContain('at most 300 MiB');
  });
});
