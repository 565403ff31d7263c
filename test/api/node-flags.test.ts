import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { missingNodeFlags, SERVICE_NODE_FLAGS } from '../../api/node-flags.js';

/**
 * Starts `node <flags> dist/api/main.js` (store in memory, port 0) until it listens; returns the
 * lines it wrote up to then.
 */
async function startupLines(flags: string[], env: Record<string, string> = {}): Promise<string[]> {
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  delete inherited.MONGODB_URI;
  delete inherited.NODE_OPTIONS;
  const child = spawn(process.execPath, [...flags, 'dist/api/main.js'], {
    env: {
      ...inherited,
      DATA_DIR: ':memory:',
      PORT: '0',
      HOST: '127.0.0.1',
      SIM_REPLAY: 'off',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    await new Promise<void>((resolve, reject) => {
      const seen = (d: Buffer) => {
        out += d;
        if (out.includes('"listening on')) resolve();
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', seen);
      child.on('exit', () => reject(new Error(`exited before listening:\n${out}`)));
    });
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return out.split('\n').filter(Boolean);
}

const warnings = (lines: string[]) =>
  lines.filter((l) => l.startsWith('{')).filter((l) => (JSON.parse(l) as { level: number }).level === 40);

describe('the Node flags the service runs with', () => {
  it('npm start passes exactly SERVICE_NODE_FLAGS', async () => {
    const pkg = JSON.parse(await fs.readFile('package.json', 'utf8')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toBe(`npm run -s build && node ${SERVICE_NODE_FLAGS.join(' ')} dist/api/main.js`);
  });

  it('a flag counts as given on the command line or in NODE_OPTIONS, whatever its value or spelling', () => {
    expect(missingNodeFlags([], undefined)).toEqual(['--max-semi-space-size=64']);
    expect(missingNodeFlags(['--max-semi-space-size=64'], undefined)).toEqual([]);
    expect(missingNodeFlags(['--max_semi_space_size=32'], undefined)).toEqual([]);
    expect(missingNodeFlags(['--inspect'], '--max-old-space-size=4096 --max-semi-space-size=128')).toEqual([]);
    expect(missingNodeFlags(['--max-old-space-size=4096'], '')).toEqual(['--max-semi-space-size=64']);
  });

  it('started without them, the service warns once and serves; with them (or NODE_OPTIONS), nothing', async () => {
    const bare = warnings(await startupLines([]));
    expect(bare).toHaveLength(1);
    expect(JSON.parse(bare[0]!)).toMatchObject({
      missing: ['--max-semi-space-size=64'],
      msg: expect.stringMatching(/^started without --max-semi-space-size=64: npm start passes it/),
    });
    expect(warnings(await startupLines([...SERVICE_NODE_FLAGS]))).toEqual([]);
    expect(warnings(await startupLines([], { NODE_OPTIONS: SERVICE_NODE_FLAGS.join(' ') }))).toEqual([]);
  }, 60_000);
});
