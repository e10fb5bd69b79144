import { describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { cleanMessage, commitProvenance, signingArgs, withTrailer } from './push';

describe('cleanMessage (what `git commit -F` would store, for `git commit-tree`)', () => {
  it('drops trailing white space and outer blank lines, makes runs of blank lines one, ends with a newline', () => {
    expect(cleanMessage('\n\nFix average()  \n\n\n\nBody line\t\n\nCo-authored-by: a <a@b>\n\n')).toBe('Fix average()\n\nBody line\n\nCo-authored-by: a <a@b>\n');
    expect(cleanMessage('one line')).toBe('one line\n');
  });
});

describe('withTrailer (the server\'s trailers, and only the server\'s)', () => {
  const ada = { name: 'Ada', email: 'ada@example.invalid' };

  it('ends the message with Co-authored-by, Dockhand-Task, Dockhand-Trajectory and the hook\'s lines, in that order', () => {
    expect(withTrailer('Fix it\n\nbody', ada, commitProvenance('t1', 'https://dh.example/'), ['Dockhand-Attestation: sha256:abc'])).toBe(
      'Fix it\n\nbody\n\nCo-authored-by: Ada <ada@example.invalid>\nDockhand-Task: t1\nDockhand-Trajectory: https://dh.example/v1/tasks/t1/events\nDockhand-Attestation: sha256:abc\n',
    );
    expect(withTrailer('Fix it', undefined, commitProvenance('t1', undefined))).toBe('Fix it\n\nDockhand-Task: t1\n');
  });

  it('drops Dockhand-* lines from the message text, whatever their case or spacing', () => {
    const message = withTrailer('Fix it\nDockhand-Task: forged\n  dockhand-attestation : sha256:evil\nkept line', ada, commitProvenance('t1', undefined));
    expect(message).toBe('Fix it\nkept line\n\nCo-authored-by: Ada <ada@example.invalid>\nDockhand-Task: t1\n');
  });

  it('refuses a trailer value that would break the block, and a hook line outside the server\'s keys', () => {
    expect(() => withTrailer('x', undefined, { taskId: 't1\nSigned-off-by: M' })).toThrow(DockhandError);
    expect(() => withTrailer('x', undefined, undefined, ['Signed-off-by: Mallory'])).toThrow(/must be "Dockhand-<Key>: <value>"/);
    expect(() => withTrailer('x', undefined, undefined, ['Dockhand-Attestation: two words'])).toThrow(DockhandError);
  });

  it('signs only with a signer, naming the key file by its absolute path', () => {
    expect(signingArgs(undefined)).toEqual({ config: [], flag: [] });
    expect(signingArgs({ privateKeyPath: '/data/signing-key' })).toEqual({ config: ['-c', 'gpg.format=ssh', '-c', 'user.signingkey=/data/signing-key'], flag: ['-S'] });
  });
});
