import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { printedMasterKey, spawnService, type ServiceProcess } from '../process.js';

/** Every regular file under `dir`, with its mode bits; every folder below `dir` must be 0700. */
async function filesOf(dir: string): Promise<Array<{ file: string; mode: number }>> {
  const out: Array<{ file: string; mode: number }> = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      expect((await fs.stat(p)).mode & 0o777, p).toBe(0o700);
      out.push(...(await filesOf(p)));
    } else if (e.isFile()) out.push({ file: p, mode: (await fs.stat(p)).mode & 0o777 });
  }
  return out;
}

/** Stops a spawned service gracefully (the store compacts its files on close). */
async function stop(p: ServiceProcess): Promise<void> {
  p.child.kill('SIGTERM');
  await p.exited;
}

describe('DATA_DIR at rest', () => {
  const dirs: string[] = [];
  const running: ServiceProcess[] = [];
  const tmp = async () => {
    const d = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-dd-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null) await stop(p);
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });

  it('folder 0700, files 0600; no minted key (live, revoked, replayed) nor the master key in any file', async () => {
    const dir = path.join(await tmp(), 'var'); // made by the service
    const svc = await spawnService({ DATA_DIR: dir, SIM_REPLAY: 'off', SIM_CAPTURE: 'off' });
    running.push(svc);
    const master = await printedMasterKey(svc);
    const call = async (method: string, p: string, body?: unknown, idem: string = randomUUID()) => {
      const res = await fetch(svc.baseUrl + p, {
        method,
        headers: {
          authorization: `Bearer ${master}`,
          'content-type': 'application/json',
          ...(method === 'GET' ? {} : { 'idempotency-key': idem }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any, replayed: res.headers.get('idempotent-replayed') };
    };
    expect((await call('POST', '/v2/trade/users', { partner_user_id: 'alice' })).status).toBe(201);
    const idem = randomUUID();
    const minted = await call(
      'POST',
      '/v2/trade/users/alice/api-keys',
      { scopes: ['trade.read', 'trade.withdraw'] },
      idem,
    );
    expect(minted.status).toBe(201);
    const token: string = minted.body.api_key;
    expect(token).toMatch(/^pts_/);
    expect((await call('DELETE', `/v2/trade/api-keys/${minted.body.key_id}`)).status).toBe(200);
    const replay = await call(
      'POST',
      '/v2/trade/users/alice/api-keys',
      { scopes: ['trade.read', 'trade.withdraw'] },
      idem,
    );
    expect(replay).toMatchObject({
      status: 201,
      replayed: 'true',
      body: { key_id: minted.body.key_id, message: expect.stringMatching(/shown once/) },
    });
    expect(replay.body.api_key).toBeUndefined();
    expect(
      (
        await fetch(`${svc.baseUrl}/v2/trade/activity`, {
          headers: { authorization: `Bearer ${master}`, 'x-partner-user-id': 'alice' },
        })
      ).status,
    ).toBe(200);

    const check = async () => {
      expect((await fs.stat(dir)).mode & 0o777).toBe(0o700);
      const files = await filesOf(dir);
      expect(files.map((f) => path.basename(f.file))).toEqual(expect.arrayContaining(['store.sqlite']));
      for (const f of files) {
        expect(f.mode, f.file).toBe(0o600);
        const text = (await fs.readFile(f.file)).toString('latin1');
        expect(text.includes(token), `${f.file} holds the minted key`).toBe(false);
        expect(text.includes(master), `${f.file} holds the master key`).toBe(false);
      }
    };
    await check(); // while it runs (the database, its WAL and shared-memory files)
    await stop(svc);
    await check(); // after shutdown (the WAL checkpointed into the database)
  });

  it('a folder open to other users at start is tightened, files included, and named in a WARN line', async () => {
    const dir = await tmp();
    await fs.chmod(dir, 0o755);
    await fs.writeFile(path.join(dir, 'store.sqlite'), '', { mode: 0o644 });
    await fs.chmod(path.join(dir, 'store.sqlite'), 0o644); // whatever the umask
    const svc = await spawnService({ DATA_DIR: dir, SIM_REPLAY: 'off', SIM_CAPTURE: 'off', LOG_LEVEL: 'warn' });
    running.push(svc);
    expect((await fs.stat(dir)).mode & 0o777).toBe(0o700);
    expect((await fs.stat(path.join(dir, 'store.sqlite'))).mode & 0o777).toBe(0o600);
    const warn = svc
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; tightened?: string[] })
      .find((l) => l.msg.startsWith('DATA_DIR:'));
    expect(warn).toMatchObject({
      level: 40,
      msg: `DATA_DIR: 2 path(s) under ${dir} were readable by other local users; now 700 (folders) / 600 (files)`,
    });
    expect(warn!.tightened).toEqual([dir, path.join(dir, 'store.sqlite')]);
    await stop(svc);
  });

  it('a master key file an older version left in DATA_DIR is named in a WARN line', async () => {
    const dir = await tmp();
    await fs.writeFile(path.join(dir, 'master-api-key'), 'pts_old\n', { mode: 0o600 });
    const svc = await spawnService({ DATA_DIR: dir, SIM_REPLAY: 'off', SIM_CAPTURE: 'off', LOG_LEVEL: 'warn' });
    running.push(svc);
    const warn = svc
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; file?: string })
      .find((l) => l.msg.includes('holds a master API key in clear'));
    expect(warn).toMatchObject({ level: 40, file: path.join(dir, 'master-api-key') });
    expect(svc.output()).not.toContain('pts_old');
    await stop(svc);
  });
});
