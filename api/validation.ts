import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ApiError } from './errors.js';
import { cjsDefault } from '../engine/interop.js';
import { PATTERN_TEXT } from '../schemas/common.js';
import { namedSchemas } from '../schemas/index.js';

const addFormats = cjsDefault(addFormatsModule);

/** The one AJV instance (draft 2020-12, strict, all errors). Schemas compile once and are cached. */
export const ajv = new Ajv2020({
  strict: true,
  // The per-type rules (`if`/`then`) name fields declared at the top level, not inside `then`.
  strictRequired: false,
  allErrors: true,
  allowUnionTypes: true,
});
addFormats(ajv);
for (const schema of Object.values(namedSchemas)) ajv.addSchema(schema);

const compiled = new WeakMap<object, ValidateFunction>();
// Compile every named schema now: a schema error fails start-up, never a request.
for (const schema of Object.values(namedSchemas)) validatorFor(schema);

/** Validator for `schema` (a named schema by its `$id`), compiled on first use. */
export function validatorFor(schema: object): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    const id = (schema as { $id?: string }).$id;
    v = (id && ajv.getSchema(id)) || ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

/** The rule an error came from, when it sits under a described `allOf` branch (the per-type rules). */
function ruleOf(root: object, schemaPath: string): string | null {
  const m = /^#\/allOf\/(\d+)\/then/.exec(schemaPath);
  if (!m) return null;
  const branch = (root as { allOf?: Array<{ description?: string }> }).allOf?.[Number(m[1])];
  return branch?.description ?? null;
}

function fieldOf(instancePath: string): string {
  return instancePath ? instancePath.slice(1).replace(/\//g, '.') : 'body';
}

/** One error as a sentence that names the field and the rule. */
export function describeError(e: ErrorObject, root: object = {}): string {
  const where = fieldOf(e.instancePath);
  const rule = ruleOf(root, e.schemaPath);
  const forRule = rule ? ` for ${rule}` : '';
  switch (e.keyword) {
    case 'additionalProperties': {
      const name = (e.params as { additionalProperty: string }).additionalProperty;
      return `${where === 'body' ? '' : `${where}: `}unknown property '${name}'`;
    }
    case 'required': {
      const name = (e.params as { missingProperty: string }).missingProperty;
      return `${where === 'body' ? '' : `${where}.`}${name} is required${forRule}`;
    }
    case 'enum': {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.map((x) => JSON.stringify(x));
      return `${where} must be one of ${allowed.join(', ')}${forRule}`;
    }
    case 'maximum':
      return `${where} must be at most ${(e.params as { limit: number }).limit}${forRule}`;
    case 'minimum':
      return `${where} must be at least ${(e.params as { limit: number }).limit}${forRule}`;
    case 'exclusiveMaximum':
      return `${where} must be less than ${(e.params as { limit: number }).limit}${forRule}`;
    case 'exclusiveMinimum':
      return `${where} must be greater than ${(e.params as { limit: number }).limit}${forRule}`;
    case 'pattern': {
      const text = PATTERN_TEXT[(e.params as { pattern: string }).pattern];
      return text ? `${where} ${text}${forRule}` : `${where} ${e.message ?? 'is invalid'}${forRule}`;
    }
    case 'const':
      return `${where} must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}${forRule}`;
    default:
      return `${where} ${e.message ?? 'is invalid'}${forRule}`;
  }
}

/** The fields a `oneOf` of `{required: [...]}` branches chooses between, or null for another `oneOf`. */
function oneOfFields(root: object, schemaPath: string): string[] | null {
  let node: unknown = root;
  for (const key of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean))
    node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
  if (!Array.isArray(node)) return null;
  const names = node.map((b: { required?: unknown }) =>
    Array.isArray(b?.required) && b.required.length === 1 ? String(b.required[0]) : null,
  );
  return names.every((n) => n !== null) ? (names as string[]) : null;
}

/**
 * AJV's errors as sentences: `if` wrappers are dropped, the alternatives of an `anyOf` of
 * `required`s become one "a or b is required" sentence, and a `oneOf` of single `required`s (neither
 * or both fields sent) one "send exactly one of a and b" sentence.
 */
