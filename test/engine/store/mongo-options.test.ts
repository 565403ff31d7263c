import { Db, MongoClient } from 'mongodb';
import { describe, expect, it, vi } from 'vitest';
import {
  databaseOf,
  DEFAULT_WRITE_SETTINGS,
  mongoClientOptions,
  MongoStore,
  MongoStoreRefusedError,
  standaloneRefusal,
  topologyOf,
  uriWriteConcernConflict,
  writeConcernMismatch,
} from '../../../engine/store/mongo.js';

/** Everything MongoStore.open decides before and after connecting, no server needed. */
describe('MongoDB connection string: the database name', () => {
  it.each([
    ['seed list with ports and a replica set', 'mongodb://h1:27017,h2:27017/db?replicaSet=rs0', 'db'],
    ['mongodb+srv', 'mongodb+srv://cluster0.example.net/prod', 'prod'],
    [
      'mongodb+srv with credentials and options',
      'mongodb+srv://app:s%40cret%2F1@cluster0.example.net/prod?retryWrites=true&w=majority',
      'prod',
    ],
    ['no database, no slash', 'mongodb://h1:27017', 'fallback_db'],
    ['no database, slash and options', 'mongodb://h1:27017,h2:27018/?replicaSet=rs0&authSource=admin', 'fallback_db'],
    [
      'credentials with %-escapes and a seed list',
      'mongodb://us%3Aer:p%40ss%2Fw%3Ard@h1:27017,h2:27017,h3:27017/trading?replicaSet=rs0&authSource=admin',
      'trading',
    ],
    ['IPv6 hosts', 'mongodb://[::1]:27017,[::1]:27018/v6db?replicaSet=rs0', 'v6db'],
    ['a database name with %-escapes', 'mongodb://h1:27017/my%20db%2Dx?tls=true', 'my db-x'],
    ['a unix socket host', 'mongodb://%2Ftmp%2Fmongodb-27017.sock/sockdb', 'sockdb'],
  ])('%s: %s → %s', (_what, uri, db) => {
    expect(databaseOf(uri, 'fallback_db')).toBe(db);
  });

  it('new URL() cannot read the usual seed list, the driver parser can (why databaseOf uses the driver parser)', () => {
    expect(() => new URL('mongodb://h1:27017,h2:27017/db?replicaSet=rs0'.replace(/^mongodb:/, 'http:'))).toThrow();
    expect(databaseOf('mongodb://h1:27017,h2:27017/db?replicaSet=rs0', 'x')).toBe('db');
  });

  it('agrees with the database MongoClient itself opens for every URI that names one', () => {
    for (const uri of [
      'mongodb://h1:27017,h2:27017/db?replicaSet=rs0',
      'mongodb+srv://app:s%40cret@cluster0.example.net/prod?retryWrites=true',
      'mongodb://h1:27017/my%20db%2Dx',
    ]) {
      expect(databaseOf(uri, 'unused')).toBe(new MongoClient(uri).options.dbName);
    }
  });

  it('a URI that is not a connection string throws the parser error', () => {
    expect(() => databaseOf('mongodb+srv://h1:27017,h2/x', 'd')).toThrow(/multiple service names/);
  });

  it('when connecting fails the client is closed and the error propagates (no server at this port)', async () => {
    const close = vi.spyOn(MongoClient.prototype, 'close');
    try {
      await expect(
        MongoStore.open('mongodb://127.0.0.1:1,127.0.0.1:2/db?replicaSet=rs0', 'd', { serverSelectionTimeoutMS: 300 }),
      ).rejects.toThrow(/ECONNREFUSED|Server selection timed out/);
      expect(close).toHaveBeenCalledTimes(1);
    } finally {
      close.mockRestore();
    }
  });
});

