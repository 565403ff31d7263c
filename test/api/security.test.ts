import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindHttp } from '../../api/server.js';
import { KEY_SHOWN_ONCE } from '../../engine/auth.js';
import { closeServer } from '../../engine/service.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { MASTER_KEY, startTestService, type TestService } from '../helpers.js';

/** A logger writing its JSON lines to `lines` (what the service would print on stdout). */
function capturingLogger(lines: Array<Record<string, any>>) {
  return pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, any>) });
}

/** Writes `raw` on a fresh connection to `port` and resolves with everything the server answered before closing it. */
function rawExchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(raw));
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (got += d));
    socket.on('end', () => resolve(got));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('a store holding minted keys in stored responses (written before replays left them out)', () => {
  it('the first start removes them, keeping the rest of the record, and records that it did', async () => {
    const store = await SqliteStore.open(null);
    const docs = await store.collection<{ _id: string; status: number; body: string } & Record<string, unknown>>(
      'idempotencyKeys',
    );
    const minted = {
      key_id: 'key_old',
      api_key: 'pts_old_minted_secret_0123456789',
      scopes: ['trade.read'],
      expires_at: null,
      partner_user_id: 'alice',
    };
    const base = {
      keyId: 'key_env_demo',
      fingerprint: 'f',
      state: 'done',
      leaseUntilMs: 0,
      headers: {},
      createdAtMs: Date.now(),
      expiresAtMs: Date.now() + 3_600_000,
    };
    await docs.insertOne({ _id: 'mint', ...base, status: 201, body: JSON.stringify(minted) });
    await docs.insertOne({
      _id: 'user',
      ...base,
      status: 201,
      body: JSON.stringify({ partner_user_id: 'alice', created: true }),
    });
    const svc = await startTestService({ store });
    try {
      const after = await (
        await svc.services.store.collection<{ _id: string; body: string }>('idempotencyKeys')
      ).find({});
      expect(JSON.stringify(after)).not.toContain(minted.api_key);
      const mint = after.find((d) => d._id === 'mint')!;
      expect(JSON.parse(mint.body)).toEqual({
        key_id: 'key_old',
        scopes: ['trade.read'],
        expires_at: null,
        partner_user_id: 'alice',
        message: KEY_SHOWN_ONCE,
      });
      expect(JSON.parse(after.find((d) => d._id === 'user')!.body)).toEqual({
        partner_user_id: 'alice',
        created: true,
      });
      expect(
        await (
          await svc.services.store.collection('migrations')
        ).findOne({ _id: 'idempotencyKeys: minted api keys removed from stored responses' }),
      ).not.toBeNull();
    } finally {
      await svc.close();
    }
  });
});

