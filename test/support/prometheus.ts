// Reading the Prometheus text format in tests: scrape a /metrics URL and look samples up by name and labels.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  contentType: string;
  text: string;
  samples: Sample[];
  /** The one sample with this name whose labels include `labels` (0 when there is none). */
  value(name: string, labels?: Record<string, string>): number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Scrape> {
  const response = await fetch(url, { headers });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  const text = await response.text();
  return parseMetrics(text, response.headers.get('content-type') ?? '');
}

export function parseMetrics(text: string, contentType = ''): Scrape {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(LABEL)) labels[label[1] as string] = label[2] as string;
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return {
    contentType,
    text,
    samples,
    value(name, labels = {}) {
      const found = samples.filter(
        (sample) =>
          sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
      );
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      return found[0]?.value ?? 0;
    },
  };
}
