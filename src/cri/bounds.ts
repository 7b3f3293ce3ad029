// Size bounds on the fields of a CRI request, checked for every call before any handler runs,
// so a hostile or broken client cannot make the shim do work (or echo megabytes back) with
// values no kubelet sends. The bounds are Kubernetes' own where it has them; where it has none
// (IDs) they are far above what any real client sends.
import { InvalidArgumentError } from '../errors';
import { quote } from '../util/quote';

export const REQUEST_BOUNDS = {
  /** Container and sandbox IDs are 64 hex characters; room for names and UUIDs that some clients send. */
  id: 256,
  /** Pod and container names: a DNS subdomain. */
  name: 253,
  /** A namespace is a DNS label. */
  namespace: 63,
  /** Pod UIDs are UUIDs; room for clients that use other strings. */
  uid: 253,
  /** A label key: an optional DNS-subdomain prefix, '/', and a 63-character name. */
  labelKey: 253 + 1 + 63,
  /** The longest value kubelet itself puts in a label is a pod name (a DNS subdomain). */
  labelValue: 253,
  /** Kubernetes' limit on the total size of an object's annotations (keys and values). */
  annotationsTotal: 256 * 1024,
} as const;

/** Fields holding an object ID, by their (camelCase) name as the decoded request has it. */
function isIdField(key: string): boolean {
  return key === 'id' || key.endsWith('Id');
}

function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function tooLong(field: string, value: string, limit: number): InvalidArgumentError {
  return new InvalidArgumentError(`${field}: ${quote(value)} is longer than ${limit} characters`);
}

function checkString(field: string, value: string, limit: number): void {
  if (value.length > limit) throw tooLong(field, value, limit);
}

function checkLabels(field: string, labels: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(labels)) {
    if (key.length > REQUEST_BOUNDS.labelKey) throw tooLong(`${field} key`, key, REQUEST_BOUNDS.labelKey);
    if (typeof value === 'string') checkString(`${field}[${quote(key)}]`, value, REQUEST_BOUNDS.labelValue);
  }
}

function checkAnnotations(field: string, annotations: Record<string, unknown>): void {
  let total = 0;
  for (const [key, value] of Object.entries(annotations)) {
    if (key.length > REQUEST_BOUNDS.labelKey) throw tooLong(`${field} key`, key, REQUEST_BOUNDS.labelKey);
    total += key.length + (typeof value === 'string' ? value.length : 0);
  }
  if (total > REQUEST_BOUNDS.annotationsTotal) {
    throw new InvalidArgumentError(`${field}: ${total} characters in all; at most ${REQUEST_BOUNDS.annotationsTotal} are allowed`);
  }
}

function checkMetadata(field: string, meta: Record<string, unknown>): void {
  const limits: Record<string, number> = { name: REQUEST_BOUNDS.name, namespace: REQUEST_BOUNDS.namespace, uid: REQUEST_BOUNDS.uid };
  for (const [key, limit] of Object.entries(limits)) {
    const value = meta[key];
    if (typeof value === 'string') checkString(`${field}.${key}`, value, limit);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);
}

function fieldName(parent: string, key: string): string {
  return parent === '' ? snakeCase(key) : `${parent}.${snakeCase(key)}`;
}

function walk(value: unknown, field: string): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, `${field}[${i}]`));
    return;
  }
  if (!isRecord(value)) return;
  for (const [key, child] of Object.entries(value)) {
    // Most fields are scalars that are not IDs: their name is never needed, so never built.
    if (typeof child !== 'object' || child === null) {
      if (typeof child === 'string' && isIdField(key)) checkString(fieldName(field, key), child, REQUEST_BOUNDS.id);
      continue;
    }
    const name = fieldName(field, key);
    if (isRecord(child)) {
      if (key === 'labels' || key === 'labelSelector') checkLabels(name, child);
      else if (key === 'annotations') checkAnnotations(name, child);
      else {
        if (key === 'metadata') checkMetadata(name, child);
        walk(child, name);
      }
    } else if (Array.isArray(child)) {
      walk(child, name);
    }
  }
}

/** Throws InvalidArgumentError naming the first field over its bound. */
export function checkRequestBounds(request: unknown): void {
  walk(request, '');
}