describe('security', () => {
  let svc: TestService;
  const lines: Array<Record<string, any>> = [];
  const port = () => svc.http.port;
  beforeAll(async () => {
    svc = await startTestService({ log: capturingLogger(lines) });
    for (const u of ['alice', 'bob'])
      await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: u, email: `${u}@example.com` } });
  });
  afterAll(() => svc.close());

  it('a replayed key mint answers 201 without the api_key, also after revocation; the key never stored', async () => {
    const idem = randomUUID();
    const mint = () =>
      svc.call('POST', '/v2/trade/users/alice/api-keys', {
        body: { scopes: ['trade.read', 'trade.withdraw'] },
        idempotencyKey: idem,
      });
    const first = await mint();
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      key_id: expect.stringMatching(/^key_/),
      api_key: expect.stringMatching(/^pts_/),
      scopes: ['trade.read', 'trade.withdraw'],
      partner_user_id: 'alice',
    });
    expect(first.body.message).toBeUndefined();
    const token: string = first.body.api_key;
    expect((await svc.call('GET', '/v2/trade/account', { token })).status).toBe(200);

    const live = await mint();
    expect(live.status).toBe(201);
    expect(live.headers.get('idempotent-replayed')).toBe('true');
    expect(live.body).toEqual({
      key_id: first.body.key_id,
      scopes: ['trade.read', 'trade.withdraw'],
      expires_at: null,
      partner_user_id: 'alice',
      message: KEY_SHOWN_ONCE,
    });

    expect((await svc.call('DELETE', `/v2/trade/api-keys/${first.body.key_id}`)).body).toMatchObject({
      key_id: first.body.key_id,
      revoked: true,
    });
    const revoked = await mint();
    expect(revoked.status).toBe(201);
    expect(revoked.headers.get('idempotent-replayed')).toBe('true');
    expect(revoked.body.api_key).toBeUndefined();
    expect(revoked.body.message).toMatch(/shown once/);
    expect(JSON.stringify(revoked.body)).not.toContain(token);
    expect((await svc.call('GET', '/v2/trade/account', { token })).status).toBe(401);

    // nothing the store holds carries the token: not the idempotency record, not the key (its hash only)
    for (const name of ['idempotencyKeys', 'apiKeys']) {
      const docs = await (await svc.services.store.collection(name)).find({});
      expect(docs.length, name).toBeGreaterThan(0);
      expect(JSON.stringify(docs), name).not.toContain(token);
      expect(JSON.stringify(docs), name).not.toContain(MASTER_KEY);
    }
    expect(JSON.stringify(lines)).not.toContain(token);
  });

  it('credential-named query parameters are redacted (any case, percent-escaped), nothing else', async () => {
    const token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id as string;
    const url =
      `/v2/trade/book?token_id=${token}&depth=1&Bearer=${MASTER_KEY}&TOKEN=t1&access%5Ftoken=t2&ApiKey=t3&key=t4` +
      '&signature=t5&Password=t6&auth=t7&secret=t8&authorization=t9&keyword=k&token_ids=x';
    // not parameters of /book: a 400 naming them, logged like any request
    expect((await svc.call('GET', url)).status).toBe(400);
    await settle();
    const line = lines.find((l) => l.req?.url?.startsWith('/v2/trade/book?') && l.res);
    expect(line?.req.url).toBe(
      `/v2/trade/book?token_id=${token}&depth=1&Bearer=[redacted]&TOKEN=[redacted]&access%5Ftoken=[redacted]` +
        '&ApiKey=[redacted]&key=[redacted]&signature=[redacted]&Password=[redacted]&auth=[redacted]' +
        '&secret=[redacted]&authorization=[redacted]&keyword=k&token_ids=x',
    );
    expect(JSON.stringify(lines)).not.toContain(MASTER_KEY);
    // a malformed escape in a parameter name is logged as sent, and the request answered
    expect((await svc.call('GET', `/v2/trade/book?token_id=${token}&%zz=1&api%5fkey=s`)).status).toBe(400);
    await settle();
    expect(lines.some((l) => l.req?.url === `/v2/trade/book?token_id=${token}&%zz=1&api%5fkey=[redacted]`)).toBe(true);
  });

  it('a parameter ending in a credential word, or an API key anywhere in a line, is redacted', async () => {
    const token = (await svc.call('GET', '/v2/trade/markets?limit=1')).body.markets[0].tokens[0].token_id as string;
    const before = lines.length;
    const url =
      `/v2/trade/book?token_id=${token}&client_secret=s1&access-token=s2&key[]=s3&+key=s4&key%20=s5&token%00=s6` +
      `&x=1;key=s7&${MASTER_KEY}&monkey=m&token_id_hint=h`;
    // unknown parameters: 400 naming them, never echoing an API key sent as a name
    const refused = await svc.call('GET', url);
    expect([refused.status, refused.body.message]).toEqual([400, expect.stringContaining('"pts_[redacted]"')]);
    expect(JSON.stringify(refused.body)).not.toContain(MASTER_KEY);
    // a request id that holds an API key is not echoed; a user id header holding one is not logged in the error message
    const res = await fetch(`${svc.baseUrl}/v2/trade/balances`, {
      headers: { authorization: `Bearer ${MASTER_KEY}`, 'x-request-id': MASTER_KEY, 'x-partner-user-id': MASTER_KEY },
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).not.toContain('pts_');
    await settle();
    const own = lines.slice(before);
    const book = own.find((l) => l.req?.url?.startsWith('/v2/trade/book?'));
    expect(book?.req.url).toBe(
      `/v2/trade/book?token_id=${token}&client_secret=[redacted]&access-token=[redacted]&key[]=[redacted]` +
        '&+key=[redacted]&key%20=[redacted]&token%00=[redacted]&x=1;key=[redacted]&pts_[redacted]' +
        '&monkey=m&token_id_hint=h',
    );
    const balances = own.find((l) => l.req?.url === '/v2/trade/balances');
    expect(balances).toMatchObject({
      res: { statusCode: 404 },
      error_message: expect.stringContaining('pts_[redacted]'),
    });
    expect(JSON.stringify(own)).not.toContain(MASTER_KEY);
    for (const s of ['s1', 's2', 's3', 's4', 's5', 's6', 's7']) expect(book?.req.url).not.toContain(`=${s}`);
  });

  it("Socket.IO's HTTP answers (handshake, refusal) get one log line each", async () => {
    const before = lines.length;
    expect((await fetch(`${svc.baseUrl}/socket.io/?EIO=4&transport=polling&api_key=${MASTER_KEY}`)).status).toBe(200);
    expect((await fetch(`${svc.baseUrl}/socket.io/?EIO=99&transport=polling`)).status).toBe(400);
    await settle();
    const own = lines.slice(before).filter((l) => l.req?.url?.startsWith('/socket.io/'));
    expect(own.map((l) => [l.res.statusCode, l.error ?? null])).toEqual([
      [200, null],
      [400, 'transport_refused'],
    ]);
    expect(own[0]!.req.url).toBe('/socket.io/?EIO=4&transport=polling&api_key=[redacted]');
  });

  it('each HTTP parser refusal (400 malformed, 400 CL with TE, 431) gets one log line, status and error', async () => {
    const before = lines.length;
    const malformed = await rawExchange(port(), 'THIS IS NOT HTTP\r\n\r\n');
    expect(malformed).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(malformed).toContain('{"error":"invalid_request","message":"malformed HTTP request"}');
    const both = await rawExchange(
      port(),
      'POST /v2/trade/users HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    expect(both).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const huge = await rawExchange(
      port(),
      `GET /v2/trade/markets?token=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    await settle();
    const refused = lines.slice(before).filter((l) => l.msg === 'request refused by the HTTP parser');
    expect(refused).toHaveLength(3);
    expect(refused.map((l) => [l.level, l.res.statusCode, l.error])).toEqual([
      [30, 400, 'invalid_request'],
      [30, 400, 'invalid_request'],
      [30, 431, 'request_header_fields_too_large'],
    ]);
    expect(refused[0]).toMatchObject({
      error_message: 'malformed HTTP request',
      parserError: expect.stringMatching(/^HPE_/),
    });
    expect(JSON.stringify(refused)).not.toContain('aaaaaaaa'); // the raw request is not logged
  });

  it('the 503 "service is starting" answers get one WARN line each', async () => {
    const own: Array<Record<string, any>> = [];
    const server = await bindHttp(0, '127.0.0.1', capturingLogger(own));
    try {
      const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
      const res = await fetch(`${base}/v2/trade/account?api_key=${MASTER_KEY}`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: 'unavailable', message: 'the service is starting; retry shortly' });
      await settle();
      expect(own).toHaveLength(1);
      expect(own[0]).toMatchObject({
        level: 40,
        req: { method: 'GET', url: '/v2/trade/account?api_key=[redacted]' },
        res: { statusCode: 503 },
        error: 'unavailable',
        error_message: 'the service is starting; retry shortly',
        msg: 'request completed',
      });
    } finally {
      await closeServer(server);
    }
  });

  it("another user's activity cursor answers 400; the owner's pages on", async () => {
    const token = (await svc.call('GET', '/v2/trade/markets?limit=5')).body.markets.find(
      (m: any) => m.tick_size === '0.01',
    ).tokens[0].token_id;
    const alice = { 'x-partner-user-id': 'alice' };
    for (const price of ['0.01', '0.02', '0.03']) {
      expect(
        (
          await svc.call('POST', '/v2/trade/order', {
            body: { symbol: token, side: 'buy', type: 'LIMIT', price, size: '5' },
            headers: alice,
          })
        ).status,
      ).toBe(200);
    }
    const first = await svc.call('GET', '/v2/trade/activity?limit=1', { headers: alice });
    const cursor = first.body.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    const own = await svc.call('GET', `/v2/trade/activity?limit=1&cursor=${cursor}`, { headers: alice });
    expect(own.status).toBe(200);
    expect(own.body.activity).toHaveLength(1);
    const foreign = await svc.call('GET', `/v2/trade/activity?limit=1&cursor=${cursor}`, {
      headers: { 'x-partner-user-id': 'bob' },
    });
    expect(foreign).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', message: expect.stringMatching(/^cursor belongs to another user/) },
    });
  });

  it('provisioning an existing partner_user_id with another email updates it; without email it stays', async () => {
    const created = await svc.call('POST', '/v2/trade/users', {
      body: { partner_user_id: 'carol', email: 'carol@old.example' },
    });
    expect(created).toMatchObject({ status: 201, body: { created: true, email: 'carol@old.example' } });
    const changed = await svc.call('POST', '/v2/trade/users', {
      body: { partner_user_id: 'carol', email: 'carol@new.example' },
    });
    expect(changed).toMatchObject({
      status: 200,
      body: {
        created: false,
        email: 'carol@new.example',
        platform_user_id: created.body.platform_user_id,
        eoa_address: created.body.eoa_address,
      },
    });
    const omitted = await svc.call('POST', '/v2/trade/users', { body: { partner_user_id: 'carol' } });
    expect(omitted).toMatchObject({ status: 200, body: { created: false, email: 'carol@new.example' } });
    // the acting user read afterwards (cached or not) shows the new address
    expect(
      (await svc.call('GET', '/v2/trade/account', { headers: { 'x-partner-user-id': 'carol' } })).body.user,
    ).toMatchObject({ email: 'carol@new.example' });
  });
});
