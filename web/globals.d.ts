// Globals of the two scripts dashboard.html loads before dashboard.js (served by this service).
import type { io as ioFunction } from 'socket.io-client';
import type * as Charts from 'lightweight-charts';

declare global {
  const io: typeof ioFunction;
  const LightweightCharts: typeof Charts;
}
export {};