export function describeErrors(errs: ErrorObject[], root: object): string[] {
  const out: string[] = [];
  const grouped = new Set<ErrorObject>();
  for (const e of errs) {
    if (e.keyword !== 'oneOf') continue;
    const names = oneOfFields(root, e.schemaPath);
    if (!names) continue;
    const base = fieldOf(e.instancePath);
    out.push(`send exactly one of ${names.map((n) => (base === 'body' ? n : `${base}.${n}`)).join(' and ')}`);
    errs.filter((x) => x.schemaPath.startsWith(`${e.schemaPath}/`)).forEach((x) => grouped.add(x));
    grouped.add(e);
  }
  for (const e of errs) {
    if (e.keyword !== 'anyOf') continue;
    const inner = errs.filter((x) => x !== e && x.schemaPath.startsWith(`${e.schemaPath}/`));
    if (inner.length && inner.every((x) => x.keyword === 'required')) {
      const names = inner.map((x) => {
        const base = fieldOf(x.instancePath);
        return `${base === 'body' ? '' : `${base}.`}${(x.params as { missingProperty: string }).missingProperty}`;
      });
      const rule = ruleOf(root, e.schemaPath);
      out.push(`${[...new Set(names)].join(' or ')} is required${rule ? ` for ${rule}` : ''}`);
      inner.forEach((x) => grouped.add(x));
      grouped.add(e);
    }
  }
  for (const e of errs) {
    if (grouped.has(e) || e.keyword === 'if') continue;
    out.push(describeError(e, root));
  }
  return [...new Set(out)];
}

/**
 * Validates `value` against `schema`.
 * @returns the value, typed.
 * @throws {ApiError} 400 `invalid_request` whose message names every offending field and rule.
 */
export function validate<T>(schema: object, value: unknown): T {
  const v = validatorFor(schema);
  if (!v(value)) throw new ApiError(400, 'invalid_request', describeErrors(v.errors ?? [], schema).join('; '));
  return value as T;
}

/** Query and path parameters: strings coerced to the declared types (`limit=5` → 5). */
const paramAjv = new Ajv2020({ strict: true, allErrors: true, coerceTypes: true, allowUnionTypes: true });
addFormats(paramAjv);
const paramValidators = new WeakMap<object, ValidateFunction>();

/** An integer parameter as sent: decimal digits, optionally negative (`0x10`, `1e2`, `+5`, `5.0` are not). */
const DECIMAL_INTEGER = /^-?[0-9]{1,30}$/;

/**
 * Validates request parameters (`where` = `query parameter` or `path parameter`) against a route's
 * declared properties. A parameter the route does not declare is refused: a misspelt cursor or
 * filter would otherwise be ignored and the client served page 1, or every row, again. An `integer`
 * parameter must be written in decimal digits (AJV's coercion alone would take `0x10`, `1e2`, `+5`
 * or `5.0`).
 * @returns the coerced values.
 * @throws {ApiError} 400 naming the parameter and the rule (an unknown one: `unknown query parameter
 *   "<name>"` and the names the route takes); its `error` is `errorStrings[param]` when the route
 *   names one (for example `invalid window`), else `invalid_request`.
 */
export function validateParams(
  spec: { properties: Record<string, object>; required?: string[]; errorStrings?: Record<string, string> },
  values: Record<string, unknown>,
  where: string,
): Record<string, unknown> {
  let v = paramValidators.get(spec);
  if (!v) {
    v = paramAjv.compile({
      type: 'object',
      properties: spec.properties,
      required: spec.required ?? [],
      additionalProperties: true,
    });
    paramValidators.set(spec, v);
  }
  // path parameters are the route's own; query names are the client's
  const unknown =
    where === 'query parameter' ? Object.keys(values).filter((k) => !Object.hasOwn(spec.properties, k)) : [];
  if (unknown.length) {
    // an API key sent as a parameter name is not echoed (nor logged with the message)
    const names = unknown
      .map((k) => JSON.stringify(k.slice(0, 40).replace(/pts_[\w-]*/g, 'pts_[redacted]')))
      .join(', ');
    const known = Object.keys(spec.properties);
    throw new ApiError(
      400,
      'invalid_request',
      `unknown ${where}${unknown.length > 1 ? 's' : ''} ${names}: ` +
        (known.length ? `this endpoint takes ${known.join(', ')}` : `this endpoint takes none`),
    );
  }
  for (const [name, prop] of Object.entries(spec.properties)) {
    const raw = values[name];
    if (raw === undefined || (prop as { type?: unknown }).type !== 'integer') continue;
    if (typeof raw === 'string' && DECIMAL_INTEGER.test(raw)) continue;
    const shown = typeof raw === 'string' ? JSON.stringify(raw.slice(0, 40)) : 'more than one value';
    throw new ApiError(
      400,
      spec.errorStrings?.[name] ?? 'invalid_request',
      `${where} ${name} must be an integer in decimal digits; received ${shown}`,
    );
  }
  const copy = { ...values };
  if (v(copy)) return copy;
  const errs = v.errors ?? [];
  const msgs = describeErrors(errs, {}).map((m) => `${where} ${m}`);
  const param = errs
    .map((e) =>
      e.keyword === 'required'
        ? (e.params as { missingProperty: string }).missingProperty
        : e.instancePath.slice(1).split('/')[0]!,
    )
    .find((p) => spec.errorStrings?.[p]);
  const error = param ? spec.errorStrings![param]! : 'invalid_request';
  throw new ApiError(400, error, msgs.join('; '));
}
