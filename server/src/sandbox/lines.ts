/** Lines of a text file, as the read_file tool shows them; see `Sandbox.readLines`. */
export interface LineSlice {
  /** The file's size in bytes. */
  bytes: number;
  /** A NUL byte in the first 8,000 bytes. */
  binary: boolean;
  /** Lines in the file (a final line end does not start another line); 0 when binary or over the size cap. */
  total: number;
  /** From the first line asked for: [text cut to the line cap, the line's full length]. */
  lines: Array<[string, number]>;
}

export interface LineRequest {
  /** 1-based. */
  start: number;
  count: number;
  maxLineChars: number;
  /** Files larger than this are not split into lines (only `bytes` is set). */
  maxBytes: number;
}

/**
 * The slice of a file's content the read_file tool shows. The channel program does the same inside
 * the sandbox (`readLines` in channel-program.ts) so that only the slice crosses the boundary.
 */
export function sliceLines(content: Buffer, request: LineRequest): LineSlice {
  const binary = content.subarray(0, 8000).includes(0);
  if (binary || content.length > request.maxBytes) return { bytes: content.length, binary, total: 0, lines: [] };
  const all = content.toString('utf8').split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  const lines = all.slice(request.start - 1, request.start - 1 + request.count).map((line): [string, number] => [line.slice(0, request.maxLineChars), line.length]);
  return { bytes: content.length, binary, total: all.length, lines };
}
