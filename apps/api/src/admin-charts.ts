// The figures of the dashboard's charts of the last hour as JSON (activity.ts in the engine), which
// admin-assets/charts.js draws with uPlot into the main page's "Last hour" section.
import express, { type Router } from 'express';
import type { ActivityRecorder } from '@mcp-tasks/engine';

export function chartRoutes(base: string, activity: ActivityRecorder, sampleDepth: () => Promise<void>): Router {
  const router = express.Router();
  router.get(`${base}/api/activity`, (_req, res, next) => {
    // A fresh depth sample first, so that an open dashboard's current minute always has one.
    sampleDepth()
      .then(() => activity.read())
      .then((report) => res.json(report), next);
  });
  return router;
}
