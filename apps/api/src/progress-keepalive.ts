// Keeps a waiting tools/call alive for a client that resets its request timeout on progress (the TypeScript SDK's
// `resetTimeoutOnProgress`): while the call waits for its tool on an open request whose client sent a progress token,
// a notifications/progress goes out every PROGRESS_KEEPALIVE_MS that the tool reported nothing (docs/clients.md).
// Both wires use it: the 2025-11-25 answer stream of a plain call (wires/rev2025-11-25/streams.ts), the 2026-07-28 synchronous call's
// stream (wires/rev2026-07-28/tools.ts).
//
// Progress values must increase with each notification (2025-11-25 basic/utilities/progress). A keep-alive repeats
// the tool's last report nudged up by one part in a billion (from 0 when there was none), and a tool's report that
// would not be above the last value sent is nudged the same way: the client sees one increasing sequence, whose
// values are the tool's to nine significant digits.

/** How much a value is raised above the last one sent: relative, so that large totals keep their precision. */
const NUDGE = 1e-9;

export class ProgressKeepAlive {
  #last: number | undefined;
  #total: unknown;
  #message: unknown;
  #sentAt: number;
  readonly #startedAt: number;

  constructor(
    readonly progressToken: string | number,
    /** PROGRESS_KEEPALIVE_MS: the longest quiet spell before a keep-alive. */
    readonly everyMs: number,
    now = Date.now(),
  ) {
    this.#sentAt = now;
    this.#startedAt = now;
  }

  /**
   * A message on its way to the client: a progress notification is noted (the quiet spell starts again) and kept
   * above the last value sent; anything else passes as it is.
   */
  forwarded(message: Record<string, unknown>, now = Date.now()): Record<string, unknown> {
    if (message['method'] !== 'notifications/progress') return message;
    const params = message['params'] as Record<string, unknown> | undefined;
    const value = params?.['progress'];
    if (!params || typeof value !== 'number') return message;
    const progress = this.#last !== undefined && value <= this.#last ? nudged(this.#last) : value;
    this.#last = progress;
    this.#total = params['total'];
    this.#message = params['message'];
    this.#sentAt = now;
    return progress === value ? message : { ...message, params: { ...params, progress } };
  }

  /** Milliseconds until the next keep-alive is due (0: now). */
  dueIn(now = Date.now()): number {
    return Math.max(0, this.#sentAt + this.everyMs - now);
  }

  /** The keep-alive notification, noted as sent. */
  next(now = Date.now()): Record<string, unknown> {
    const progress = this.#last === undefined ? 0 : nudged(this.#last);
    this.#last = progress;
    this.#sentAt = now;
    const seconds = Math.round((now - this.#startedAt) / 1000);
    return {
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: {
        progressToken: this.progressToken,
        progress,
        ...(typeof this.#total === 'number' ? { total: this.#total } : {}),
        message: typeof this.#message === 'string' ? this.#message : `Still running after ${seconds} s.`,
      },
    };
  }
}

function nudged(value: number): number {
  return value + Math.max(Math.abs(value), 1) * NUDGE;
}
