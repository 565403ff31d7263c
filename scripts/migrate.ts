/**
 * `npm run migrate -- <dir> [--force]`: imports a `DATA_DIR` written by the older embedded store
 * (NeDB's `<collection>.db` files) into the SQLite store of that folder (`<dir>/store.sqlite`),
 * which the service refuses to start beside such files until they are imported.
 *
 * - Each file is read with NeDB's public API (`loadDatabaseAsync`, `findAsync`): its documents as
 *   last written, Dates as Dates. @seald-io/nedb is a dev dependency for this script alone.
 * - The documents go in through the SQLite store the service uses, every collection and the record
 *   of the import (`_imports`, id `nedb`) in one transaction: a crash or an error leaves nothing.
 * - Then the `.db` files move into `<dir>/nedb-imported-<UTC time>/`, so the next start sees none.
 * - It holds the folder's lock meanwhile: a service running on `<dir>` makes it refuse.
 * - Safe to run again: with no `.db` file left it says so and changes nothing; when the import was
 *   recorded but the files were not moved yet (a crash in between), it only moves them.
 * - It refuses when store.sqlite already holds documents (two sets of data: which one is right is
 *   the operator's call); `--force` imports over them (a document with the same `_id` is replaced).
 *
 * Exit code 0 when imported or nothing to do, 1 with one line `cannot migrate: …` otherwise.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import NedbModule from '@seald-io/nedb';
import { cjsDefault } from '../engine/interop.js';
import { DATA_DIR_MODE, DATA_MODES, prepareDataDir } from '../engine/store/data-dir.js';
import { DataDirLockedError } from '../engine/store/lock.js';
import type { Doc } from '../engine/store/port.js';
import { NEDB_IMPORT, nedbCollections, SQLITE_FILE, SqliteStore } from '../engine/store/sqlite.js';

const Datastore = cjsDefault(NedbModule);

/** A refusal of the import; its message is the one line to print. */
export class MigrateRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrateRefusedError';
  }
}

/** What {@link migrateNedbDir} did. */
export interface MigrateResult {
  /** Documents imported per collection (empty when none were: nothing to do, or imported before). */
  imported: Record<string, number>;
  /** Epoch ms of an import recorded before this run (its files are only moved now), or null. */
  importedBefore: number | null;
  /** The folder the `.db` files were moved into, or null when there were none. */
  movedTo: string | null;
}

/** The documents of one NeDB data file, read through NeDB's public API. */
async function readNedbFile(filename: string): Promise<Doc[]> {
  const ds = new Datastore<Doc>({ filename, modes: DATA_MODES });
  await ds.loadDatabaseAsync();
  return ds.findAsync({});
}

/**
 * Imports the older embedded store's files of `dir` into `dir`'s SQLite store (see the file
 * header for the rules).
 * @param dir - the `DATA_DIR` (resolved against the working directory).
 * @param options.force - import even when the SQLite store already holds documents.
 * @param options.now - the clock (epoch ms): the import's record and the folder's name.
 * @throws {MigrateRefusedError} when the SQLite store holds documents and `force` is not set.
 * @throws {DataDirLockedError} when a live process (a running service) holds `dir`.
 */
export async function migrateNedbDir(
  dir: string,
  options: { force?: boolean; now?: () => number } = {},
): Promise<MigrateResult> {
  const now = options.now ?? Date.now;
  const names = await nedbCollections(dir);
  if (names.length === 0) return { imported: {}, importedBefore: null, movedTo: null };
  await prepareDataDir(dir);
  const store = await SqliteStore.open(dir, { lock: true, oldStoreFiles: true });
  const imported: Record<string, number> = {};
  let importedBefore: number | null;
  try {
    importedBefore = store.importedAt(NEDB_IMPORT);
    if (importedBefore === null) {
      const held = (
        store.db
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'`)
          .pluck()
          .all() as string[]
      ).filter((t) => store.db.prepare(`SELECT 1 FROM "${t}" LIMIT 1`).get() !== undefined);
      if (held.length > 0 && !options.force) {
        throw new MigrateRefusedError(
          `${path.join(dir, SQLITE_FILE)} already holds documents (${held.join(', ')}): nothing ` +
            `imported; --force imports over them (a document with the same _id is replaced)`,
        );
      }
      const files = new Map<string, Doc[]>();
      for (const name of names) files.set(name, await readNedbFile(path.join(dir, `${name}.db`)));
      const atMs = now();
      for (const name of files.keys()) await store.collection<Doc>(name); // opened (tables made) before the transaction
      await store.transaction(async (tx) => {
        for (const [name, docs] of files) {
          const c = tx.collection<Doc>(name);
          for (const doc of docs) await c.replaceOne(doc);
          imported[name] = docs.length;
        }
        await store.recordImport(NEDB_IMPORT, atMs, tx);
      });
    }
  } finally {
    await store.close();
  }
  const movedTo = path.join(dir, `nedb-imported-${new Date(now()).toISOString().replace(/[:.]/g, '-')}`);
  await fs.mkdir(movedTo, { mode: DATA_DIR_MODE });
  for (const entry of await fs.readdir(dir)) {
    // the data files and NeDB's temporary copies (`<file>~`) of the collections imported
    if (names.some((n) => entry === `${n}.db` || entry === `${n}.db~`))
      await fs.rename(path.join(dir, entry), path.join(movedTo, entry));
  }
  return { imported, importedBefore, movedTo };
}

/** The command line: `migrate <dir> [--force]`. */
async function main(argv: string[]): Promise<number> {
  const usage = 'usage: npm run migrate -- <DATA_DIR> [--force]';
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`cannot migrate: ${(err as Error).message}\n${usage}\n`);
    return 1;
  }
  if (parsed.values.help || parsed.positionals.length !== 1) {
    (parsed.values.help ? process.stdout : process.stderr).write(`${usage}\n`);
    return parsed.values.help ? 0 : 1;
  }
  const dir = path.resolve(parsed.positionals[0]!);
  try {
    const r = await migrateNedbDir(dir, { force: parsed.values.force === true });
    if (!r.movedTo) {
      process.stdout.write(`nothing to import: ${dir} holds no data file of the older embedded store\n`);
    } else if (r.importedBefore !== null) {
      process.stdout.write(
        `already imported into ${path.join(dir, SQLITE_FILE)} ` +
          `at ${new Date(r.importedBefore).toISOString()}; the old files are now in ${r.movedTo}\n`,
      );
    } else {
      const counts = Object.entries(r.imported).map(([c, n]) => `${c} ${n}`);
      const total = Object.values(r.imported).reduce((a, b) => a + b, 0);
      process.stdout.write(
        `imported ${total} documents into ${path.join(dir, SQLITE_FILE)} ` +
          `(${counts.join(', ')}); the old files are now in ${r.movedTo}\n`,
      );
    }
    return 0;
  } catch (err) {
    const known = err instanceof MigrateRefusedError || err instanceof DataDirLockedError;
    process.stderr.write(
      known
        ? `cannot migrate: ${(err as Error).message}\n`
        : `cannot migrate: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return 1;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
