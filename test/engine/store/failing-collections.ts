import type { Collection, Doc, Store } from '../../../engine/store/port.js';

/** Which writes fail: a predicate on (collection, operation); switch it off by setting null. */
export type FailWhen = ((collection: string, op: 'insertOne' | 'updateOne' | 'replaceOne' | 'deleteMany') => boolean) | null;

/**
 * A Store that forwards to `inner` and rejects the writes `failWhen` picks (reads always pass),
 * switchable at run time: `s.failWhen = (c, op) => c === 'venueJournal'`, later `s.failWhen = null`.
 */
export class FailingStore implements Store {
  failWhen: FailWhen = null;
  /** Writes refused so far. */
  refused = 0;

  constructor(private readonly inner: Store) {}

  get adapter() {
    return this.inner.adapter;
  }

  get location() {
    return this.inner.location;
  }

  async collection<T extends Doc>(name: string, indexes?: Parameters<Store['collection']>[1]): Promise<Collection<T>> {
    const c = await this.inner.collection<T>(name, indexes);
    const guard = <A extends unknown[], R>(op: 'insertOne' | 'updateOne' | 'replaceOne' | 'deleteMany', fn: (...a: A) => Promise<R>) =>
      (...a: A): Promise<R> => {
        if (this.failWhen?.(name, op)) {
          this.refused++;
          return Promise.reject(new Error(`injected failure: ${name}.${op}`));
        }
        return fn(...a);
      };
    return {
      insertOne: guard('insertOne', (d: T) => c.insertOne(d)),
      updateOne: guard('updateOne', (f: Record<string, unknown>, s: Record<string, unknown>, o?: { upsert?: boolean }) => c.updateOne(f, s, o)),
      replaceOne: guard('replaceOne', (d: T) => c.replaceOne(d)),
      deleteMany: guard('deleteMany', (f: Record<string, unknown>) => c.deleteMany(f)),
      findOne: (f) => c.findOne(f),
      find: (f, o) => c.find(f, o),
      count: (f) => c.count(f),
    };
  }

  ping(): Promise<boolean> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
