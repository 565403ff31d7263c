import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
});

describe('the checkpoint worker', () => {
  it('keeps a process with nothing else to do alive until a checkpoint and the close answer', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-checkpointer-'));
    dirs.push(dir);
    const file = path.join(dir, 'store.sqlite');
    // a child process whose only work left is the checkpoint it awaits, then the worker's close
    const script = `
      import Database from 'better-sqlite3';
      import { Checkpointer } from './engine/store/sqlite-checkpointer.ts';
      const db = new Database(${JSON.stringify(file)});
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t (x TEXT)');
      for (let i = 0; i < 100; i++) db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(1000));
      const checkpointer = new Checkpointer(${JSON.stringify(file)});
      const r = await checkpointer.checkpoint();
      console.log('checkpointed', r.log === r.checkpointed);
      await checkpointer.close();
      console.log('closed');
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      encoding: 'utf8',
    });
    expect(out.trim().split('\n')).toEqual(['checkpointed true', 'closed']);
  });
});
