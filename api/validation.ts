import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { errors } from '../engine/errors.js';
import { cjsDefault } from '../engine/interop.js';
import { namedSchemas } from '../schemas/index.js';

const addFormats = cjsDefault(addFormatsModule);

/** The one AJV instance (draft 2020-12, strict, all errors). Schemas compile once and are cached. */
export const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
addFormats(ajv);
for (const schema of Object.values(namedSchemas)) ajv.addSchema(schema);

const compiled = new WeakMap<object, ValidateFunction>();

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

/** One error as a sentence that names the field and the rule. */
export function describeError(e: ErrorObject): string {
  const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'body';
  switch (e.keyword) {
    case 'additionalProperties':
      return `${where === 'body' ? '' : `${where}: `}unknown property '${(e.params as { additionalProperty: string }).additionalProperty}'`;
    case 'required':
      return `${where === 'body' ? '' : `${where}.`}${(e.params as { missingProperty: string }).missingProperty} is required`;
    case 'enum':
      return `${where} must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((x) => JSON.stringify(x)).join(', ')}`;
    default:
      return `${where} ${e.message ?? 'is invalid'}`;
  }
}

/**
 * Validates `value` against `schema`.
 * @returns the value, typed.
 * @throws {ApiError} 400 `invalid_request` whose message names every offending field and rule.
 */
export function validate<T>(schema: object, value: unknown): T {
  const v = validatorFor(schema);
  if (!v(value)) {
    const seen = new Set<string>();
    const msgs = (v.errors ?? []).map(describeError).filter((m) => !seen.has(m) && seen.add(m));
    throw errors.badRequest(msgs.join('; '));
  }
  return value as T;
}
