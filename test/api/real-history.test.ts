import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { TRADER_FILLS, TRADES, type TapeTrade, type TraderFill } from '../../engine/data/records.js';
import { LEADER_TRADES_FILE } from '../../engine/data/real-history.js';
import { SqliteStore } from '../../engine/store/sqlite.js';
import { dataFile } from '../../engine/venue/markets.js';
import { FaultyStore } from '../engine/store/faulty-store.js';
import { startTestService, type TestService } from '../helpers.js';

const LEADER = '0xb77b6ef359f02192fb077227499f9f853d4870a5';

/**
 * The real history in data/ is loaded at start, once: the leader wallet's 470 fills and the 100
 * Data API trades are in the trade history at their real times, prices and sizes; their markets
 * are known to the registry the data reads use.
 */
describe('real Polymarket history loaded at start', () => {
  const running: TestService[] = [];
  afterAll(async () => {
    for (const s of running) await s.close();
  });

  it("the leader's 470 fills are its trader fills, with their real prices, sizes, times and hashes", async () => {
    const inner = await SqliteStore.open(null);
    const svc = await startTestService({ store: new FaultyStore(inner, { keepOpen: true }) });
    running.push(svc);
    const fills = await (
      await svc.services.store.collection<TraderFill>(TRADER_FILLS)
    ).find({ address: LEADER }, { sort: { blockTimestamp: 1, logIndex: 1 } });
    expect(fills).toHaveLength(470);
    // the file as it is: one row per line, the fields by their header
    const [head, ...lines] = fs.readFileSync(dataFile(LEADER_TRADES_FILE), 'utf8').trim().split('\n');
    const cols = head!.split(',');
    const rows = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])));
    const byHash = new Map(fills.map((f) => [f.transactionHash, f]));
    for (const r of rows) {
      expect(byHash.get(r.transaction_hash!), r.transaction_hash).toMatchObject({
        role: 'taker',
        source: 'history',
        userId: null,
        side: r.side,
        price: r.price,
        size: r.size,
        tokenId: r.asset,
        conditionId: r.condition_id,
        outcome: r.outcome,
        blockTimestamp: Number(r.timestamp),
        atMs: Number(r.timestamp) * 1000,
      });
    }
    // the first line of the file, in full: notional = price × size (6 decimals)
    expect(byHash.get('0xc46cbad2a1fc296085c400730f63ab66a9aa7d944c5d5dbded99b8e1eca6a3bb')).toMatchObject({
      price: '0.999',
      size: '4.99',
      notionalUsd: '4.98501',
      blockTimestamp: 1771678938,
    });
    // rows of one second: log indexes 0, 1, … in file order
    const second = fills.filter((f) => f.blockTimestamp === 1771674708);
    expect(second.map((f) => f.logIndex)).toEqual(second.map((_, i) => i));
    const tape = await (await svc.services.store.collection<TapeTrade>(TRADES)).find({ taker: LEADER });
    expect(tape).toHaveLength(470);
    expect(tape.every((t) => t.maker === null && t.source === 'history')).toBe(true);
    expect(svc.services.markets.tokenOf(rows[0]!.asset!)).toMatchObject({ outcome: 'Up' });
    expect(svc.services.markets.marketOf(rows[0]!.condition_id!)).toMatchObject({
      eventSlug: 'eth-15min-up-or-down-2026-02-21-07:45',
      listed: false,
    });

    // the Data API trades: 100 tape rows of 79 wallets, their float prices kept as their decimal text
    const dataApi = await (
      await svc.services.store.collection<TapeTrade>(TRADES)
    ).find({
      source: 'history',
      blockTimestamp: { $lt: 1771000000 },
    });
    expect(dataApi).toHaveLength(100);
    expect(new Set(dataApi.map((t) => t.taker)).size).toBe(79);
    expect(dataApi.find((t) => t.transactionHash.startsWith('0x76c5cd80'))).toMatchObject({
      price: '0.21999995306666104',
      size: '13.636362',
      notionalUsd: '2.999999',
      side: 'BUY',
      outcome: 'Yes',
    });
    expect(svc.services.markets.marketOf('0x97A5AAEA08EBF41E5036588CD57E4068A9C488368CC694201BBF1DF1607E38F9')).toEqual(
      {
        conditionId: '0x97a5aaea08ebf41e5036588cd57e4068a9c488368cc694201bbf1df1607e38f9',
        question: 'Will Genoa CFC win on 2026-02-07?',
        slug: 'sea-gen-nap-2026-02-07-gen',
        eventSlug: 'sea-gen-nap-2026-02-07',
        listed: false,
      },
    );

    // a second start on the same store records nothing again
    await svc.close();
    running.pop();
    const again = await startTestService({ store: inner });
    running.push(again);
    expect(await (await again.services.store.collection(TRADER_FILLS)).count({ address: LEADER })).toBe(470);
    expect(await (await again.services.store.collection(TRADES)).count({ source: 'history' })).toBe(570);
    expect(again.services.markets.tokenOf(rows[0]!.asset!)).toMatchObject({ outcome: 'Up' });
  });
});
