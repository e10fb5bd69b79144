/**
 * Registration and readiness of a corpus repository through the CLI a user runs:
 * `dockhand repo add <id> --from <path>` and `dockhand repo check <id> --json`.
 */
import { ReadinessReport } from '@dockhand/protocol';
import type { CorpusEntry } from '../../scripts/corpus/build';
import type { CorpusServer } from './harness';

export interface Registration {
  ok: boolean;
  /** The command that registered it. */
  how: string;
  output: string;
}

export async function registerRepo(server: CorpusServer, entry: CorpusEntry): Promise<Registration> {
  const added = await server.cli(['repo', 'add', entry.id, '--from', entry.path], 5 * 60_000);
  if (added.code === 0) return { ok: true, how: 'repo add', output: added.output };
  if (/already (registered|exists)/i.test(added.output)) return { ok: true, how: 'repo add (already registered)', output: added.output };
  if (/unknown command/i.test(added.output)) {
    // A server without `repo add` (older builds): the local forge repository from the same path.
    const created = await server.cli(['repo-create', entry.id, '--from', entry.path], 5 * 60_000);
    return { ok: created.code === 0, how: 'repo-create (no repo add)', output: `${added.output}\n${created.output}` };
  }
  return { ok: false, how: 'repo add', output: added.output };
}

export interface Readiness {
  ready: boolean;
  summary: string;
  report?: ReadinessReport;
  /** The snapshot's cold build time when the check built it. */
  coldBuildSeconds?: number;
  seconds: number;
}

/** The last JSON object in the output that is a readiness report. */
function reportIn(output: string): ReadinessReport | undefined {
  const candidates = [output.trim(), output.slice(output.indexOf('{'), output.lastIndexOf('}') + 1)];
  for (const line of output.split('\n').reverse()) if (line.trim().startsWith('{')) candidates.push(line.trim());
  for (const candidate of candidates) {
    try {
      const parsed = ReadinessReport.safeParse(JSON.parse(candidate));
      if (parsed.success) return parsed.data;
    } catch {
      // not JSON: try the next candidate
    }
  }
  return undefined;
}

export async function readinessOf(server: CorpusServer, id: string): Promise<Readiness> {
  const checked = await server.cli(['repo', 'check', id, '--json'], 40 * 60_000);
  const report = reportIn(checked.output);
  if (!report) {
    return { ready: false, summary: `no readiness report (exit ${checked.code}): ${checked.output.trim().split('\n').slice(-3).join(' | ').slice(0, 300)}`, seconds: checked.seconds };
  }
  const blocking = report.blocking.map((item) => item.problem).join('; ');
  const tests = `${report.tests.passed} passed, ${report.tests.failed} failed${report.tests.preExistingFailures.length ? ` (${report.tests.preExistingFailures.length} pre-existing)` : ''}`;
  return {
    ready: report.ready,
    summary: `${report.tests.command ?? '?'}: ${tests}${blocking ? `; blocking: ${blocking}` : ''}`,
    report,
    ...(report.snapshot?.built && report.snapshot.buildSeconds !== undefined ? { coldBuildSeconds: report.snapshot.buildSeconds } : {}),
    seconds: checked.seconds,
  };
}
