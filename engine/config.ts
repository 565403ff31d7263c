/**
 * Service configuration: one declaration of every setting (environment variable, type, default,
 * description), validated once at start-up. docs/configuration.md is generated from
 * {@link SETTINGS} by `npm run docs:config` (`test/engine/config.test.ts` fails when it is stale).
 */
import { ConnectionString } from 'mongodb-connection-string-url';

/** Kinds of value a setting may hold. */
type SettingType = 'port' | 'string' | 'path' | 'url' | 'level' | 'int' | 'onoff' | 'decimal' | 'writeConcern';

/** Declaration of one setting. */
export interface SettingSpec {
  /** Environment variable name. */
  env: string;
  type: SettingType;
  /** Default as it would be written in the environment; `undefined` means "unset". */
  default?: string;
  /** One-line meaning, shown in docs/configuration.md. */
  description: string;
  /** Inclusive bounds for `int`. */
  min?: number;
  max?: number;
  /** Never echo the value (in errors or logs). */
  secret?: boolean;
}

/** Every setting the service reads. After a change, run `npm run docs:config`. */
export const SETTINGS = [
  {
    env: 'PORT',
    type: 'port',
    default: '8080',
    description: 'TCP port the HTTP server listens on (0 = any free port).',
  },
  { env: 'HOST', type: 'string', default: '127.0.0.1', description: 'Interface the HTTP server binds to.' },
  {
    env: 'DATA_DIR',
    type: 'path',
    default: './var',
    description:
      'Folder of the SQLite store (`store.sqlite`, used when MONGODB_URI is unset) and of the first-start ' +
      'master key file; `:memory:` keeps the store in memory (benchmarks, demos).',
  },
  {
    env: 'MONGODB_URI',
    type: 'url',
    description: 'MongoDB connection string; when set the service stores everything in MongoDB instead of SQLite.',
    secret: true,
  },
  {
    env: 'MONGODB_DB',
    type: 'string',
    default: 'partner_trading',
    description: 'Database name used on MongoDB when the URI names none.',
  },
  {
    env: 'MONGODB_WRITE_CONCERN',
    type: 'writeConcern',
    default: 'majority',
    description:
      'Write concern `w` of every MongoDB write: `majority`, or a number of members (1 = ' +
      'the primary alone). A different `w` in the URI stops the start.',
  },
  {
    env: 'MONGODB_JOURNAL',
    type: 'onoff',
    default: 'on',
    description:
      'on: a MongoDB write is acknowledged only once it is in the on-disk journal (write concern ' +
      '`j: true`). A contradicting `journal` / `j` in the URI stops the start.',
  },
  {
    env: 'MONGODB_ALLOW_STANDALONE',
    type: 'onoff',
    default: 'off',
    description:
      'on: accept a standalone MongoDB server (no replica set); off: refuse to start on one, ' +
      'since majority writes and retryable writes need a replica set.',
  },
  {
    env: 'MASTER_API_KEY',
    type: 'string',
    description:
      'Master API key of PARTNER_ID with every scope. Unset: one is ' +
      'generated on first start, printed once and kept hashed.',
    secret: true,
  },
  { env: 'PARTNER_ID', type: 'string', default: 'demo', description: 'Partner that the master key belongs to.' },
  {
    env: 'LOG_LEVEL',
    type: 'level',
    default: 'info',
    description: 'pino log level: fatal, error, warn, info, debug, trace or silent.',
  },
  {
    env: 'SCHEDULER_POLL_MS',
    type: 'int',
    default: '1000',
    min: 50,
    max: 60000,
    description:
      'How often the scheduler scans for due timers (ms); timers due ' +
      'sooner are also woken by its notification channel.',
  },
  {
    env: 'SHUTDOWN_GRACE_MS',
    type: 'int',
    default: '10000',
    min: 0,
    max: 600000,
    description: 'How long a graceful shutdown (SIGTERM/SIGINT) waits for in-flight work before exiting (ms).',
  },
  {
    env: 'SIM_REPLAY',
    type: 'onoff',
    default: 'on',
    description:
      'on: the MSTR token follows its recorded price path; off: every book stays static (deterministic tests).',
  },
  {
    env: 'COPYTRADE_LEADER_REPLAY',
    type: 'onoff',
    default: 'off',
    description:
      'on: the real leader wallet of data/leader-wallet-trades-2026-02-21.csv is replayed as a live leader ' +
      '(its 55 markets listed on the venue), starting when the first subscription to it exists (docs/api.md).',
  },
  {
    env: 'COPYTRADE_LEADER_REPLAY_SPEED',
    type: 'int',
    default: '60',
    min: 1,
    max: 100000000,
    description: 'Replay clock of the leader wallet: recorded seconds per real second (60: its 27.7 h in 28 min).',
  },
  {
    env: 'SIM_REPLAY_SPEED',
    type: 'int',
    default: '600',
    min: 1,
    max: 1000000,
    description:
      'Replay time compression of the MSTR price path: recorded seconds per ' +
      'real second (600 = one 10-minute point per second).',
  },
  {
    env: 'SIM_CAPTURE',
    type: 'onoff',
    default: 'on',
    description:
      'on: the 112 markets of the WebSocket capture (data/ws-capture-2026-02-20.csv) follow it on the capture ' +
      'clock (SIM_CAPTURE_SPEED): captured book levels, trade prints, tick-size changes, resolutions; the ' +
      'replay stops at the end of the capture (no loop), and a restart resumes where it was. off: those markets ' +
      'are quoted like the static ones and never change by themselves.',
  },
  {
    env: 'SIM_CAPTURE_SPEED',
    type: 'int',
    default: '1',
    min: 1,
    max: 1000000,
    description:
      'Capture seconds per real second of the WebSocket capture replay: 1 = real time (a 15-minute market ' +
      'lives 15 minutes and resolves as it did); 600 plays the 6.5 hours in 39 s.',
  },
  {
    env: 'SIM_CONTROL',
    type: 'onoff',
    default: 'off',
    description:
      "on: the simulated venue's control endpoint `POST /v2/sim/markets/{condition_id}/resolve` exists (master " +
      'key only): how tests and demos resolve a market. off: it answers 404. Never on in production.',
  },
  {
    env: 'SIM_INITIAL_PUSD',
    type: 'decimal',
    default: '10000',
    description: 'pUSD every provisioned user starts with on the simulated venue (dollars).',
  },
  {
    env: 'SIM_MAKER_LEVELS',
    type: 'int',
    default: '5',
    min: 1,
    max: 50,
    description: 'Price levels the simulated liquidity provider quotes on each side of every book.',
  },
  {
    env: 'SIM_MAKER_REFILL_MS',
    type: 'int',
    default: '5000',
    min: 0,
    max: 3600000,
    description: 'Delay before the simulated liquidity provider refills a book after its quotes were taken (ms).',
  },
  {
    env: 'SIM_BLOCK_DELAY_MS',
    type: 'int',
    default: '2000',
    min: 0,
    max: 3600000,
    description:
      'Simulated block delay of a withdrawal: how long after its debit the transfer ' +
      'confirms (or reverts), through the durable scheduler (ms).',
  },
  {
    env: 'TRADE_HISTORY',
    type: 'onoff',
    default: 'on',
    description:
      'on: every fill, capture trade print and cash movement is recorded in the trade history with the step ' +
      'that makes it (and the real history in data/ is loaded). off: nothing is recorded (to measure what ' +
      'recording costs: `npm run bench:orders` runs both).',
  },
  {
    env: 'RATE_LIMIT_PER_MIN',
    type: 'int',
    default: '600',
    min: 0,
    max: 10000000,
    description:
      'Requests per minute per API key (per client address for public routes); beyond it ' +
      '429 with Retry-After. 0 turns rate limiting off (benchmarks).',
  },
  {
    env: 'BODY_LIMIT_BYTES',
    type: 'int',
    default: '65536',
    min: 1024,
    max: 10485760,
    description: 'Largest accepted JSON request body; larger bodies answer 413.',
  },
  {
    env: 'WRITE_CONCURRENCY',
    type: 'int',
    default: '64',
    min: 0,
    max: 100000,
    description:
      'Mutating requests (POST, PATCH, DELETE) handled at once; more wait in a queue. 0 = no ' +
      'limit (requests still wait for LOOP_BUDGET_MS when it is not 0).',
  },
  {
    env: 'WRITE_QUEUE_LENGTH',
    type: 'int',
    default: '512',
    min: 0,
    max: 1000000,
    description:
      'Mutating requests that may wait for one of the WRITE_CONCURRENCY slots; ' +
      'beyond it 503 `overloaded` with Retry-After at once.',
  },
  {
    env: 'WRITE_QUEUE_WAIT_MS',
    type: 'int',
    default: '2000',
    min: 1,
    max: 600000,
    description:
      'Longest a mutating request waits in that queue (ms); then 503 `overloaded` with Retry-After, nothing changed.',
  },
  {
    env: 'LOOP_BUDGET_MS',
    type: 'int',
    default: '4',
    min: 0,
    max: 1000,
    description:
      'Mutating-request work started per event-loop iteration (ms); once spent, further requests wait ' +
      'in the WRITE_QUEUE_LENGTH queue for a later iteration, so the loop comes back often to accept new ' +
      'connections (Node 20 accepts one per iteration). 0 = no budget.',
  },
] as const satisfies readonly SettingSpec[];

