/**
 * Every query the store port runs on MongoDB has an index that serves it.
 *
 * A {@link RecordingStore} (the Store port over an in-memory SQLite store, reporting itself as `mongodb`
 * so that the code takes its MongoDB paths: idempotency claims stored, no sweep) records the shape
 * of every read and conditional write (filter fields by kind, sort) per collection, and the index
 * declarations, while representative scenarios run through the real API: users, keys minted and
 * revoked, orders of each type placed and cancelled, every strategy type, brackets, idempotent
 * replays, open orders / strategies / activity paging, timers firing, and a restart (restore and
 * reconciliation). Each recorded shape must be served by an index declared for MongoDB; the table
 * of queries → index is printed.
 *
 * The rule ("served"), for a query with equality fields E (a value, `$eq`, or `$in`), range fields
 * R (`$gt`, `$gte`, `$lt`, `$lte`, `$ne`, `$nin`, `$exists`) and sort S:
 * - a filter on `_id` (equality, `$in` or a range) is served by the primary key;
 * - otherwise an index whose first fields are exactly E (in any order), followed by the fields of S
 *   in order with directions all equal to the index's or all opposite (MongoDB walks it backwards);
 *   a `$in` field before the sort is a merge of a few sorted ranges (MongoDB's SORT_MERGE), not a
 *   sort in memory; every range field of the query is a field of the index too (after the sort:
 *   MongoDB's equality-sort-range order, or as the sort field itself), so the scan is bounded by
 *   all of the query and nothing it reads is filtered out afterwards. With no equality fields,
 *   the index starts with the sort field or a range field of the query.
 *   A sparse index does not serve a query that looks for documents
 *   missing one of its fields (`$exists: false`, `null`): they are not in it.
 * - queries in {@link EXEMPT} are accepted as scans, each for the reason given there.
 *
 * On MongoDB the timer jobs (`agendaJobs`) are not read through the port but by Agenda's own
 * MongoDB repository; its queries are listed from its source ({@link AGENDA_MONGO_QUERIES}) and
 * checked against Agenda's own index and ours ({@link timerJobIndexes}). The port's `agendaJobs`
 * queries recorded here are the store-port backend's (SQLite's) and are left out.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timerJobIndexes } from '../../engine/scheduler/mongo-backend.js';
import { TIMER_JOB } from '../../engine/scheduler/timers.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import type {
  Collection,
  CollectionLayout,
  Doc,
  Filter,
  FindOptions,
  IndexSpec,
  Store,
  StoreAdapter,
  UnitOfWork,
} from '../../engine/store/port.js';
import { startTestService, type TestService } from '../helpers.js';
import { poll, sleep, Trading, px, useTestClock } from './trading-kit.js';

type Op = 'find' | 'findOne' | 'count' | 'updateOne' | 'deleteMany';

/** A query's shape: which fields it constrains and how, and its sort. */
interface Shape {
  collection: string;
  op: Op;
  /** Equality fields (a value or `$eq`). */
  eq: string[];
  /** `$in` fields. */
  in: string[];
  /** Range fields. */
  range: string[];
  /** Fields a missing value can match (`$exists: false`, `null`): a sparse index leaves such documents out. */
  missing: string[];
  sort: Array<[string, 1 | -1]>;
}

function shapeOf(collection: string, op: Op, filter: Filter, sort?: FindOptions['sort']): Shape {
  const s: Shape = { collection, op, eq: [], in: [], range: [], missing: [], sort: Object.entries(sort ?? {}) };
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$or') {
      // no index rule for it: a port query with $or is reported unserved (only the store-port Agenda backend has one)
      s.range.push('$or');
      continue;
    }
    if (v === null || (typeof v === 'object' && (v as Record<string, unknown>).$exists === false)) s.missing.push(k);
    const ops =
      v !== null && typeof v === 'object' && !(v instanceof Date) && !Array.isArray(v)
        ? Object.keys(v).filter((x) => x.startsWith('$'))
        : [];
    if (ops.length === 0 || (ops.length === 1 && ops[0] === '$eq')) s.eq.push(k);
    else if (ops.length === 1 && ops[0] === '$in') s.in.push(k);
    else s.range.push(k);
  }
  s.eq.sort();
  s.in.sort();
  s.range.sort();
  return s;
}

