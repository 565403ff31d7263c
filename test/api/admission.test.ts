import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_KEY, startTestService, type TestService } from '../helpers.js';
import { poll } from './trading-kit.js';

/** Provisioning requests for ids starting `held` that wait, inside their handler, until released. */
const releases = new Map<string, () => void>();
function holdProvisioning(svc: TestService): void {
  const users = svc.services.users;
  const provision = users.provision.bind(users);
  users.provision = async (partnerId, partnerUserId, email) => {
    if (partnerUserId.startsWith('held')) await new Promise<void>((r) => releases.set(partnerUserId, r));
    return provision(partnerId, partnerUserId, email);
  };
}

/** Resolves once the provisioning of `partnerUserId` is held inside its handler (its admission slot taken). */
const held = (partnerUserId: string) => poll(`${partnerUserId} held`, async () => releases.has(partnerUserId), Boolean);

/**
 * Resolves once the service has read the whole body of the request sent with `idempotencyKey` and the
 * event loop has turned: a mutating request has then entered the admission gate (it waits in its
 * queue, runs, or was shed), whatever the load on the machine.
 */
function atGate(svc: TestService, idempotencyKey: string): Promise<void> {
  return new Promise((resolve) => {
    const onRequest = (req: http.IncomingMessage) => {
      if (req.headers['idempotency-key'] !== idempotencyKey) return;
      svc.server.off('request', onRequest);
      // before the body parser's own `end` listener: admission follows it in the same turn
      req.once('end', () => setImmediate(resolve));
    };
    svc.server.prependListener('request', onRequest);
  });
}

/** A provisioning POST through {@link TestService.call}, returned once it has entered the admission gate. */
async function gatedPost(
  svc: TestService,
  partnerUserId: string,
): Promise<{ answer: ReturnType<TestService['call']> }> {
  const idempotencyKey = randomUUID();
  const entered = atGate(svc, idempotencyKey);
  const answer = svc.call('POST', '/v2/trade/users', { body: { partner_user_id: partnerUserId }, idempotencyKey });
  await entered;
  return { answer };
}

/**
 * A provisioning POST (of a `held…` id) that holds its admission slot, running, until `finish` is
 * called (its body is sent at once: a request waiting for its body holds no slot).
 */
