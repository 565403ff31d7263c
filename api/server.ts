import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer, type Services } from '../engine/service.js';
import { createApp } from './app.js';
import { attachPush, type PushServer } from './push.js';

/** The HTTP server with its Socket.IO push server (issue 6) attached. */
export interface HttpService {
  server: Server;
  push: PushServer;
  /** Port actually bound (port 0 picks a free one). */
  port: number;
  /** Disconnects push clients, stops accepting and ends idle keep-alive connections. */
  close(): Promise<void>;
}

/**
 * Starts the REST API and the live-update namespace on one HTTP server.
 * @param port - TCP port; 0 picks a free one (tests).
 * @throws the listen error (`EADDRINUSE`, …).
 */
export async function startHttp(services: Services, port: number, host: string): Promise<HttpService> {
  const app = createApp(services);
  const server = app.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const push = attachPush(server, services);
  return {
    server,
    push,
    port: (server.address() as AddressInfo).port,
    async close() {
      await push.close();
      await closeServer(server);
    },
  };
}
