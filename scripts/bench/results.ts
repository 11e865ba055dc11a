// What a bench run measured, per workload and repetition: the input of the report (and of --json).
import type { GatewayResult } from './gateway.ts';
import type { LatencySummary } from './stats.ts';
import type { StepProfile } from './steps.ts';

export interface Machine {
  cores: number;
  cpu: string;
  node: string;
  redis: string;
  bullmq: string;
  platform: string;
}

/** CPU milliseconds per task, by process role (NaN where it could not be read). */
export interface CpuPerTask {
  api: number;
  worker: number;
  redis: number;
  /** The bench process itself: HTTP clients or the raw BullMQ producer. */
  client: number;
}

export interface ThroughputSample {
  tasksPerSecond: number;
  tasks: number;
  /** Redis commands per task (INFO commandstats delta; commands inside Lua scripts count too). */
  commandsPerTask: number;
  commands: Record<string, number>;
  cpu: CpuPerTask;
}

export interface Sides<T> {
  ours: T[];
  /** Raw BullMQ in-process: the producer calls queue.add itself (a reference, not a server). */
  raw: T[];
  /** Raw BullMQ behind a bare node:http JSON-RPC endpoint, its own api and worker processes (bare-api.ts). */
  bare?: T[];
  /** The official SDK's in-process, in-memory task runtime (sdk-peer.ts): not durable. */
  sdk?: T[];
}

export interface ReadSample {
  /** Sequential request latency p50, ms. */
  get: number;
  listFirst: number;
  listMiddle: number;
}

export interface ReadsResult {
  small: number;
  large: number;
  pageSize: number;
  atSmall: ReadSample[];
  atLarge: ReadSample[];
  /** Seconds it took to store the large set. */
  seedSeconds: number;
}

export interface FootprintResult {
  tasks: number;
  /** Bytes of the stored result's JSON (what a tool returned). */
  resultBytes: number;
  /**
   * Bytes per task: `ours`/`raw` are Redis used_memory deltas (event streams and allocator overhead included);
   * `*Stored` sums MEMORY USAGE deltas of the keys that grow with the number of tasks (event streams, capped, left
   * out); `oursRecord`/`rawJob` are the task record hash and the BullMQ job hash alone.
   */
  finished: { ours: number; raw: number; oursStored: number; rawStored: number; oursRecord: number; rawJob: number };
  waiting: { ours: number; raw: number; oursStored: number; rawStored: number };
  /** MEMORY USAGE delta per task by key kind (prefix removed, ids as `*`). */
  byKind: {
    oursFinished: Record<string, number>;
    oursWaiting: Record<string, number>;
    rawFinished: Record<string, number>;
    rawWaiting: Record<string, number>;
  };
}

export interface ExpirySample {
  /** Expired tasks deleted per second, from the first claim to the last delete. */
  tasksPerSecond: number;
  /** Seconds from the tasks' expiry to the last delete (the wait for the workers' next pass included). */
  secondsFromExpiry: number;
  /** What differs from before the tasks were stored, by count (empty: the keyspace is back to its baseline). */
  leftovers: Record<string, number>;
}

export interface ExpiryResult {
  /** Tasks expiring at once per measurement. */
  tasks: number;
  /** Our worker processes running (and sweeping) during the measurements. */
  workers: number;
  /** Their MAINTENANCE_INTERVAL_MS: how long expired tasks may wait for a pass to start. */
  intervalMs: number;
  samples: ExpirySample[];
}

export interface ScaleOutPoint {
  workers: number;
  ours: number[];
  raw: number[];
}

export interface ScaleOutResult {
  primesBelow: number;
  tasks: number;
  points: ScaleOutPoint[];
}

/** No-op throughput with `apis` api replicas and `workers` worker processes, and the CPU each role used per task. */
export interface ReplicaPoint {
  apis: number;
  workers: number;
  tasksPerSecond: number[];
  cpu: CpuPerTask[];
}

export interface BenchResults {
  machine: Machine;
  options: Record<string, unknown>;
  durationSeconds: number;
  throughput?: Sides<ThroughputSample>;
  latency?: Sides<LatencySummary>;
  /**
   * A plain (non-task) tools/call of the no-op tool, one client, sequential: one request that answers the result
   * (ours and the bare-HTTP endpoint; `raw` and `sdk` stay empty). Measured with the latency workload.
   */
  plain?: Sides<LatencySummary>;
  reads?: ReadsResult;
  footprint?: FootprintResult;
  expiry?: ExpiryResult;
  scaleout?: ScaleOutResult;
  /** Api replicas and worker processes from 1 to 4, no-op tasks (the replicas workload). */
  replicas?: { tasks: number; points: ReplicaPoint[] };
  /** Redis commands and round trips per task by step (MONITOR), sequential tasks. */
  steps?: Record<'ours' | 'bare' | 'raw', StepProfile>;
  /** A call through the gateway vs a direct SDK call, and a gateway worker's memory (docs/gateway.md, "Cost"). */
  gateway?: GatewayResult;
  /** Measurements cut short by --timeout-seconds, by name. */
  truncated: string[];
}
