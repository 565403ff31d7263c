import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NEDB_IMPORT, OldStoreDataError, SqliteStore } from '../../engine/store/sqlite.js';
import { startTestService, type TestService } from '../helpers.js';
import { checkInvariants } from '../invariants.js';
import { runToExit, spawnService, type ServiceProcess } from '../process.js';

/** The folder the older embedded store wrote, and what its API answered then (test/fixtures/nedb-data-dir.json). */
const FIXTURE = path.resolve('test/fixtures/nedb-data-dir');
const facts = JSON.parse(await fs.readFile(`${FIXTURE}.json`, 'utf8')) as Record<string, string>;

/** `npm run migrate -- <args>` as the operator runs it (tsx on scripts/migrate.ts), to its exit. */
const migrate = (...args: string[]) => runToExit(['--import', 'tsx', 'scripts/migrate.ts', ...args], {});

/**
 * A `DATA_DIR` of the older embedded store (NeDB files, written by that version through its API):
 * the service refuses to start on it with one line naming the import command; the command imports
 * it; the service then starts on it with everything the old one had.
 */
describe('a DATA_DIR of the older embedded store: refused at start, imported by `npm run migrate`', () => {
  const dirs: string[] = [];
  let child: ServiceProcess | null = null;
  let svc: TestService | null = null;
  afterAll(async () => {
    if (child && child.child.exitCode === null) {
      child.child.kill('SIGKILL');
      await child.exited;
    }
    await svc?.close();
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });
  const copyOfFixture = async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-nedb-'));
    dirs.push(dir);
    await fs.cp(FIXTURE, dir, { recursive: true });
    return dir;
  };

  it('refuses with one line, imports in one command, then serves users, keys, orders and positions', async () => {
    const dir = await copyOfFixture();
    const before = (await fs.readdir(dir)).sort();
    expect(before).toContain('users.db');

    const refused = await runToExit(['dist/api/main.js'], { DATA_DIR: dir, PORT: '0' });
    expect(refused.code).toBe(1);
    expect(refused.out.trim()).toBe(
      `cannot start: DATA_DIR ${dir} holds data of the older embedded store: import it with \`npm run ` +
        `migrate -- ${dir}\``,
    );
    expect((await fs.readdir(dir)).sort()).toEqual(before); // nothing made beside the old files

    const imported = await migrate(dir);
    expect(imported.code, imported.out).toBe(0);
    expect(imported.out.trim()).toMatch(
      new RegExp(
        `^imported \\d+ documents into ${dir}/store\\.sqlite \\(actors 4, .*apiKeys 2, .*users 2, .*\\); ` +
          `the old files are now in ${dir}/nedb-imported-[0-9TZ-]+$`,
      ),
    );
    const after = await fs.readdir(dir);
    expect(after.filter((f) => f.endsWith('.db'))).toEqual([]);
    const aside = after.find((f) => f.startsWith('nedb-imported-'))!;
    expect((await fs.readdir(path.join(dir, aside))).sort()).toEqual(before.filter((f) => f.endsWith('.db')));

    // run again: nothing left to import, nothing changed
    const again = await migrate(dir);
    expect(again).toEqual({
      code: 0,
      out: `nothing to import: ${dir} holds no data file of the older embedded store\n`,
    });

    child = await spawnService({
      DATA_DIR: dir,
      SIM_REPLAY: 'off',
      SIM_CAPTURE: 'off',
      SIM_MAKER_REFILL_MS: '3600000',
    });
    const master = (await fs.readFile(path.join(dir, 'master-api-key'), 'utf8')).trim();
    const get = async (url: string, token: string, user?: string) => {
      const res = await fetch(child!.baseUrl + url, {
        headers: { authorization: `Bearer ${token}`, ...(user ? { 'x-partner-user-id': user } : {}) },
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    for (const user of ['alice', 'bob']) {
      const account = await get('/v2/trade/account', master, user);
      expect(account.status, user).toBe(200);
      expect(account.body.user.partner_user_id).toBe(user);
    }
    // the per-user key minted by the old version
    const alice = facts.alice_api_key!;
    expect((await get('/v2/trade/account', alice)).body).toMatchObject({
      api_key: { kind: 'user' },
      user: { partner_user_id: 'alice' },
    });
    const open = await get('/v2/trade/orders/open', alice);
    expect(open.status).toBe(200);
    expect(open.body.orders.map((o: any) => [o.order_id, o.status, o.price, o.size])).toEqual([
      [facts.resting_order_id, 'OPEN', '0.01', '10'],
    ]);
    const filled = await get(`/v2/trade/orders/${facts.filled_order_id}`, alice);
    expect([filled.status, filled.body.status, filled.body.filled_size]).toEqual([200, 'FILLED', '38.46']);
    const strategies = await get('/v2/trade/strategies', alice);
    expect(strategies.body.strategies.map((s: any) => [s.record_id, s.type, s.status, s.price, s.size])).toEqual([
      [facts.stop_loss_record_id, 'STOP_LOSS', 'ACTIVE', '0.05', '10'],
    ]);
    const positions = await get('/v2/trade/positions', alice);
    expect(positions.body.positions.map((p: any) => [p.condition_id, p.outcome, p.size])).toEqual([
      [facts.condition_id, 'Yes', '41.46'], // 38.46 bought + 3 split
      [facts.condition_id, 'No', '3'],
    ]);
    expect((await get('/v2/trade/balances', alice)).body).toMatchObject({
      balance: facts.pusd_balance,
      reserved: '0.1',
    });
    child.child.kill('SIGTERM');
    expect(await child.exited).toBe(0);

    // the books balance on the imported data
    svc = await startTestService({
      store: await SqliteStore.open(dir, { lock: true }),
      env: { SIM_REPLAY: 'off', SIM_MAKER_REFILL_MS: '3600000' },
    });
    await checkInvariants(svc.services);
  });

  it('refuses to import over a store holding documents unless --force, and while a service runs', async () => {
    const dir = await copyOfFixture();
    const store = await SqliteStore.open(dir, { oldStoreFiles: true });
    await (await store.collection('users')).insertOne({ _id: 'someone-else' });
    await store.close();
    const refused = await migrate(dir);
    expect(refused).toEqual({
      code: 1,
      out:
        `cannot migrate: ${dir}/store.sqlite already holds documents (users): nothing imported; --force ` +
        `imports over them (a document with the same _id is replaced)\n`,
    });
    expect((await fs.readdir(dir)).filter((f) => f.endsWith('.db'))).toContain('users.db');

    const held = await SqliteStore.open(dir, { lock: true, oldStoreFiles: true });
    const locked = await migrate(dir, '--force');
    await held.close();
    expect(locked.code).toBe(1);
    expect(locked.out).toMatch(
      new RegExp(`^cannot migrate: DATA_DIR ${dir} is in use by another process \\(pid ${process.pid} `),
    );

    const forced = await migrate(dir, '--force');
    expect(forced.code, forced.out).toBe(0);
    const check = await SqliteStore.open(dir);
    expect((await (await check.collection('users')).find({}, { sort: { _id: 1 } })).map((u) => u._id)).toContain(
      'someone-else',
    );
    expect(await (await check.collection('users')).count({})).toBe(3);
    await check.close();
  });

  it('a database that records the import starts beside the old files; one that does not is refused', async () => {
    const dir = await copyOfFixture();
    const unmarked = await SqliteStore.open(dir, { oldStoreFiles: true });
    await unmarked.close();
    await expect(SqliteStore.open(dir)).rejects.toBeInstanceOf(OldStoreDataError);
    const marked = await SqliteStore.open(dir, { oldStoreFiles: true });
    await marked.transaction((tx) => marked.recordImport(NEDB_IMPORT, 1_700_000_000_000, tx));
    await marked.close();
    const store = await SqliteStore.open(dir, { lock: true });
    expect(store.importedAt(NEDB_IMPORT)).toBe(1_700_000_000_000);
    await store.close();
    // the migrate command then only moves the files aside
    const moved = await migrate(dir);
    expect(moved.code, moved.out).toBe(0);
    expect(moved.out).toMatch(
      new RegExp(
        `^already imported into ${dir}/store\\.sqlite at 2023-11-14T22:13:20\\.000Z; the old files are now ` +
          `in ${dir}/nedb-imported-`,
      ),
    );
    expect((await fs.readdir(dir)).filter((f) => f.endsWith('.db'))).toEqual([]);
  });
});
