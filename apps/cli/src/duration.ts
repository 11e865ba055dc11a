// Durations on the command line: "90s", "15m", "2h", "7d", "1h30m", "500ms".

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g;

/** Milliseconds, or an Error that shows the accepted form. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  let total = 0;
  let consumed = 0;
  for (const match of trimmed.matchAll(PART)) {
    if (match.index !== consumed) break;
    total += Number(match[1]) * (UNIT_MS[match[2] as string] as number);
    consumed += match[0].length;
  }
  if (trimmed === '' || consumed !== trimmed.length) {
    throw new Error(
      `'${text}' is not a duration: use a number and a unit (ms, s, m, h, d, w), e.g. 90s, 15m, 1h30m, 7d`,
    );
  }
  return Math.round(total);
}

/** "3s", "5m 2s", "2h 3m", "4d 1h": compact, for tables. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}
