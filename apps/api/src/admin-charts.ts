// The dashboard's charts of the last hour: the figures as JSON (activity.ts in the engine), uPlot served from our
// own node_modules (no CDN: a dashboard must work where the api cannot reach the internet), and the script that
// draws them into the main page's "Last hour" section.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import express, { type Router } from 'express';
import type { ActivityRecorder } from '@mcp-tasks/engine';
import { chartsScript } from './admin-charts-script.ts';

const require = createRequire(import.meta.url);

/** uPlot's browser build and stylesheet, read once when the dashboard is mounted. */
function uplotAssets(): { script: string; style: string } {
  return {
    script: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    style: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  };
}

export const CHART_ASSETS = {
  uplotScript: 'assets/uplot.js',
  uplotStyle: 'assets/uplot.css',
  charts: 'assets/charts.js',
} as const;

export function chartRoutes(base: string, activity: ActivityRecorder, sampleDepth: () => Promise<void>): Router {
  const router = express.Router();
  const { script, style } = uplotAssets();
  const charts = chartsScript(`${base}/api/activity`);
  router.get(`${base}/${CHART_ASSETS.uplotScript}`, (_req, res) => {
    res.type('application/javascript').send(script);
  });
  router.get(`${base}/${CHART_ASSETS.uplotStyle}`, (_req, res) => {
    res.type('text/css').send(style);
  });
  router.get(`${base}/${CHART_ASSETS.charts}`, (_req, res) => {
    res.type('application/javascript').send(charts);
  });
  router.get(`${base}/api/activity`, (_req, res, next) => {
    // A fresh depth sample first, so that an open dashboard's current minute always has one.
    sampleDepth()
      .then(() => activity.read())
      .then((report) => res.json(report), next);
  });
  return router;
}