const keyOf = (s: Shape) => {
  const fields = [...s.eq, ...s.in.map((f) => `${f}:$in`), ...s.range.map((f) => `${f}:range`)].join(', ');
  const sort = s.sort.length ? ` sort {${s.sort.map(([f, d]) => `${f}:${d}`).join(', ')}}` : '';
  return `${s.collection} ${s.op} {${fields}}${sort}`;
};

/** An index as the rule sees it. */
interface Ix {
  name: string;
  sparse?: boolean;
  fields: Array<[string, 1 | -1]>;
}

/** How `ix` serves `q`, or null when it does not (see the rule in the header). */
function serves(ix: Ix, q: Shape): string | null {
  const eqAll = new Set([...q.eq, ...q.in]);
  const f = ix.fields;
  // the documents it looks for are not in it
  if (ix.sparse && f.some(([name]) => q.missing.includes(name))) return null;
  let k = 0;
  while (k < f.length && eqAll.has(f[k]![0])) k++;
  if (k !== eqAll.size) return null; // every equality field, and only those, first
  if (q.sort.length) {
    const seg = f.slice(k, k + q.sort.length);
    if (seg.length !== q.sort.length || seg.some(([name], i) => name !== q.sort[i]![0])) return null;
    const same = seg.every(([, d], i) => d === q.sort[i]![1]);
    const opposite = seg.every(([, d], i) => d === -q.sort[i]![1]);
    if (!same && !opposite) return null;
  }
  if (!q.range.every((r) => f.some(([name]) => name === r))) return null; // a range the index does not bound
  if (k === 0 && !q.range.includes(f[0]![0]) && q.sort[0]?.[0] !== f[0]![0]) return null; // nothing bounds the scan
  const merge = q.sort.length && f.slice(0, k).some(([name]) => q.in.includes(name)) ? ' (merge of $in ranges)' : '';
  return `${ix.name}${merge}`;
}

/**
 * Queries accepted as scans, with why. Keyed by {@link keyOf}.
 */
const EXEMPT: Record<string, string> = {
  'actors find {ownerKey:range, quarantine:range}':
    'one-time rewrite of the quarantined records that stored an ownerKey, at the first open of a database ' +
    'written before findOwned used ownerUserId; `migrations` records it as done',
  'actors find {kind, status}':
    "one-time rename of resting orders' status LIVE to OPEN at the first open of a database written before it; " +
    '`migrations` records it as done',
  'actors find {type:range}':
    'one-time backfill at the first open of a database (records from before `type`); `migrations` records it as done',
  'idempotencyKeys find {status}':
    'one-time removal of minted keys from stored responses at the first open of a database (records live ' +
    '24 h); `migrations` records it as done',
  'tapeTokens find {}':
    "read whole once at start-up: a row per catalogue token with capture prints (the trade history's " +
    'market facts of its compact prints), bounded by the catalogue, not by the history',
};

/**
 * Agenda's MongoDB repository's queries on `agendaJobs` (`@agendajs/mongo-backend` 4.0.3,
 * MongoJobRepository), as this service uses them: cancel / cancel-all (`removeJobs` by name and
 * data), the poll (`getNextJobToRun`: name, disabled, `$or` of lockedAt/nextRunAt, sorted by
 * nextRunAt asc, priority desc; both `$or` branches are bounded by `name` then walk nextRunAt), and
 * `_id` lookups (getJobById, lockJob, saveJob/saveJobState, unlockJob(s), remove on completion).
 * `getQueueSize`, `queryJobs` and `getJobsOverview` serve Agenda's dashboard/stats, unused here.
 */
const AGENDA_MONGO_QUERIES: Shape[] = [
  {
    collection: 'agendaJobs',
    op: 'deleteMany',
    eq: ['data.actorId', 'data.timerName', 'name'],
    in: [],
    range: [],
    missing: [],
    sort: [],
  },
  {
    collection: 'agendaJobs',
    op: 'deleteMany',
    eq: ['data.actorId', 'name'],
    in: [],
    range: [],
    missing: [],
    sort: [],
  },
  {
    collection: 'agendaJobs',
    op: 'updateOne',
    eq: ['name'],
    in: [],
    range: ['disabled', 'lockedAt', 'nextRunAt'],
    missing: [],
    sort: [
      ['nextRunAt', 1],
      ['priority', -1],
    ],
  },
  { collection: 'agendaJobs', op: 'findOne', eq: ['_id'], in: [], range: [], missing: [], sort: [] },
  // ours, beside Agenda's (engine/scheduler/mongo-backend.ts mongoNextDueAt): when the next job is due
  {
    collection: 'agendaJobs',
    op: 'findOne',
    eq: ['name'],
    in: [],
    range: ['nextRunAt'],
    missing: [],
    sort: [['nextRunAt', 1]],
  },
  {
    collection: 'agendaJobs',
    op: 'updateOne',
    eq: ['_id', 'name'],
    in: [],
    range: ['disabled', 'lockedAt'],
    missing: [],
    sort: [],
  },
];

