import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler, type Router } from 'express';
import helmet from 'helmet';

/** The project's `web/` folder, from source (api/) or from the build (dist/api/). */
function webDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(path.join(dir, 'web', 'dashboard.html'))) return path.join(dir, 'web');
    dir = path.dirname(dir);
  }
  throw new Error('web/dashboard.html not found next to the service');
}

/**
 * The one inline `<style>` lightweight-charts adds (its attribution logo's), as a CSP hash source,
 * read from the file served so that it follows upgrades; none when the build has no such style.
 */
function chartStyleHash(chartsFile: string): string[] {
  const m = /createElement\("style"\),this\.\w+\.innerText="([^"\\]*)"/.exec(readFileSync(chartsFile, 'utf8'));
  return m ? [`'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`] : [];
}

/**
 * The dashboard's Content-Security-Policy (helmet): scripts, styles, fetches and the Socket.IO
 * websocket from this origin only (`connect-src 'self'` covers same-origin `ws:`/`wss:` in CSP 3),
 * no inline script, no plugin, never framed (`frame-ancestors 'none'`), forms post here only. The
 * page keeps an API key in session storage: nothing else may run in it.
 */
export function dashboardCsp(chartsFile: string): RequestHandler {
  return helmet.contentSecurityPolicy({
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      scriptSrcAttr: ["'none'"],
      styleSrc: ["'self'", ...chartStyleHash(chartsFile)],
      imgSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      objectSrc: ["'none'"],
    },
  });
}

/** The icon path browsers ask for on their own (served the dashboard's SVG icon). */
export const FAVICON = '/favicon.ico';

/**
 * The live dashboard: `GET /dashboard` and its static assets — the page, its script, style and
 * icon (web/; the icon also at {@link FAVICON}), and lightweight-charts' standalone build from node_modules. The
 * Socket.IO client is served by the push server at `/socket.io/socket.io.min.js`. Public: the page holds no data;
 * the operator pastes an API key, which stays in the tab's session storage. Served under
 * {@link dashboardCsp}.
 */
export function dashboardRouter(): Router {
  const web = webDir();
  const charts = path.join(
    path.dirname(createRequire(import.meta.url).resolve('lightweight-charts/package.json')),
    'dist',
    'lightweight-charts.standalone.production.js',
  );
  const router = express.Router();
  router.use('/dashboard', dashboardCsp(charts));
  const noStore = { headers: { 'cache-control': 'no-cache' } };
  router.get('/dashboard', (_req, res) => res.sendFile(path.join(web, 'dashboard.html'), noStore));
  router.get('/dashboard/dashboard.js', (_req, res) =>
    res.type('text/javascript').sendFile(path.join(web, 'dashboard.js'), noStore),
  );
  router.get('/dashboard/dashboard.css', (_req, res) => res.sendFile(path.join(web, 'dashboard.css'), noStore));
  // the page links its icon; browsers that ask for /favicon.ico on their own get the same icon
  const icon = path.join(web, 'favicon.svg');
  const iconOptions = { maxAge: '1d', headers: { 'content-type': 'image/svg+xml' } };
  router.get('/dashboard/favicon.svg', (_req, res) => res.sendFile(icon, iconOptions));
  router.get(FAVICON, dashboardCsp(charts), (_req, res) => res.sendFile(icon, iconOptions));
  router.get('/dashboard/vendor/lightweight-charts.js', (_req, res) =>
    res.type('text/javascript').sendFile(charts, { maxAge: '1d' }),
  );
  return router;
}
