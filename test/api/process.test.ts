import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnService, type ServiceProcess } from '../process.js';

/** Runs `node <args>` to its exit: exit code and everything it wrote. */
function runToExit(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, LOG_LEVEL: 'info', HOST: '127.0.0.1', SIM_REPLAY: 'off', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('the service process (issue 12 items 2, 14, 21)', () => {
  const dirs: string[] = [];
  const running: ServiceProcess[] = [];
  const tmp = async () => {
    const d = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-proc-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const p of running) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });

  it('a second process on the same DATA_DIR refuses to start with one line naming the folder; a taken port fails before a key is minted', async () => {
    const dir = await tmp();
    const first = await spawnService({ DATA_DIR: dir, LOG_LEVEL: 'info', SIM_REPLAY: 'off' });
    running.push(first);
    const port = new URL(first.baseUrl).port;

    // The master key is a plain block of its own, never inside a JSON line, before the API answers.
    const lines = first.output().split('\n').filter((l) => l.trim() !== '');
    const key = (await fs.readFile(path.join(dir, 'master-api-key'), 'utf8')).trim();
    const keyAt = lines.indexOf(key);
    expect(keyAt).toBeGreaterThan(0);
    expect(lines[keyAt - 1]).toMatch(/^MASTER_API_KEY for partner 'demo' \(shown once/);
    expect(lines.findIndex((l) => l.includes('"listening on'))).toBeGreaterThan(keyAt);
    for (const l of lines.filter((x, i) => i !== keyAt && i !== keyAt - 1)) expect(() => JSON.parse(l)).not.toThrow();

    const other = await tmp();
    const second = await runToExit(['dist/api/main.js'], { DATA_DIR: dir, PORT: '0' });
    expect(second.code).toBe(1);
    expect(second.out.trim().split('\n').at(-1)).toBe(`cannot start: DATA_DIR ${dir} is in use by another process (pid ${first.child.pid} on ${os.hostname()}): the embedded store belongs to one process; stop it, or give this one another DATA_DIR (or MONGODB_URI)`);

    const taken = await runToExit(['dist/api/main.js'], { DATA_DIR: other, PORT: port });
    expect(taken.code).toBe(1);
    expect(taken.out).toBe(`cannot start: port ${port} on 127.0.0.1 is already in use: stop the process holding it or set PORT to a free port\n`);
    expect(await fs.readdir(other)).toEqual([]); // nothing opened, no key minted
    expect((await fetch(`${first.baseUrl}/healthz`)).status).toBe(200);
  });

  it('an unhandled rejection or uncaught exception is logged at fatal and exits 1', async () => {
    for (const fault of ['Promise.reject(new Error("boom"))', 'setTimeout(() => { throw new Error("boom") }, 0)']) {
      const script = `import('./dist/api/fatal.js').then(async (f) => { const { createLogger } = await import('./dist/engine/logger.js'); f.installFatalHandlers(createLogger('info')); ${fault}; setTimeout(() => console.log('still running'), 2000); })`;
      const { code, out } = await runToExit(['-e', script], {});
      expect(code).toBe(1);
      const fatal = JSON.parse(out.trim().split('\n')[0]!) as { level: number; err: { message: string; stack: string }; msg: string };
      expect(fatal).toMatchObject({ level: 60, err: { message: 'boom' } });
      expect(fatal.msg).toMatch(/^(unhandledRejection|uncaughtException): exiting/);
      expect(out).not.toContain('still running');
    }
  });
});