/** Agenda's own index (MongoJobRepository.connect, `ensureIndex` on by default) and ours. */
const AGENDA_MONGO_INDEXES: Ix[] = [
  {
    name: 'findAndLockNextJobIndex',
    fields: [
      ['name', 1],
      ['nextRunAt', 1],
      ['priority', -1],
      ['lockedAt', 1],
      ['disabled', 1],
    ],
  },
  ...timerJobIndexes(TIMER_JOB).map((ix) => ({ name: ix.options.name, fields: Object.entries(ix.key) })),
];

/** The store port over another store, recording query shapes and index declarations. */
class RecordingStore implements Store {
  readonly shapes = new Map<string, Shape>();
  readonly indexes = new Map<string, IndexSpec[]>();
  /** When false, close() leaves the inner store open (a restart on the same data). */
  closeInner = false;

  /** @param adapter - the adapter it reports (MongoDB's code paths, or the inner store's own). */
  constructor(
    readonly inner: Store,
    readonly adapter: StoreAdapter = 'mongodb',
  ) {}

  get location(): string {
    return this.inner.location;
  }

  private record(s: Shape): void {
    this.shapes.set(keyOf(s), s);
  }

  async collection<T extends Doc>(
    name: string,
    indexes: IndexSpec[] = [],
    layout?: CollectionLayout,
  ): Promise<Collection<T>> {
    const declared = this.indexes.get(name) ?? [];
    for (const ix of indexes) if (!declared.some((d) => JSON.stringify(d) === JSON.stringify(ix))) declared.push(ix);
    this.indexes.set(name, declared);
    const c = await this.inner.collection<T>(name, indexes, layout);
    const rec = (op: Op, filter: Filter, sort?: FindOptions['sort']) => this.record(shapeOf(name, op, filter, sort));
    return {
      insertOne: (doc) => c.insertOne(doc),
      insertMissing: (docs) => c.insertMissing(docs), // by _id
      findOne: (filter) => (rec('findOne', filter), c.findOne(filter)),
      find: (filter, options) => (rec('find', filter, options?.sort), c.find(filter, options)),
      count: (filter) => (rec('count', filter), c.count(filter)),
      updateOne: (filter, set, options) => (rec('updateOne', filter), c.updateOne(filter, set, options)),
      replaceOne: (doc) => c.replaceOne(doc), // by _id
      deleteMany: (filter) => (rec('deleteMany', filter), c.deleteMany(filter)),
    };
  }

  transaction<R>(fn: (tx: UnitOfWork) => Promise<R>): Promise<R> {
    return this.inner.transaction(fn);
  }

  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  writeFailure(): string | null {
    return this.inner.writeFailure();
  }

  async close(): Promise<void> {
    if (this.closeInner) await this.inner.close();
  }
}

function mongoIndexes(specs: IndexSpec[]): Ix[] {
  return specs
    .filter((s) => !s.adapters || s.adapters.includes('mongodb'))
    .map((s) => ({
      name:
        `{${s.fields.join(', ')}}${s.unique ? ' unique' : ''}${s.sparse ? ' sparse' : ''}` +
        `${s.adapters ? ` [${s.adapters.join(',')}]` : ''}`,
      fields: s.fields.map((x) => [x, 1] as [string, 1]),
      ...(s.sparse ? { sparse: true } : {}),
    }));
}

/** The service of a scenario run (replaced by its restart). */
interface Run {
  svc: TestService;
  store: RecordingStore;
  tr: Trading;
  clock: ReturnType<typeof useTestClock>;
}

const ENV = { SIM_MAKER_REFILL_MS: '3600000', SIM_INITIAL_PUSD: '1000000', SCHEDULER_POLL_MS: '100' };

