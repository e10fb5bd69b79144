import { buildReport, gradeFileOf, type EvalReport } from './report';
import type { RunDirectory } from './run-dir';
import { mcnemarExact } from './stats';

/*
 * Two runs on the same instances, paired: only instances both runs have count, and what matters
 * is the instances whose verdict changed (an exact McNemar test on those says whether the
 * difference is more than chance), with cost and turns side by side.
 */

export interface Comparison {
  a: { model: string; mode: string; resolved: number; costUsd: number };
  b: { model: string; mode: string; resolved: number; costUsd: number };
  paired: number;
  onlyInA: string[];
  onlyInB: string[];
  gained: string[];
  lost: string[];
  pValue: number;
}

export function compareReports(a: EvalReport, b: EvalReport): Comparison {
  const rowsA = new Map(a.rows.map((row) => [row.instance_id, row]));
  const rowsB = new Map(b.rows.map((row) => [row.instance_id, row]));
  const both = [...rowsA.keys()].filter((id) => rowsB.has(id)).sort();
  const gained = both.filter((id) => !rowsA.get(id)?.resolved && rowsB.get(id)?.resolved);
  const lost = both.filter((id) => rowsA.get(id)?.resolved && !rowsB.get(id)?.resolved);
  const side = (report: EvalReport, rows: typeof rowsA) => ({
    model: report.manifest.model,
    mode: report.manifest.mode,
    resolved: both.filter((id) => rows.get(id)?.resolved).length,
    costUsd: both.reduce((total, id) => total + (rows.get(id)?.costUsd ?? 0), 0),
  });
  return {
    a: side(a, rowsA),
    b: side(b, rowsB),
    paired: both.length,
    onlyInA: [...rowsA.keys()].filter((id) => !rowsB.has(id)).sort(),
    onlyInB: [...rowsB.keys()].filter((id) => !rowsA.has(id)).sort(),
    gained,
    lost,
    pValue: mcnemarExact(gained.length, lost.length),
  };
}

export function compareRuns(a: RunDirectory, b: RunDirectory): Comparison {
  return compareReports(buildReport(a, gradeFileOf(a)), buildReport(b, gradeFileOf(b)));
}

export function formatComparison(comparison: Comparison): string {
  const { a, b } = comparison;
  const lines = [
    `paired instances: ${comparison.paired}`,
    `A ${a.model} (${a.mode}): ${a.resolved} resolved, $${a.costUsd.toFixed(4)}`,
    `B ${b.model} (${b.mode}): ${b.resolved} resolved, $${b.costUsd.toFixed(4)}`,
    `resolved only by B (+${comparison.gained.length}): ${comparison.gained.join(', ') || '—'}`,
    `resolved only by A (-${comparison.lost.length}): ${comparison.lost.join(', ') || '—'}`,
    `exact McNemar p = ${comparison.pValue.toFixed(3)}${comparison.gained.length + comparison.lost.length === 0 ? ' (no instance changed)' : ''}`,
  ];
  if (comparison.onlyInA.length || comparison.onlyInB.length) lines.push(`not paired: ${comparison.onlyInA.length} only in A, ${comparison.onlyInB.length} only in B`);
  return lines.join('\n');
}
