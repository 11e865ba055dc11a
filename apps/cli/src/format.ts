// Plain-text output for people: aligned tables and key/value blocks. Scripts use --json instead.

export interface Column {
  title: string;
  /** Longer cells are cut with an ellipsis. */
  max?: number;
  align?: 'left' | 'right';
}

export function table(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => columns.map((column, i) => clip(oneLine(row[i] ?? ''), column.max)));
  const widths = columns.map((column, i) => Math.max(column.title.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (values: readonly string[]) =>
    values
      .map((value, i) =>
        columns[i]?.align === 'right' ? value.padStart(widths[i] ?? 0) : value.padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [line(columns.map((column) => column.title.toUpperCase())), ...cells.map(line)].join('\n');
}

export function keyValues(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join('\n');
}

export function iso(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ');
}

function clip(text: string, max: number | undefined): string {
  return max !== undefined && text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