/**
 * The representative scenarios through the real API (see the file header), ending with a restart
 * on the same data.
 */
async function runScenarios(run: Run): Promise<void> {
  const { tr, clock, store } = run;
  const svc = run.svc;
  const call = svc.call.bind(svc);
  // users and keys: provision (again: found), mint, use, revoke
  await call('POST', '/v2/trade/users', { body: { partner_user_id: 'alice' } });
  const minted = await call('POST', '/v2/trade/users/alice/api-keys', {
    body: { scopes: ['trade.read', 'trade.execute', 'trade.cancel'] },
  });
  expect(minted.status).toBe(201);
  expect((await call('GET', '/v2/trade/account', { token: minted.body.api_key })).status).toBe(200);
  expect((await call('DELETE', `/v2/trade/api-keys/${minted.body.key_id}`)).status).toBe(200);

  // orders: LIMIT resting then cancelled, IOC, MARKET, TAKE_PROFIT; an idempotent replay
  const a = await tr.freshToken(0.3, 0.6);
  await tr.buyShares('alice', a.token, 200);
  const key = randomUUID();
  const body = { symbol: a.token, side: 'buy', type: 'LIMIT', price: px(a.bid - 0.05), size: '5' };
  const rest = await call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key });
  expect(rest.status).toBe(200);
  expect((await call('POST', '/v2/trade/order', { body, headers: tr.as('alice'), idempotencyKey: key })).body).toEqual(
    rest.body,
  );
  expect((await call('DELETE', `/v2/trade/orders/${rest.body.order_id}`, { headers: tr.as('alice') })).status).toBe(
    200,
  );
  await tr.post('alice', { symbol: a.token, side: 'buy', type: 'MARKET', size: '5' });
  await tr.post('alice', { symbol: a.token, side: 'sell', type: 'TAKE_PROFIT', price: px(a.ask + 0.05), size: '10' });
  await tr.post('alice', { symbol: a.token, side: 'buy', type: 'LIMIT', price: px(a.bid - 0.06), size: '5' });
  await call('DELETE', '/v2/trade/orders', { headers: tr.as('alice') });

  // every strategy type, and a bracket
  const s = await tr.freshToken(0.3, 0.6);
  await tr.buyShares('alice', s.token, 500);
  const strategies = [
    { symbol: s.token, side: 'sell', type: 'STOP_LOSS', price: px(s.bid - 0.1), size: '10' },
    {
      symbol: s.token,
      side: 'sell',
      type: 'TRAILING_STOP',
      size: '10',
      execution: { high_water_mark: px(s.bid), trailing_offset: '0.03' },
    },
    {
      symbol: s.token,
      side: 'buy',
      type: 'TRAILING_BUY',
      quote_amount: '5',
      execution: { trailing_offset: '0.02', price_ceiling: '0.95' },
    },
    { symbol: s.token, side: 'buy', type: 'TWAP', size: '10', execution: { interval_sec: 10, duration_sec: 30 } },
    {
      symbol: s.token,
      side: 'buy',
      type: 'ICEBERG',
      price: px(s.bid - 0.02),
      size: '30',
      execution: { clip_size: '10' },
    },
    { symbol: s.token, side: 'buy', type: 'PEGGED', budget_usdc: '20', price_ceiling: Number(px(s.bid + 0.01)) },
    {
      symbol: s.token,
      side: 'buy',
      type: 'LIMIT',
      price: px(s.bid - 0.03),
      size: '10',
      take_profit: { price: px(s.ask + 0.1) },
      stop_loss: { price: px(s.bid - 0.2) },
    },
  ];
  const ids: string[] = [];
  for (const b of strategies) {
    const r = await tr.post('alice', b);
    expect(r.status, `${b.type}: ${JSON.stringify(r.body)}`).toBe(200);
    ids.push(r.body.record_id ?? r.body.bracket_id);
  }
  await svc.services.strategies.idle();
  // the TWAP's slices come from its timers
  clock.jump(11_000);
  await poll(
    'TWAP slices',
    () => tr.strategy('alice', ids[3]!),
    (x) => (x?.order_ids?.length ?? 0) >= 2,
    20_000,
  );
  // reads: strategies by status and type, open orders, activity pages with a cursor
  await call('GET', '/v2/trade/strategies?status=ACTIVE', { headers: tr.as('alice') });
  await call('GET', '/v2/trade/strategies?type=ICEBERG', { headers: tr.as('alice') });
  await call('GET', '/v2/trade/strategies?type=ICEBERG&status=ACTIVE', { headers: tr.as('alice') });
  await tr.openOrders('alice');
  const first = await call('GET', '/v2/trade/activity?limit=2', { headers: tr.as('alice') });
  if (first.body.next_cursor)
    await call('GET', `/v2/trade/activity?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`, {
      headers: tr.as('alice'),
    });
  // the trade reads: the tape and a trader's fills, each filter, first page and after a cursor
  const trader = `/v2/trade/traders/0x${'a1'.repeat(20)}/trades`;
  const wallet = `/v2/trade/trades?address=${tr.address.alice}`;
  for (const q of ['', `token_id=${a.token}`, `market_id=0x${'ab'.repeat(32)}`, 'side=SELL', 'taker_only=true'])
    for (const cursor of ['', 'cursor_ts=4000000000&next_cursor_log_idx=3'])
      for (const path of q === 'taker_only=true' ? [trader, wallet] : ['/v2/trade/trades', trader, wallet]) {
        const res = await call(
          'GET',
          `${path}${path.includes('?') ? '&' : '?'}${[q, cursor].filter(Boolean).join('&')}`,
        );
        expect(res.status).toBe(200);
      }
  // statements of a loaded history wallet: its list, one day (stored), its R1 rows, and all of them
  const leader = '/v2/trade/traders/0xb77b6ef359f02192fb077227499f9f853d4870a5/statements';
  for (const q of ['?limit=2', '?date=2026-02-21', '/r1?date=2026-02-21', '/r1?r1_limit=5'])
    await call('GET', leader + q);
  await call('DELETE', `/v2/trade/strategies/${ids[0]}`, { headers: tr.as('alice') });
  await call('DELETE', `/v2/trade/strategies/${ids[5]}`, { headers: tr.as('alice') });
  await svc.services.strategies.idle();

  // a start without MASTER_API_KEY looks for the partner's generated master key
  await svc.services.keys.ensureMasterKey('query-index-partner', undefined);

  // a restart on the same data: restore, reconcile, timers re-armed
  await svc.close();
  run.svc = await startTestService({ store, env: ENV });
  await tr.openOrders('alice');
  await sleep(300);
}

