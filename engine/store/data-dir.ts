import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';

/**
 * Modes of `DATA_DIR` and what lives in it. The folder holds the store's data files (API key
 * hashes, every user's activity): only the service's own user may enter it or read them. Every adapter that writes
 * under `DATA_DIR` creates its folders with {@link DATA_DIR_MODE} and its files with {@link DATA_FILE_MODE}
 * (passed as the `mode` of `open` / `writeFile` / `mkdir`, so a file is never readable by others,
 * not even for an instant), and calls {@link prepareDataDir} once before writing.
 */
export const DATA_DIR_MODE = 0o700;
/** Mode of every file written under `DATA_DIR`: read and write for the owner only. */
export const DATA_FILE_MODE = 0o600;
/** The modes an adapter passes to its file layer (NeDB's `modes` option has this shape). */
export const DATA_MODES = Object.freeze({ fileMode: DATA_FILE_MODE, dirMode: DATA_DIR_MODE });

/** Permission bits that let the group or other users in (read, write or enter). */
const OPEN_TO_OTHERS = 0o077;

/** The file in which older versions handed a generated master key to the operator, in clear. */
const OLD_MASTER_KEY_FILE = 'master-api-key';

/**
 * Creates `dir` (and missing parents) with mode 0700, or, when it exists with permissions open to
 * the group or other users, tightens it to 0700 and its entries to 0600 (files) / 0700 (folders),
 * one level deep (the store keeps no deeper tree). Each tightening is named in one WARN line (a
 * folder from an older version, or made by hand); what cannot be tightened (another owner, a
 * read-only mount) is named in a WARN line too and the start goes on: the service can still run,
 * and the operator learns what to fix.
 * @param dir - absolute folder.
 * @param log - where the WARN lines go; none: silent.
 * @returns the paths that were tightened.
 * @throws the file system's error when `dir` cannot be created or read.
 */
export async function prepareDataDir(dir: string, log?: Logger | null): Promise<string[]> {
  await fs.mkdir(dir, { recursive: true, mode: DATA_DIR_MODE });
  const tightened: string[] = [];
  const tighten = async (p: string, isDir: boolean): Promise<void> => {
    const st = await fs.lstat(p).catch(() => null);
    if (!st || st.isSymbolicLink() || (st.mode & OPEN_TO_OTHERS) === 0) return;
    const to = isDir ? DATA_DIR_MODE : DATA_FILE_MODE;
    try {
      await fs.chmod(p, to);
      tightened.push(p);
    } catch (err) {
      log?.warn(
        { path: p, mode: (st.mode & 0o777).toString(8), err: (err as Error).message },
        `DATA_DIR: ${p} is readable by other local users (mode ${(st.mode & 0o777).toString(8)}) and ` +
          `could not be changed to ${to.toString(8)}: change its mode or owner`,
      );
    }
  };
  await tighten(dir, true);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    if (entry.isFile() || entry.isDirectory()) await tighten(path.join(dir, entry.name), entry.isDirectory());
  }
  if (tightened.length)
    log?.warn(
      { dir, tightened },
      `DATA_DIR: ${tightened.length} path(s) under ${dir} were readable by other local users; ` +
        `now ${DATA_DIR_MODE.toString(8)} (folders) / ${DATA_FILE_MODE.toString(8)} (files)`,
    );
  const keyFile = path.join(dir, OLD_MASTER_KEY_FILE);
  if (await fs.stat(keyFile).catch(() => null)) {
    log?.warn(
      { file: keyFile },
      `DATA_DIR: ${keyFile} holds a master API key in clear, written by an older version (this one ` +
        `writes no secret): copy the key somewhere safe, then delete the file`,
    );
  }
  return tightened;
}

/**
 * Writes `text` to `file` readable by its owner only: created with mode 0600, and an existing file
 * set to 0600 before it is overwritten (a mode given to `writeFile` applies only to a new file).
 * @throws the file system's error.
 */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  await fs.chmod(file, DATA_FILE_MODE).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  await fs.writeFile(file, text, { mode: DATA_FILE_MODE });
}