function heldPost(
  baseUrl: string,
  path: string,
  body: { partner_user_id: string },
): { finish(): void; abort(): void; answer: Promise<{ status: number; body: any; retryAfter: string | undefined }> } {
  const url = new URL(baseUrl + path);
  const text = JSON.stringify(body);
  const req = http.request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: {
      authorization: `Bearer ${MASTER_KEY}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'idempotency-key': randomUUID(),
    },
  });
  const answer = new Promise<{ status: number; body: any; retryAfter: string | undefined }>((resolve, reject) => {
    req.on('response', (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          body: data ? JSON.parse(data) : undefined,
          retryAfter: res.headers['retry-after'] as string | undefined,
        }),
      );
    });
    req.on('error', reject);
  });
  req.end(text);
  return { finish: () => releases.get(body.partner_user_id)?.(), abort: () => req.destroy(), answer };
}

describe('load shedding of mutating requests, through real HTTP', () => {
  const QUEUE_WAIT_MS = 3000;
  let svc: TestService;
  beforeAll(async () => {
    // a queue wait long enough that a loaded machine cannot spend it between two steps of a test
    svc = await startTestService({
      env: { WRITE_CONCURRENCY: '1', WRITE_QUEUE_LENGTH: '1', WRITE_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS) },
    });
    holdProvisioning(svc);
  });
  afterAll(async () => svc?.close());

  it('over concurrency + queue: 503 with Retry-After at once; queued one after the wait; none created', async () => {
    const first = heldPost(svc.baseUrl, '/v2/trade/users', { partner_user_id: 'held-first' }); // takes the one slot
    await held('held-first');
    // waits in the queue of 1
    const queued = await gatedPost(svc, 'queued');
    const t0 = Date.now();
    const shed = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'shed' } });
    expect(shed.status).toBe(503);
    expect(shed.body).toEqual({
      error: 'overloaded',
      message: expect.stringMatching(/at capacity .*1 requests running and 1 waiting.*nothing was changed/),
    });
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(Date.now() - t0).toBeLessThan(QUEUE_WAIT_MS); // at once, not after the queue wait
    // reads are not limited
    expect((await svc.call('GET', '/v2/trade/account')).status).toBe(200);
    const late = await queued.answer;
    expect(late.status).toBe(503);
    expect(late.body).toEqual({
      error: 'overloaded',
      message: expect.stringMatching(new RegExp(`no slot within ${QUEUE_WAIT_MS} ms`)),
    });
    expect(late.headers.get('retry-after')).toBe('1');
    // the held request still completes normally, and frees its slot
    first.finish();
    const ok = await first.answer;
    expect(ok.status).toBe(201);
    expect(ok.body.partner_user_id).toBe('held-first');
    // nothing was created for the shed requests: provisioning them now creates them (201, not 200);
    // the slot is free again, so they run
    for (const id of ['queued', 'shed'])
      expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: id } })).status).toBe(201);
  });

  it('a queued request runs when the slot frees in time; a client that leaves frees its slot', async () => {
    const first = heldPost(svc.baseUrl, '/v2/trade/users', { partner_user_id: 'held-2' });
    await held('held-2');
    const queued = await gatedPost(svc, 'queued-2');
    first.finish();
    expect((await first.answer).status).toBe(201);
    const q = await queued.answer;
    expect(q.status).toBe(201);
    expect(q.body.partner_user_id).toBe('queued-2');
    // a client that disconnects while holding the slot frees it
    const left = heldPost(svc.baseUrl, '/v2/trade/users', { partner_user_id: 'held-gone' });
    left.answer.catch(() => undefined);
    await held('held-gone');
    left.abort();
    // admitted once the slot is freed (at the close), well within the queue wait
    expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'after-2' } })).status).toBe(201);
  });

  it('a client sending its body slowly (or never) holds no write slot: other writes run meanwhile', async () => {
    const url = new URL(svc.baseUrl);
    const slow = http.request({
      host: url.hostname,
      port: url.port,
      path: '/v2/trade/users',
      method: 'POST',
      headers: {
        authorization: `Bearer ${MASTER_KEY}`,
        'content-type': 'application/json',
        'content-length': '100',
        'idempotency-key': randomUUID(),
      },
    });
    slow.on('error', () => undefined);
    slow.flushHeaders();
    await new Promise((r) => setTimeout(r, 100));
    try {
      expect((await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'beside-slow' } })).status).toBe(
        201,
      );
    } finally {
      slow.destroy();
    }
  });
});

describe('per-iteration work budget (LOOP_BUDGET_MS) through real HTTP: shed requests changed nothing', () => {
  let svc: TestService;
  beforeAll(async () => {
    // no concurrency limit: requests wait only for the 1 ms budget, in a queue of 2
    svc = await startTestService({
      env: { WRITE_CONCURRENCY: '0', WRITE_QUEUE_LENGTH: '2', WRITE_QUEUE_WAIT_MS: '2000', LOOP_BUDGET_MS: '1' },
    });
  });
  afterAll(async () => svc?.close());

  it('a burst of provisioning: each answered 201, or 503 with Retry-After having created nothing', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
    const answers = await Promise.all(
      ids.map((id) => svc.call('POST', '/v2/trade/users', { body: { partner_user_id: id } })),
    );
    for (const a of answers) {
      expect([201, 503]).toContain(a.status);
      if (a.status === 503) {
        expect(a.body).toEqual({
          error: 'overloaded',
          message: expect.stringMatching(/at capacity .*waiting.*nothing was changed/),
        });
        expect(a.headers.get('retry-after')).toBe('1');
      }
    }
    expect(answers.filter((a) => a.status === 201).length).toBeGreaterThan(0);
    // provisioning again, one at a time: 200 for those created, 201 for those shed (nothing had been created)
    for (const [i, id] of ids.entries()) {
      const again = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: id } });
      expect(again.status, id).toBe(answers[i]!.status === 201 ? 200 : 201);
    }
  });
});
