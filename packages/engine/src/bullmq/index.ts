// Everything of the engine that depends on BullMQ's internals, not only its public API: the version guard, the job
// layout create-task-6.lua writes (lua/include/bullmq-job.lua, beside the other scripts that scripts.ts and the
// runner's bundle load from lua/), the keys of a held job the release of a gone worker's jobs reads
// (release-lost-3.lua), and the tool queues' Worker. docs/bullmq-upgrade.md is the checklist for an upgrade;
// test/integration/job-layout.test.ts and tool-queue-worker.test.ts (with lost-jobs.test.ts) guard it.
export {
  BULLMQ_JOB_LAYOUT_VERSION,
  BullmqVersionError,
  checkJobLayoutVersion,
  type HeldJobKeys,
  heldJobKeys,
  HOLDER_FIELDS,
  installedBullmqVersion,
  scriptedJob,
} from './job-layout.ts';
export { ToolQueueWorker } from './tool-queue-worker.ts';
