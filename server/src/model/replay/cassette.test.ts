import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../../test/support/temporary-dirs';
import { DockhandError } from '../../errors';
import { loadCassette, parseCassette, stopReasonOf } from './cassette';

describe('cassettes', () => {
  it('loads YAML with defaults filled in', () => {
    const dir = temporaryDir('cassette-');
    const path = join(dir, 'fix.yaml');
    writeFileSync(
      path,
      [
        'description: fix a failing test',
        'turns:',
        '  - content:',
        '      - { type: text, text: "Running the tests." }',
        '      - { type: tool_use, name: run_tests, input: { paths: [src] } }',
        '  - expect: { toolResultContains: "2 failed" }',
        '    faults: [{ kind: overloaded }, { kind: cut, afterDeltas: 3 }]',
        '    content: [{ type: text, text: "Done." }]',
      ].join('\n'),
    );
    const cassette = loadCassette(path);
    expect(cassette.deltaDelayMs).toBe(0);
    const [first, second] = cassette.turns;
    if (!first || 'oneOf' in first || !second || 'oneOf' in second) throw new Error('expected plain turns');
    expect(stopReasonOf(first)).toBe('tool_use');
    expect(stopReasonOf(second)).toBe('end_turn');
    expect(second.faults).toEqual([
      { kind: 'overloaded', times: 1 },
      { kind: 'cut', afterDeltas: 3, mode: 'reset', times: 1 },
    ]);
  });

  it('names the offending field of a bad cassette', () => {
    const bad = { turns: [{ content: [{ type: 'text', text: 'ok' }] }, { content: [{ type: 'tool_use', input: {} }] }] };
    expect(() => parseCassette(bad, 'fix.yaml')).toThrow(DockhandError);
    expect(() => parseCassette(bad, 'fix.yaml')).toThrow(/fix\.yaml: turns\[1\]\.content\[0\]\.name/);
    expect(() => parseCassette({ turns: [{ faults: [{ kind: 'meltdown' }], content: [{ type: 'text', text: 'x' }] }] })).toThrow(
      /turns\[0\]\.faults\[0\]\.kind/,
    );
    expect(() => parseCassette({ turns: [{ expect: { toolResultMatches: '(' }, content: [{ type: 'text', text: 'x' }] }] })).toThrow(
      /not a valid regular expression/,
    );
  });
});