/**
 * A service for the scenarios in the describe block calling it (started before its tests, closed
 * after), on a {@link RecordingStore} reporting `adapter` over an in-memory SQLite store.
 */
function scenarioService(adapter: StoreAdapter): { run: Run; sqlite: () => SqliteStore } {
  const run = {} as Run;
  const tr = new Trading(() => run.svc);
  let sqlite: SqliteStore;
  beforeAll(async () => {
    run.clock = useTestClock();
    sqlite = await SqliteStore.open(null);
    run.store = new RecordingStore(sqlite, adapter);
    run.tr = tr;
    run.svc = await startTestService({ store: run.store, env: ENV });
    await tr.init(['alice', 'bob']);
  });
  afterAll(async () => {
    run.store.closeInner = true;
    await run.svc?.close();
    run.clock.restore();
  });
  return { run, sqlite: () => sqlite };
}

describe('every query the store port runs on MongoDB has an index that serves it', () => {
  const { run } = scenarioService('mongodb');

  it(
    'runs the scenarios, then checks each recorded query against the declared indexes',
    { timeout: 120_000 },
    async () => {
      const store = run.store;
      await runScenarios(run);

      // the check
      const rows: string[] = [];
      const unserved: string[] = [];
      const all = [...store.shapes.values()].filter((q) => q.collection !== 'agendaJobs').concat(AGENDA_MONGO_QUERIES);
      all.sort((x, y) => keyOf(x).localeCompare(keyOf(y)));
      for (const q of all) {
        const key = keyOf(q);
        let how: string | null = null;
        if (q.eq.includes('_id') || q.in.includes('_id') || q.range.includes('_id')) how = '_id (primary key)';
        else {
          const candidates =
            q.collection === 'agendaJobs' ? AGENDA_MONGO_INDEXES : mongoIndexes(store.indexes.get(q.collection) ?? []);
          for (const ix of candidates) if ((how = serves(ix, q))) break;
        }
        if (!how && EXEMPT[key]) how = `scan accepted: ${EXEMPT[key]}`;
        if (!how) unserved.push(key);
        rows.push(`${key.padEnd(95)} → ${how ?? 'NO INDEX'}`);
      }
      console.log(`\nqueries the port runs on MongoDB → the index that serves them\n${rows.join('\n')}\n`);
      const declared = [...store.indexes]
        .filter(([c]) => c !== 'agendaJobs')
        .map(
          ([c, specs]) =>
            `  ${c}: ${
              mongoIndexes(specs)
                .map((i) => i.name)
                .join('; ') || '(only _id)'
            }`,
        );
      const agenda = AGENDA_MONGO_INDEXES.map(
        (i) => `${i.name} {${i.fields.map(([f, d]) => `${f}${d < 0 ? ':-1' : ''}`).join(', ')}}`,
      ).join('; ');
      declared.push(`  agendaJobs (Agenda's MongoBackend; not through the port): ${agenda}`);
      console.log(`declared indexes (MongoDB):\n${declared.join('\n')}\n`);
      expect(unserved).toEqual([]);
      // the scenarios reached what they were meant to
      for (const c of ['actors', 'users', 'apiKeys', 'idempotencyKeys', 'venueJournal', 'venueState', 'secrets'])
        expect(
          all.some((q) => q.collection === c),
          c,
        ).toBe(true);
      // a user's actors, and those after an activity cursor
      expect(all.some((q) => q.collection === 'actors' && q.eq.includes('ownerUserId') && q.sort.length > 0)).toBe(
        true,
      );
      expect(all.some((q) => q.collection === 'actors' && q.range.includes('createdAtMs'))).toBe(true);
      expect(all.some((q) => q.collection === 'actors' && q.sort.some(([f]) => f === 'createdAtMs'))).toBe(true);
    },
  );

  it('the rule: equality prefix then sort; an unbounded or sort-breaking index does not serve', () => {
    const q = shapeOf('actors', 'find', { final: false, quarantine: null }, { createdAtMs: 1 });
    expect(
      serves(
        {
          name: 'fq',
          fields: [
            ['final', 1],
            ['quarantine', 1],
          ],
        },
        q,
      ),
    ).toBeNull(); // sorts in memory
    expect(serves({ name: 'c', fields: [['createdAtMs', 1]] }, q)).toBeNull(); // equality fields not in it
    expect(
      serves(
        {
          name: 'fqc',
          fields: [
            ['final', 1],
            ['quarantine', 1],
            ['createdAtMs', 1],
            ['_id', 1],
          ],
        },
        q,
      ),
    ).toBe('fqc');
    const back = shapeOf(
      'actors',
      'find',
      { kind: 'order', final: false, quarantine: null },
      { createdAtMs: -1, _id: -1 },
    );
    expect(
      serves(
        {
          name: 'k',
          fields: [
            ['kind', 1],
            ['final', 1],
            ['quarantine', 1],
            ['createdAtMs', 1],
            ['_id', 1],
          ],
        },
        back,
      ),
    ).toBe('k');
    expect(
      serves(
        {
          name: 'mixed',
          fields: [
            ['kind', 1],
            ['final', 1],
            ['quarantine', 1],
            ['createdAtMs', 1],
            ['_id', -1],
          ],
        },
        back,
      ),
    ).toBeNull();
    const owned = shapeOf(
      'actors',
      'find',
      { kind: { $in: ['order', 'strategy'] }, ownerUserId: 'u', createdAtMs: { $lt: 5 } },
      { createdAtMs: -1, _id: -1 },
    );
    const ownerKind: Ix = {
      name: 'uk',
      fields: [
        ['ownerUserId', 1],
        ['kind', 1],
        ['createdAtMs', 1],
        ['_id', 1],
      ],
    };
    expect(serves(ownerKind, owned)).toBe('uk (merge of $in ranges)');
    const ownerOnly: Ix = {
      name: 'u',
      fields: [
        ['ownerUserId', 1],
        ['createdAtMs', 1],
        ['_id', 1],
      ],
    };
    expect(serves(ownerOnly, owned)).toBeNull(); // kind filtered after the scan
    const countOwned = shapeOf('actors', 'count', { kind: 'order', ownerUserId: 'u' });
    expect(
      serves(
        {
          name: 'kfq',
          fields: [
            ['kind', 1],
            ['final', 1],
            ['quarantine', 1],
          ],
        },
        countOwned,
      ),
    ).toBeNull(); // every order of every user
    expect(serves(ownerKind, countOwned)).toBe('uk');
    const migration = shapeOf('actors', 'find', { type: { $exists: false } });
    expect(serves({ name: 't', fields: [['type', 1]], sparse: true }, migration)).toBeNull();
    const range = shapeOf('venueJournal', 'find', { seq: { $gt: 5 } }, { seq: 1 });
    expect(serves({ name: 's', fields: [['seq', 1]] }, range)).toBe('s');
  });
});