describe('MongoDB write concern and deployment checks', () => {
  it('sets w: majority and journal: true explicitly by default', () => {
    expect(DEFAULT_WRITE_SETTINGS).toEqual({ w: 'majority', journal: true });
    expect(mongoClientOptions()).toEqual({
      serverSelectionTimeoutMS: 10_000,
      writeConcern: { w: 'majority', journal: true },
    });
    expect(mongoClientOptions({ w: 2, journal: false }, 500)).toEqual({
      serverSelectionTimeoutMS: 500,
      writeConcern: { w: 2, journal: false },
    });
  });

  it("keeps the URI's serverSelectionTimeoutMS unless the caller gives one", () => {
    const uri = 'mongodb://h1:27017/db?replicaSet=rs0&serverselectiontimeoutms=2500';
    expect(mongoClientOptions(DEFAULT_WRITE_SETTINGS, undefined, uri)).toEqual({
      writeConcern: { w: 'majority', journal: true },
    });
    expect(new MongoClient(uri, mongoClientOptions(DEFAULT_WRITE_SETTINGS, undefined, uri)).options).toMatchObject({
      serverSelectionTimeoutMS: 2500,
    });
    expect(new MongoClient(uri, mongoClientOptions(DEFAULT_WRITE_SETTINGS, 700, uri)).options).toMatchObject({
      serverSelectionTimeoutMS: 700,
    });
    const plain = 'mongodb://h1:27017/db';
    expect(new MongoClient(plain, mongoClientOptions(DEFAULT_WRITE_SETTINGS, undefined, plain)).options).toMatchObject({
      serverSelectionTimeoutMS: 10_000,
    });
  });

  it('the driver takes these options: its effective write concern is the one asked for, retryable writes on', () => {
    for (const [uri, write] of [
      ['mongodb://h1:27017,h2:27017/db?replicaSet=rs0', DEFAULT_WRITE_SETTINGS],
      ['mongodb+srv://cluster0.example.net/prod?retryWrites=true&w=majority', DEFAULT_WRITE_SETTINGS],
      ['mongodb://h1:27017/db', { w: 1, journal: false }],
    ] as const) {
      const c = new MongoClient(uri, mongoClientOptions(write));
      expect(c.options.writeConcern).toMatchObject({ w: write.w, journal: write.journal });
      expect(c.options.retryWrites).toBe(true);
      expect(uriWriteConcernConflict(uri, write)).toBeNull();
      expect(writeConcernMismatch(write, c.options.writeConcern)).toBeNull();
    }
  });

  it.each([
    ['mongodb://h1:27017/db?w=1', DEFAULT_WRITE_SETTINGS, /w=1 \(MONGODB_WRITE_CONCERN=majority\)/],
    ['mongodb://h1:27017/db?W=majority', { w: 2, journal: true }, /W=majority \(MONGODB_WRITE_CONCERN=2\)/],
    ['mongodb://h1:27017/db?journal=false', DEFAULT_WRITE_SETTINGS, /journal=false \(MONGODB_JOURNAL=on\)/],
    ['mongodb://h1:27017/db?j=true&w=majority', { w: 'majority', journal: false }, /j=true \(MONGODB_JOURNAL=off\)/],
  ] as const)('a URI write concern that contradicts the settings is refused: %s', (uri, write, message) => {
    expect(uriWriteConcernConflict(uri, write)).toMatch(message);
    expect(uriWriteConcernConflict(uri, write)).toMatch(
      /contradicts the settings: remove it from the URI or change the settings$/,
    );
  });

  it('a journal=false in the URI (it beats the client option in the driver) is found and refused at open', async () => {
    const c = new MongoClient('mongodb://h1:27017/db?journal=false', mongoClientOptions());
    expect(writeConcernMismatch(DEFAULT_WRITE_SETTINGS, c.options.writeConcern)).toMatch(
      /w=majority journal=false.*ask for w=majority journal=true/,
    );
    const close = vi.spyOn(MongoClient.prototype, 'close');
    try {
      const opening = MongoStore.open('mongodb://127.0.0.1:1/db?journal=false', 'd', { serverSelectionTimeoutMS: 300 });
      await expect(opening).rejects.toBeInstanceOf(MongoStoreRefusedError);
      await expect(opening).rejects.toThrow(/journal=false \(MONGODB_JOURNAL=on\) contradicts the settings/);
      expect(close).toHaveBeenCalledTimes(1);
    } finally {
      close.mockRestore();
    }
  });

  it.each([
    ['replica-set member', { isWritablePrimary: true, setName: 'rs0', hosts: ['h1:27017'] }, 'replicaSet'],
    ['mongos', { isWritablePrimary: true, msg: 'isdbgrid' }, 'sharded'],
    ['standalone', { isWritablePrimary: true, maxWireVersion: 21 }, 'standalone'],
    ['legacy isMaster of a standalone', { ismaster: true }, 'standalone'],
  ])('topologyOf(%s) = %s', (_what, hello, kind) => {
    expect(topologyOf(hello)).toBe(kind);
  });

  it('refuses a standalone server unless allowed; accepts a replica set and mongos', () => {
    const standalone = { isWritablePrimary: true, maxWireVersion: 21 };
    expect(standaloneRefusal(standalone, false)).toMatch(/standalone server.*replica set.*MONGODB_ALLOW_STANDALONE=on/);
    expect(standaloneRefusal(standalone, true)).toBeNull();
    expect(standaloneRefusal({ setName: 'rs0' }, false)).toBeNull();
    expect(standaloneRefusal({ msg: 'isdbgrid' }, false)).toBeNull();
  });

  it('MongoStore.open refuses a standalone server (no setName), closes the client; allowStandalone opens', async () => {
    const connect = vi.spyOn(MongoClient.prototype, 'connect').mockImplementation(async function (this: MongoClient) {
      return this;
    });
    const admin = vi
      .spyOn(Db.prototype, 'admin')
      .mockReturnValue({ command: async () => ({ isWritablePrimary: true, maxWireVersion: 21 }) } as never);
    const close = vi.spyOn(MongoClient.prototype, 'close').mockResolvedValue();
    try {
      const opening = MongoStore.open('mongodb://h1:27017,h2:27017/db?replicaSet=rs0', 'd');
      await expect(opening).rejects.toBeInstanceOf(MongoStoreRefusedError);
      await expect(opening).rejects.toThrow(/standalone server/);
      expect(close).toHaveBeenCalledTimes(1);
      const store = await MongoStore.open('mongodb://h1:27017,h2:27017/db?replicaSet=rs0', 'd', {
        allowStandalone: true,
      });
      expect(store.location).toBe('mongodb database db');
      expect(close).toHaveBeenCalledTimes(1);
      await store.close();
    } finally {
      connect.mockRestore();
      admin.mockRestore();
      close.mockRestore();
    }
  });
});