type SettingName = (typeof SETTINGS)[number]['env'];

/** Parsed, validated configuration. Units are in the names (`…Ms`, `…Bytes`). */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  mongodbUri: string | undefined;
  mongodbDb: string;
  /** Write concern `w` on MongoDB: `'majority'` or a member count >= 1. */
  mongodbWriteConcern: 'majority' | number;
  /** Journaled acknowledgement on MongoDB (`j: true`). */
  mongodbJournal: boolean;
  /** Whether a standalone MongoDB server (no replica set) is accepted. */
  mongodbAllowStandalone: boolean;
  masterApiKey: string | undefined;
  partnerId: string;
  logLevel: string;
  schedulerPollMs: number;
  shutdownGraceMs: number;
  bodyLimitBytes: number;
  rateLimitPerMin: number;
  /** Mutating requests handled at once (0: no limit); see api/admission.ts. */
  writeConcurrency: number;
  /** Mutating requests that may wait for a slot. */
  writeQueueLength: number;
  /** Longest wait for a slot, ms. */
  writeQueueWaitMs: number;
  /** Mutating-request work started per event-loop iteration, ms (0: no budget); see api/admission.ts `LoopBudget`. */
  loopBudgetMs: number;
  simReplay: boolean;
  simReplaySpeed: number;
  /** Whether the real leader wallet is replayed (COPYTRADE_LEADER_REPLAY), and its speed. */
  copytradeLeaderReplay: boolean;
  copytradeLeaderReplaySpeed: number;
  /** Whether the WebSocket capture's markets follow the capture (SIM_CAPTURE). */
  simCapture: boolean;
  /** Capture seconds per real second of the capture replay (SIM_CAPTURE_SPEED; 1 = real time). */
  simCaptureSpeed: number;
  /** Whether the simulation control endpoints exist (SIM_CONTROL). */
  simControl: boolean;
  /** Whether fills, prints and cash movements are recorded in the trade history (TRADE_HISTORY). */
  tradeHistory: boolean;
  simInitialPusd: string;
  simLiquidityLevels: number;
  simLiquidityRefillMs: number;
  /** Simulated block delay before a withdrawal confirms, ms (SIM_BLOCK_DELAY_MS). */
  simBlockDelayMs: number;
}