/**
 * Queries accepted as a scan of a collection table on SQLite, with why: matched against the SQL
 * (the first pattern that matches the statement).
 */
const SQLITE_EXEMPT: Array<[RegExp, string]> = [
  [
    /^SELECT id, doc FROM "tapeTokens" WHERE 1$/,
    "read whole once at start-up: a row per catalogue token with capture prints (the trade history's market " +
      'facts of its compact prints), bounded by the catalogue, not by the history',
  ],
  [
    new RegExp(
      '^SELECT doc FROM "trades" WHERE 1 ORDER BY json_extract\\(doc, \'\\$\\."blockTimestamp"\'\\) DESC, ' +
        'json_extract\\(doc, \'\\$\\."logIndex"\'\\) DESC LIMIT \\? OFFSET \\?$',
    ),
    'the first page of the whole tape: a walk of its chain-order index from the newest end, stopped by LIMIT',
  ],
  [
    /FROM "actors" WHERE "ix:quarantine" IS NOT NULL AND json_type\(doc, '\$\."ownerKey"'\) IS NOT NULL$/,
    'one-time rewrite of the quarantined records that stored an ownerKey, at the first open of a database ' +
      'written before findOwned used ownerUserId; `migrations` records it as done',
  ],
  [
    /FROM "actors" WHERE "ix:kind" = \? AND json_extract\(doc, '\$\."status"'\) = \?$/,
    "one-time rename of resting orders' status LIVE to OPEN at the first open of a database written before it; " +
      '`migrations` records it as done',
  ],
  [
    /FROM "actors" WHERE json_type\(doc, '\$\."type"'\) IS NULL/,
    'one-time backfill at the first open of a database (records from before `type`); `migrations` records it as done',
  ],
  [
    /FROM "idempotencyKeys" WHERE json_extract\(doc, '\$\."status"'\) = \?/,
    'one-time removal of minted keys from stored responses at the first open of a database (records live ' +
      '24 h); `migrations` records it as done',
  ],
];

