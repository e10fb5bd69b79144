import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeLineError, patchFiles, readInstances, readPredictions, writeInstances, writePredictions } from './formats';
import { pythonJsonDumps } from './python-json';

// Written by Python's json.dumps, as SWE-bench's dataset export and inference scripts write them
// (an astropy instance with JSON-in-a-string test lists, a SWE-smith instance with plain lists).
const FIXTURES = resolve(import.meta.dirname, '../../../test/eval');
const instancesText = readFileSync(resolve(FIXTURES, 'swe-bench-instances.jsonl'), 'utf8');
const predictionsText = readFileSync(resolve(FIXTURES, 'swe-bench-predictions.jsonl'), 'utf8');

describe('SWE-bench instance files', () => {
  it('reads the fields, with the test lists decoded', () => {
    const { records, errors } = readInstances(instancesText);
    expect(errors).toEqual([]);
    expect(records).toHaveLength(2);
    const [astropy, smith] = records;
    expect(astropy?.instance_id).toBe('astropy__astropy-12907');
    expect(astropy?.FAIL_TO_PASS).toEqual([
      'astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]',
      'astropy/modeling/tests/test_separable.py::test_separable[compound_model9-result9]',
    ]);
    expect(astropy?.PASS_TO_PASS).toHaveLength(2);
    expect(astropy?.problem_statement).toContain('café 😀');
    expect(smith?.FAIL_TO_PASS).toEqual(['tests/test_a.py::test_x']);
  });

  it('writes back exactly the bytes it read (key order, JSON-encoded lists, ASCII escapes, unknown keys)', () => {
    expect(writeInstances(readInstances(instancesText).records)).toBe(instancesText);
  });

  it('writes a new instance in SWE-bench key order with its lists as JSON strings', () => {
    const [astropy] = readInstances(instancesText).records;
    if (!astropy) throw new Error('no instance');
    const { layout: _layout, ...fields } = astropy;
    const line = writeInstances([{ ...fields, dockhand: { origin: 'external' } }]).trim();
    expect(line.startsWith('{"repo": "astropy/astropy", "instance_id": "astropy__astropy-12907", "base_commit": ')).toBe(true);
    expect(line).toContain('"FAIL_TO_PASS": "[\\"astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]\\", ');
    expect(line.endsWith('"environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752", "dockhand": {"origin": "external"}}')).toBe(true);
    expect(readInstances(line).records[0]?.FAIL_TO_PASS).toEqual(astropy.FAIL_TO_PASS);
  });

  it('reports a bad line by number and field and still reads the others', () => {
    const lines = instancesText.trim().split('\n');
    const broken = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    const badList = { ...broken, instance_id: 'bad-list', FAIL_TO_PASS: '[not json' };
    const badSha = { ...broken, instance_id: 'bad-sha', base_commit: 'HEAD' };
    const text = [lines[0], '{"repo": ', JSON.stringify(badList), JSON.stringify(badSha), lines[0], lines[1]].join('\n');
    const { records, errors } = readInstances(text);
    expect(records.map((record) => record.instance_id)).toEqual(['astropy__astropy-12907', 'oauthlib__oauthlib.1fd52536.combine_file__09vlzwgc']);
    expect(errors.map((error) => describeLineError(error))).toEqual([
      expect.stringMatching(/^line 2: not valid JSON/),
      expect.stringMatching(/^line 3: FAIL_TO_PASS: must be a JSON list of test ids/),
      'line 4: base_commit: must be a full 40-character lowercase hex commit SHA',
      'line 5: instance_id: astropy__astropy-12907 is already on line 1; each instance_id may appear once',
    ]);
  });

  it('names a missing field', () => {
    const { errors } = readInstances('{"repo": "a/b", "instance_id": "x", "base_commit": "0000000000000000000000000000000000000000", "test_patch": "", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]"}');
    expect(errors.map((error) => error.field)).toEqual(['problem_statement', 'FAIL_TO_PASS']);
  });
});

describe('SWE-bench prediction files', () => {
  it('round-trips a predictions file byte for byte (extra keys such as full_output kept)', () => {
    const { records, errors } = readPredictions(predictionsText);
    expect(errors).toEqual([]);
    expect(records.map((record) => record.model_name_or_path)).toEqual(['claude-sonnet-4-6', 'gold']);
    expect(writePredictions(records)).toBe(predictionsText);
  });

  it('writes the three fields in SWE-bench order', () => {
    expect(writePredictions([{ instance_id: 'a-1', model_name_or_path: 'dockhand/gold', model_patch: 'diff --git a/x b/x\n' }]))
      .toBe('{"instance_id": "a-1", "model_name_or_path": "dockhand/gold", "model_patch": "diff --git a/x b/x\\n"}\n');
  });
});

describe('pythonJsonDumps', () => {
  it('matches json.dumps for escapes and separators', () => {
    // python3 -c 'import json; print(json.dumps({"a": "é\x7f/\n\t\x01", "b": [1.5, 2, True, None]}))'
    expect(pythonJsonDumps({ a: 'é\u007f/\n\t\u0001', b: [1.5, 2, true, null] })).toBe('{"a": "\\u00e9\\u007f/\\n\\t\\u0001", "b": [1.5, 2, true, null]}');
  });
});

describe('patchFiles', () => {
  it('lists the files of a git diff, renames on both sides', () => {
    const patch = 'diff --git a/src/a.js b/src/a.js\n--- a/src/a.js\n+++ b/src/a.js\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/old.js b/new.js\nrename from old.js\n';
    expect(patchFiles(patch)).toEqual(['new.js', 'old.js', 'src/a.js']);
  });
});
