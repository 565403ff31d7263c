import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import SwaggerParserModule from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../api/routes.js';
import { validatorFor } from '../../api/validation.js';
import { cjsDefault } from '../../engine/interop.js';
import { startTestService, type TestService } from '../helpers.js';

const SwaggerParser = cjsDefault(SwaggerParserModule);
const run = promisify(execFile);

describe('OpenAPI 3.1 document (GET /v2/trade/openapi.json)', () => {
  let svc: TestService;
  let doc: any;
  beforeAll(async () => {
    svc = await startTestService();
    const res = await svc.call('GET', '/v2/trade/openapi.json', { token: null });
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(() => svc.close());

  it('is public, OpenAPI 3.1.0, and validates with swagger-parser', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('2.0.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('lints clean with @redocly/cli (recommended rules, redocly.yaml)', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pts-openapi-'));
    const file = path.join(dir, 'openapi.json');
    await fs.writeFile(file, JSON.stringify(doc));
    try {
      const { stdout, stderr } = await run(
        process.execPath,
        ['node_modules/@redocly/cli/bin/cli.js', 'lint', file, '--config', 'redocly.yaml', '--format', 'json'],
        { maxBuffer: 64 << 20 },
      );
      const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { totals: { errors: number; warnings: number } };
      expect(report.totals, stderr).toEqual(expect.objectContaining({ errors: 0, warnings: 0 }));
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('has every route of the table with its scope, parameters, statuses and schemas', () => {
    for (const r of ROUTES) {
      for (const p of [r.path, ...(r.v1 ? [r.path.replace(/^\/v2\//, '/v1/')] : [])]) {
        const op = doc.paths[p.replace(/:(\w+)/g, '{$1}')]?.[r.method];
        expect(op, `${r.method} ${p}`).toBeTruthy();
        expect(op.tags).toEqual([r.tag]);
        expect(op.security).toEqual(r.scope ? [{ bearerAuth: [r.scope] }] : []);
        const names = op.parameters.map((x: any) => x.name ?? x.$ref);
        for (const m of p.matchAll(/:(\w+)/g)) expect(names).toContain(m[1]);
        for (const q of Object.keys(r.query?.properties ?? {})) expect(names).toContain(q);
        if (r.method !== 'get') expect(names).toContain('#/components/parameters/IdempotencyKey');
        for (const s of Object.keys(r.responses ?? {})) expect(op.responses[s]).toBeTruthy();
        expect(op.responses['400']).toBeTruthy();
        if (r.scope) expect(op.responses).toMatchObject({ 401: expect.anything(), 403: expect.anything() });
        if (!r.handler) expect(op.responses['501']).toBeTruthy();
        if (r.body) expect(op.requestBody.content['application/json'].schema).toBeTruthy();
      }
    }
    expect(doc.components.schemas.ErrorEnvelope.required).toEqual(['error']);
    expect(doc.paths['/v2/trade/openapi.json'].get.tags).toEqual(['trade.health']);
  });

  it('every request example in the table is valid against its body schema', () => {
    for (const r of ROUTES.filter((x) => x.body)) {
      expect(r.example, `${r.method} ${r.path} has an example`).toBeTruthy();
      const v = validatorFor(r.body!);
      expect(v(r.example), `${r.method} ${r.path}: ${JSON.stringify(v.errors)}`).toBe(true);
    }
  });
});
