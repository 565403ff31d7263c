import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, SETTINGS } from '../../engine/config.js';
import { CONFIG_DOCS_PATH, renderConfigDocs } from '../../scripts/gen-config-docs.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({})).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      dataDir: './var',
      mongodbUri: undefined,
      masterApiKey: undefined,
      partnerId: 'demo',
      logLevel: 'info',
      simReplaySpeed: 600,
      simCaptureSpeed: 1, // the capture in real time; the MSTR path compressed
    });
  });

  it.each([
    ['PORT', 'eighty', /PORT must be an integer port/],
    ['PORT', '70000', /PORT must be an integer port/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL must be one of/],
    ['MONGODB_URI', 'http://x', /MONGODB_URI must be a mongodb:\/\/.*got \(hidden\)/],
    ['SCHEDULER_POLL_MS', '5', /SCHEDULER_POLL_MS must be between 50 and 60000/],
    [
      'MONGODB_URI',
      'mongodb+srv://h1:27017,h2/db',
      new RegExp(
        'MONGODB_URI is not a valid connection string \\(mongodb\\+srv URI cannot have multiple service ' +
          'names\\); got \\(hidden\\)',
      ),
    ],
    ['MONGODB_WRITE_CONCERN', 'all', /MONGODB_WRITE_CONCERN must be majority or a number of members 1-99/],
    ['MONGODB_WRITE_CONCERN', '0', /MONGODB_WRITE_CONCERN must be majority or a number of members 1-99/],
    ['MONGODB_JOURNAL', 'true', /MONGODB_JOURNAL must be on or off/],
    ['MONGODB_ALLOW_STANDALONE', 'yes', /MONGODB_ALLOW_STANDALONE must be on or off/],
    ['SIM_CAPTURE_SPEED', '0', /^SIM_CAPTURE_SPEED must be between 1 and 1000000; got "0"$/],
    ['SIM_CAPTURE_SPEED', 'fast', /^SIM_CAPTURE_SPEED must be an integer; got "fast"$/],
  ])('rejects %s=%s with a message naming it', (name, value, pattern) => {
    expect(() => loadConfig({ [name]: value })).toThrowError(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrowError(pattern);
  });

  it('MongoDB write settings: majority, journaled, no standalone by default; configurable', () => {
    expect(loadConfig({})).toMatchObject({
      mongodbWriteConcern: 'majority',
      mongodbJournal: true,
      mongodbAllowStandalone: false,
    });
    expect(
      loadConfig({ MONGODB_WRITE_CONCERN: '2', MONGODB_JOURNAL: 'off', MONGODB_ALLOW_STANDALONE: 'on' }),
    ).toMatchObject({
      mongodbWriteConcern: 2,
      mongodbJournal: false,
      mongodbAllowStandalone: true,
    });
    expect(loadConfig({ MONGODB_URI: 'mongodb://h1:27017,h2:27017/db?replicaSet=rs0' }).mongodbUri).toBe(
      'mongodb://h1:27017,h2:27017/db?replicaSet=rs0',
    );
  });

  it('a bad value stops the process with one line naming the variable', () => {
    const r = spawnSync(process.execPath, ['dist/api/main.js'], {
      env: { ...process.env, PORT: 'nope' },
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      'configuration error: PORT must be an integer port 0-65535; got "nope"',
    ]);
  });

  it('docs/configuration.md is what `npm run docs:config` renders from SETTINGS', () => {
    const committed = fs.readFileSync(CONFIG_DOCS_PATH, 'utf8');
    expect(committed, `${CONFIG_DOCS_PATH} is stale: run \`npm run docs:config\` and commit it`).toBe(
      renderConfigDocs(),
    );
    for (const s of SETTINGS) expect(committed, s.env).toMatch(new RegExp(`\\| \`${s.env}\` \\|`));
  });
});
