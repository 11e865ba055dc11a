// The dashboard's pages, styles and browser scripts: the files of ./admin-assets/, sent as they are. No page is a
// template, so nothing of a request (a task id in the URL) is ever written into markup; the scripts read what they
// need from the page's address and the JSON under <base>/api. The folder is found next to this module's code: from
// source in apps/api/src/admin-assets/, in the installed package in dist/admin-assets/ (apps/runner's build
// copies it there, as it does the engine's Lua).
import type { ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Request, type Response, type Router } from 'express';

const ASSETS_DIR = fileURLToPath(new URL('./admin-assets/', import.meta.url));
/** uPlot's browser build, from our own node_modules: the dashboard must work where the api cannot reach a CDN. */
const UPLOT_DIR = dirname(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'));

/** The pages load scripts and styles from these files only: no inline code, nothing from elsewhere, no framing. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(res: ServerResponse): void {
  res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  res.setHeader('X-Content-Type-Options', 'nosniff');
}

/** `root` keeps send's dot-file check to the file's own name (pnpm keeps packages under node_modules/.pnpm). */
function sendFrom(root: string, file: string) {
  return (_req: Request, res: Response) => {
    securityHeaders(res);
    res.sendFile(file, { root });
  };
}

/**
 * `<base>/` (the task list), `<base>/tasks/<taskId>` (a task's page) and `<base>/assets/*`. Routing is strict: every
 * URL in the pages is relative to where they are served, so `<base>` moves to `<base>/`, and a task page under
 * another address (a trailing slash) would resolve its assets wrongly and is not served.
 */
export function assetRoutes(base: string): Router {
  const router = express.Router({ strict: true });
  router.get(base, (_req, res) => {
    // Relative, so that it holds behind a proxy that serves the api under a path of its own.
    res.redirect(`${base.slice(base.lastIndexOf('/') + 1)}/`);
  });
  router.get(`${base}/`, sendFrom(ASSETS_DIR, 'dashboard.html'));
  router.get(`${base}/tasks/:taskId`, sendFrom(ASSETS_DIR, 'task.html'));
  router.get(`${base}/assets/uplot.js`, sendFrom(UPLOT_DIR, 'uPlot.iife.min.js'));
  router.get(`${base}/assets/uplot.css`, sendFrom(UPLOT_DIR, 'uPlot.min.css'));
  router.use(
    `${base}/assets`,
    express.static(ASSETS_DIR, { index: false, redirect: false, setHeaders: securityHeaders }),
  );
  return router;
}
