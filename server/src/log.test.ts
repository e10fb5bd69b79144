import { describe, expect, it } from 'vitest';
import { secretFormats } from './policy/testing/secret-formats';
import { createLogger, maskLogLine } from './log';

function capture(options: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  const logger = createLogger({ ...options, destination: { write: (line: string) => { lines.push(line); } } });
  return { logger, lines };
}

describe('log lines are scanned for secrets before they are written', () => {
  it('every secret format the content gate knows is masked, in the message, in fields and in an error, and the line stays JSON', () => {
    const formats = secretFormats();
    const { logger, lines } = capture();
    const planted: string[] = [];
    for (const format of formats) {
      const { secret, line } = format.make();
      planted.push(secret);
      logger.info(line);
      logger.warn({ output: { stderr: line }, rule: format.rule }, 'tool output');
      logger.error({ err: new Error(line) }, 'request failed');
    }
    expect(lines).toHaveLength(formats.length * 3);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    // An error's stack starts "Error: <message>": a rule that wants its name at the start of a line
    // (PASSWORD=… in a .env) does not see it there, in the log as in the content gate; its message is checked.
    const text = lines.map((line) => {
      const parsed = JSON.parse(line) as { err?: { stack?: string } };
      if (parsed.err) delete parsed.err.stack;
      return JSON.stringify(parsed);
    }).join('\n');
    const leaked = formats.filter((_format, i) => {
      const secret = planted[i] ?? '';
      // A multi-line key is masked line by line: no long piece of its body may remain.
      const pieces = secret.includes('\n') ? secret.split('\n').filter((piece) => piece.length >= 16 && !piece.startsWith('-----')) : [secret];
      return pieces.some((piece) => text.includes(JSON.stringify(piece).slice(1, -1)));
    }).map((format) => format.rule);
    expect(leaked).toEqual([]);
    expect(formats.length).toBeGreaterThanOrEqual(25);
    expect(text.match(/\[secret:[a-z0-9-]+/g)?.length).toBeGreaterThanOrEqual(formats.length * 3);
  });

  it('a credentialed URL and a password assignment are masked; ordinary lines are written unchanged', () => {
    expect(maskLogLine('{"msg":"clone postgres://app:Vq7#pL2x9Rk4mZ@db:5432/main"}')).not.toContain('Vq7#pL2x9Rk4mZ');
    const plain = '{"level":30,"time":1764650000000,"pid":7,"hostname":"h","reqId":"req-1f","taskId":"t_01JABCDEFG","msg":"request completed","responseTime":3.2}\n';
    expect(maskLogLine(plain)).toBe(plain);
  });

  it('known values (the push token) are still redacted, and `scan: false` writes lines as they are', () => {
    const token = secretFormats().find((format) => format.rule === 'github-pat')?.make().secret ?? '';
    expect(token).toMatch(/^ghp_/);
    const scanned = capture({ secrets: ['push-token-value-123'] });
    scanned.logger.info('pushing with push-token-value-123 and ' + token);
    expect(scanned.lines[0]).toContain('[REDACTED]');
    expect(scanned.lines[0]).not.toContain(token);
    const raw = capture({ scan: false });
    raw.logger.info(`pushing with ${token}`);
    expect(raw.lines[0]).toContain(token);
  });
});