describe('on SQLite every query the API runs is an index search, never a scan of a collection table', () => {
  const { run, sqlite: inner } = scenarioService('sqlite');

  it('runs the scenarios, then explains every statement the store prepared', { timeout: 120_000 }, async () => {
    await runScenarios(run);
    const sqlite = inner();
    const rows: string[] = [];
    const scans: string[] = [];
    const tables = new Set(run.store.indexes.keys());
    for (const sql of sqlite.preparedSql()) {
      if (!/^(SELECT|UPDATE|DELETE)/.test(sql)) continue;
      const n = (sql.match(/\?/g) ?? []).length;
      const plan = (
        sqlite.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array<null>(n).fill(null)) as Array<{ detail: string }>
      ).map((r) => r.detail);
      // a scan of a collection table, or of a whole index of one ("SCAN t USING [COVERING] INDEX")
      const scan = plan.find((d) => /^SCAN /.test(d) && tables.has(d.split(' ')[1]!));
      const exempt = scan ? SQLITE_EXEMPT.find(([re]) => re.test(sql)) : undefined;
      if (scan && !exempt) scans.push(`${sql}\n    ${plan.join(' | ')}`);
      rows.push(`${sql}\n    → ${plan.join(' | ')}${exempt ? ` (scan accepted: ${exempt[1]})` : ''}`);
    }
    console.log(`\nstatements the SQLite store ran → their plan\n${rows.join('\n')}\n`);
    expect(scans).toEqual([]);
    for (const c of ['actors', 'users', 'apiKeys', 'idempotencyKeys', 'venueJournal', 'agendaJobs'])
      expect(
        rows.some((r) => r.includes(`"${c}"`)),
        c,
      ).toBe(true);
  });
});
