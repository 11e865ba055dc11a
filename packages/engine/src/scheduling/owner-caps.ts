// Caps on what one principal runs at once (docs/scheduling.md, "Per principal"): MAX_RUNNING_PER_OWNER over all tools
// and a tool's maxRunningPerOwner. A run holds a lease in the principal's sets (admit-run-4.lua) that its worker
// renews while it runs, so a crashed worker's slots free themselves when the leases run out. A job over a cap is
// parked (BullMQ delayed) and listed; the end of one of the principal's runs starts the longest-parked one again
// (release-run-4.lua), and a periodic sweep catches a wake-up lost with a crashed worker.
import type { ExternalQueues } from '../external-queues.ts';
import type { KeySpace } from '../keys.ts';
import type { RedisClient } from '../redis.ts';
import { RedisScripts, type RunKeys } from '../scripts.ts';

/** One admitted run, as its worker keeps it to renew and end it. */
export interface RunClaim {
  owner: string;
  tool: string;
  /** `<queue>:<jobId>`. */
  member: string;
}

export type Admission =
  { admitted: true; claim: RunClaim } | { admitted: false; runningAll: number; runningTool: number };

/** How many parked jobs of one principal a sweep starts again at most. */
const SWEEP_BATCH = 10;

export class OwnerCaps {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly queues: ExternalQueues,
    readonly options: { maxRunningPerOwner: number | undefined; leaseMs: number },
  ) {}

  /** Whether a job of a tool with this per-tool cap goes through admission at all (no caps: no Redis work). */
  applies(toolCap: number | undefined): boolean {
    return this.options.maxRunningPerOwner !== undefined || toolCap !== undefined;
  }

  async admit(
    owner: string,
    tool: string,
    queue: string,
    jobId: string,
    toolCap: number | undefined,
  ): Promise<Admission> {
    const member = `${queue}:${jobId}`;
    const reply = await RedisScripts.on(this.redis).admitRun({
      keys: this.#keys(owner, tool),
      member,
      now: Date.now(),
      leaseMs: this.options.leaseMs,
      capAll: this.options.maxRunningPerOwner ?? 0,
      capTool: toolCap ?? 0,
      principal: owner,
    });
    if (reply.admitted) return { admitted: true, claim: { owner, tool, member } };
    return { admitted: false, runningAll: reply.runningAll, runningTool: reply.runningTool };
  }

  /** Ends a run and starts the principal's longest-parked job again, if any. */
  async release(claim: RunClaim): Promise<void> {
    const next = await RedisScripts.on(this.redis).releaseRun({
      keys: this.#keys(claim.owner, claim.tool),
      member: claim.member,
      principal: claim.owner,
    });
    if (next !== undefined) await this.#promote(claim.owner, next);
  }

  /**
   * Extends the leases of runs still going (their worker calls it well within the lease length), and writes again a
   * lease Redis lost meanwhile (the last second before a kill under AOF everysec, a lagging replica promoted, or a
   * renewal late enough that an admission pruned it): a run going on always counts against its principal's caps.
   * A released run is not renewed: HeldRuns forgets it before the release is sent, on the same connection.
   */
  async renew(claims: readonly RunClaim[]): Promise<void> {
    if (claims.length === 0) return;
    const until = Date.now() + this.options.leaseMs;
    const pipeline = this.redis.pipeline();
    for (const claim of claims) {
      for (const key of [this.keys.ownerRuns(claim.owner), this.keys.ownerToolRuns(claim.owner, claim.tool)]) {
        pipeline.zadd(key, String(until), claim.member);
        // The sets expire two leases after their last write (admit-run-4.lua): a run renewed without any admission
        // meanwhile would otherwise lose the whole set, and its principal's cap with it, after two leases.
        pipeline.pexpire(key, this.options.leaseMs * 2);
      }
    }
    await pipeline.exec();
  }

  /** Starts again a few parked jobs of every principal that has some; they are admitted or parked once more. */
  async sweep(): Promise<number> {
    const owners = await this.redis.smembers(this.keys.parkedOwners());
    let started = 0;
    for (const owner of owners) {
      const parked = await this.redis.zrangebyscore(
        this.keys.ownerParked(owner),
        '-inf',
        '+inf',
        'LIMIT',
        0,
        SWEEP_BATCH,
      );
      if (parked.length === 0) await this.redis.srem(this.keys.parkedOwners(), owner);
      for (const member of parked) if (await this.#promote(owner, member)) started++;
    }
    return started;
  }

  /** Moves a parked job from delayed back to the queue; false if it is not parked any more. */
  async #promote(owner: string, member: string): Promise<boolean> {
    const split = member.indexOf(':');
    const queue = this.queues.get(member.slice(0, split));
    const jobId = member.slice(split + 1);
    const job = await queue.getJob(jobId);
    if (!job) {
      // Cancelled or expired while parked.
      await this.redis.zrem(this.keys.ownerParked(owner), member);
      return false;
    }
    try {
      await job.promote();
      return true;
    } catch {
      // Not delayed (already started again, or waiting): admission decides when it starts.
      return false;
    }
  }

  #keys(owner: string, tool: string): RunKeys {
    return {
      runs: this.keys.ownerRuns(owner),
      toolRuns: this.keys.ownerToolRuns(owner, tool),
      parked: this.keys.ownerParked(owner),
      parkedOwners: this.keys.parkedOwners(),
    };
  }
}
