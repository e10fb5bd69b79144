import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { modelForTask } from './fleet';

describe('modelForTask (cost routing)', () => {
  const fleetWide = loadConfig({ DOCKHAND_MODEL: 'claude-sonnet-4-6', DOCKHAND_MODEL_ROUTINE: 'claude-haiku-4-5' });
  const plain = loadConfig({ DOCKHAND_MODEL: 'claude-sonnet-4-6' });
  const policy = (routineModel?: string) => async () => (routineModel ? { routineModel } : {});

  it('runs a routine task on the repository\'s routine model, else the fleet\'s, else the default model', async () => {
    expect(await modelForTask(fleetWide, { priority: 'routine' }, policy('claude-haiku-5-5'))).toBe('claude-haiku-5-5');
    expect(await modelForTask(fleetWide, { priority: 'routine' }, policy())).toBe('claude-haiku-4-5');
    expect(await modelForTask(plain, { priority: 'routine' }, policy())).toBe('claude-sonnet-4-6');
    expect(await modelForTask(plain, { priority: 'routine' }, policy('claude-haiku-5-5'))).toBe('claude-haiku-5-5');
  });

  it('never reads the policy for a normal task, which runs on the default model', async () => {
    const unread = async (): Promise<never> => {
      throw new Error('the policy was read for a normal task');
    };
    expect(await modelForTask(fleetWide, { priority: 'normal' }, unread)).toBe('claude-sonnet-4-6');
  });

  it('a routine task whose repository policy cannot be read fails with the policy\'s error', async () => {
    const broken = async (): Promise<never> => {
      throw new Error('.dockhand/policy.yml: routineModel: model "x" has no prices');
    };
    await expect(modelForTask(fleetWide, { priority: 'routine' }, broken)).rejects.toThrow(/routineModel/);
  });
});
