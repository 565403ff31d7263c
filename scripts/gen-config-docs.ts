/**
 * Renders docs/configuration.md from the settings table of engine/config.ts ({@link SETTINGS}), so
 * the operator's list of environment variables is the one the service validates.
 *
 * `npm run docs:config` writes the file; `test/engine/config.test.ts` fails when the committed file
 * differs from what {@link renderConfigDocs} renders.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTINGS, type SettingSpec } from '../engine/config.js';

/** Path of the generated page, relative to the repository root. */
export const CONFIG_DOCS_PATH = 'docs/configuration.md';

/** The values a setting accepts, as a sentence ('' when its meaning already says it). */
function accepted(s: SettingSpec): string {
  switch (s.type) {
    case 'port':
      return ' Integer 0–65535.';
    case 'int':
      return ` Integer ${s.min}–${s.max}.`;
    case 'onoff':
      return ' `on` or `off`.';
    default:
      return '';
  }
}

/** A table cell: pipes escaped, so a description cannot split its row. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/**
 * The whole text of docs/configuration.md: fixed prose around one table row per setting
 * (variable, meaning with the accepted values, default), in the order of {@link SETTINGS}.
 */
export function renderConfigDocs(): string {
  const rows = (SETTINGS as readonly SettingSpec[]).map(
    (s) =>
      `| \`${s.env}\` | ${cell(s.description + accepted(s))} ` +
      `| ${s.default === undefined ? 'unset' : `\`${cell(s.default)}\``} |`,
  );
  const secrets = (SETTINGS as readonly SettingSpec[]).filter((s) => s.secret).map((s) => `\`${s.env}\``);
  return [
    '# Configuration',
    '',
    '<!-- Generated from engine/config.ts (SETTINGS) by `npm run docs:config`; do not edit by hand. -->',
    '',
    'Every setting is an environment variable, validated at start-up. A bad value stops the process',
    '(exit code 2) with one line naming the variable, for example',
    '`configuration error: PORT must be an integer port 0-65535; got "x"`. The values of the secret',
    `settings (${secrets.join(', ')}) are never echoed: the line says \`got (hidden)\`.`,
    '',
    '| variable | meaning | default |',
    '|---|---|---|',
    ...rows,
    '',
    'Which store a setting selects, and what MongoDB and `DATA_DIR` require of the machine, is in',
    "[operations.md](operations.md). The simulated venue's settings (`SIM_*`) are explained in",
    '[orders-and-venue.md](orders-and-venue.md); the load-shedding settings (`WRITE_*`,',
    '`LOOP_BUDGET_MS`) in [api.md](api.md#load-shedding) and ' +
      '[architecture.md](architecture.md#load-shedding-and-fairness).',
    '',
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(CONFIG_DOCS_PATH, renderConfigDocs());
  console.log(`wrote ${CONFIG_DOCS_PATH} (${SETTINGS.length} settings)`);
}