/** A configuration value that does not validate; its message names the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseValue(spec: SettingSpec, raw: string): string | number {
  const shown = spec.secret ? '(hidden)' : JSON.stringify(raw);
  const fail = (rule: string): never => {
    throw new ConfigError(`${spec.env} ${rule}; got ${shown}`);
  };
  switch (spec.type) {
    case 'port': {
      if (!/^\d+$/.test(raw) || Number(raw) > 65535) fail('must be an integer port 0-65535');
      return Number(raw);
    }
    case 'int': {
      if (!/^-?\d+$/.test(raw)) fail('must be an integer');
      const n = Number(raw);
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
        fail(`must be between ${spec.min} and ${spec.max}`);
      }
      return n;
    }
    case 'level':
      if (!LEVELS.includes(raw)) fail(`must be one of ${LEVELS.join(', ')}`);
      return raw;
    case 'url':
      if (!/^mongodb(\+srv)?:\/\/\S+$/.test(raw)) fail('must be a mongodb:// or mongodb+srv:// URI');
      try {
        new ConnectionString(raw); // the driver's own parser: hosts, ports, credentials, options
      } catch (err) {
        fail(`is not a valid connection string (${(err as Error).message.replace(raw, '(hidden)')})`);
      }
      return raw;
    case 'onoff':
      if (raw !== 'on' && raw !== 'off') fail('must be on or off');
      return raw;
    case 'writeConcern':
      if (raw === 'majority') return raw;
      if (!/^[1-9]\d{0,1}$/.test(raw)) fail('must be majority or a number of members 1-99');
      return Number(raw);
    case 'decimal':
      if (!/^\d+(\.\d+)?$/.test(raw)) fail('must be a non-negative decimal number');
      return raw;
    case 'path':
    case 'string':
      if (raw.trim() === '') fail('must not be empty');
      return raw;
  }
}

/**
 * Reads and validates every setting of {@link SETTINGS} from `env`.
 * @param env - environment (defaults to `process.env`); empty strings count as unset.
 * @returns the parsed configuration.
 * @throws {ConfigError} naming the first variable whose value does not validate.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const values = {} as Record<SettingName, string | number | undefined>;
  for (const spec of SETTINGS as readonly SettingSpec[]) {
    const raw = env[spec.env];
    const given = raw === undefined || raw === '' ? spec.default : raw;
    values[spec.env as SettingName] = given === undefined ? undefined : parseValue(spec, given);
  }
  return {
    port: values.PORT as number,
    host: values.HOST as string,
    dataDir: values.DATA_DIR as string,
    mongodbUri: values.MONGODB_URI as string | undefined,
    mongodbDb: values.MONGODB_DB as string,
    mongodbWriteConcern: values.MONGODB_WRITE_CONCERN as 'majority' | number,
    mongodbJournal: values.MONGODB_JOURNAL === 'on',
    mongodbAllowStandalone: values.MONGODB_ALLOW_STANDALONE === 'on',
    masterApiKey: values.MASTER_API_KEY as string | undefined,
    partnerId: values.PARTNER_ID as string,
    logLevel: values.LOG_LEVEL as string,
    schedulerPollMs: values.SCHEDULER_POLL_MS as number,
    shutdownGraceMs: values.SHUTDOWN_GRACE_MS as number,
    bodyLimitBytes: values.BODY_LIMIT_BYTES as number,
    rateLimitPerMin: values.RATE_LIMIT_PER_MIN as number,
    writeConcurrency: values.WRITE_CONCURRENCY as number,
    writeQueueLength: values.WRITE_QUEUE_LENGTH as number,
    writeQueueWaitMs: values.WRITE_QUEUE_WAIT_MS as number,
    loopBudgetMs: values.LOOP_BUDGET_MS as number,
    simReplay: values.SIM_REPLAY === 'on',
    simReplaySpeed: values.SIM_REPLAY_SPEED as number,
    copytradeLeaderReplay: values.COPYTRADE_LEADER_REPLAY === 'on',
    copytradeLeaderReplaySpeed: values.COPYTRADE_LEADER_REPLAY_SPEED as number,
    simCapture: values.SIM_CAPTURE === 'on',
    simCaptureSpeed: values.SIM_CAPTURE_SPEED as number,
    simControl: values.SIM_CONTROL === 'on',
    tradeHistory: values.TRADE_HISTORY === 'on',
    simInitialPusd: values.SIM_INITIAL_PUSD as string,
    simLiquidityLevels: values.SIM_MAKER_LEVELS as number,
    simLiquidityRefillMs: values.SIM_MAKER_REFILL_MS as number,
    simBlockDelayMs: values.SIM_BLOCK_DELAY_MS as number,
  };
}
