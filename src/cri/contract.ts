// The CRI v1 contract (proto/api.proto) as grpc-js wants it, built once per process with the
// same options the generated types in src/generated were made with (see the "gen" script in
// package.json), so the runtime objects and the compile-time types agree. The server and the
// test client both come from here.
//
// Start-up cost: parsing the .proto text and proto-loader's eager reflection (a descriptor of
// every message, made whether anyone asks for it or not) took ~130 ms of each start. So the
// .proto is parsed at build time (scripts/gen-contract.mjs writes cri-descriptor.json), and
// here the two services are laid out from that descriptor alone; each method serialises
// exactly as proto-loader's would (test/unit/cri/contract.test.ts compares them). The message
// types behind the codecs are made on a method's first call: all of them at once (~30 ms of
// reflection), except for the calls a restarted shim answers first (FIRST_CALLS), which get a
// small set of their own so that kubelet's first Version does not wait for the rest. The
// reflection parts nobody on the call path reads (message and enum definitions, a method's
// requestType / responseType / options) are proto-loader's own, made on first access.
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
// The light build: reflection and JSON descriptors, without the .proto parser.
import * as protobuf from 'protobufjs/light';
import type { ProtoGrpcType } from '../generated/api';
import descriptor from '../generated/cri-descriptor.json';

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The package both services live in. */
const PACKAGE = 'runtime.v1';
const SERVICES = ['RuntimeService', 'ImageService'] as const;

/** proto/ sits at the package root; compiled code runs from dist/src/cri. */
export function protoPath(): string {
  for (const up of ['../..', '../../..']) {
    const candidate = path.resolve(__dirname, up, 'proto', 'api.proto');
    try {
      require('node:fs').accessSync(candidate);
      return candidate;
    } catch {
      // try the next layout
    }
  }
  throw new Error(`proto/api.proto not found above ${__dirname}`);
}

/** The build-time descriptor, as protobufjs's JSON form. */
export function criDescriptor(): protobuf.INamespace {
  return descriptor as unknown as protobuf.INamespace;
}

/**
 * The calls a restarted shim answers before its first sync with Docker (app.ts): the types of
 * their messages are made apart from the others, from the part of the descriptor they use.
 */
export const FIRST_CALLS: readonly string[] = ['Version', 'Status', 'RuntimeConfig'];

/** The descriptor's JSON shapes this file reads (protobufjs's INamespace, narrowed). */
interface MethodJson {
  requestType: string;
  responseType: string;
  requestStream?: boolean;
  responseStream?: boolean;
}
interface NestedJson {
  fields?: Record<string, { type: string }>;
  methods?: Record<string, MethodJson>;
  nested?: Record<string, NestedJson>;
}

/** The package's own entries (messages, enums, services) by name. */
function packageEntries(): Record<string, NestedJson> {
  let ns = criDescriptor() as NestedJson;
  for (const part of PACKAGE.split('.')) {
    const next = ns.nested?.[part];
    if (!next) throw new Error(`${PACKAGE} is not a package in the CRI descriptor`);
    ns = next;
  }
  return ns.nested ?? {};
}

/**
 * The descriptor cut down to `typeNames` and every message or enum they lead to. A name a
 * field uses is looked up among the package's entries; one that is not there is a scalar, or an
 * enum nested in the message that uses it, which comes along with that message.
 */
export function descriptorFor(typeNames: readonly string[]): protobuf.INamespace {
  const entries = packageEntries();
  const kept: Record<string, NestedJson> = {};
  const visit = (name: string): void => {
    const entry = entries[name];
    if (entry === undefined || name in kept) return;
    kept[name] = entry;
    for (const field of Object.values(entry.fields ?? {})) visit(field.type);
  };
  typeNames.forEach(visit);
  // The same namespaces around them, with their options.
  const levels: NestedJson[] = [criDescriptor() as NestedJson];
  for (const part of PACKAGE.split('.')) levels.push(levels.at(-1)!.nested![part]!);
  let ns: NestedJson = { ...levels.pop()!, nested: kept };
  for (const part of PACKAGE.split('.').reverse()) ns = { ...levels.pop()!, nested: { [part]: ns } };
  return ns as unknown as protobuf.INamespace;
}

/** The message types made so far: the first calls' own, and all of them. */
const madeTypes: { first?: protobuf.Root; all?: protobuf.Root } = {};

/** Which sets of message types have been made (for the tests of what start-up makes). */
export function typesMade(): { first: boolean; all: boolean } {
  return { first: madeTypes.first !== undefined, all: madeTypes.all !== undefined };
}

/** The request and response types of FIRST_CALLS. */
function firstCallTypes(): string[] {
  return FIRST_CALLS.flatMap((call) => {
    const method = packageEntries()[SERVICES[0]]?.methods?.[call];
    if (!method) throw new Error(`${call} is not a method of ${SERVICES[0]}`);
    return [method.requestType, method.responseType];
  });
}

function messageType(name: string, first: boolean): protobuf.Type {
  const root = first
    ? (madeTypes.first ??= protobuf.Root.fromJSON(descriptorFor(firstCallTypes())))
    : (madeTypes.all ??= protobuf.Root.fromJSON(criDescriptor()));
  return root.lookupType(`${PACKAGE}.${name}`);
}

let loaded: ProtoGrpcType | undefined;

export function criContract(): ProtoGrpcType {
  loaded ??= buildContract();
  return loaded;
}

function buildContract(): ProtoGrpcType {
  const entries = packageEntries();
  let reflection: protoLoader.PackageDefinition | undefined;
  const fullDefinition = (): protoLoader.PackageDefinition =>
    (reflection ??= (require('@grpc/proto-loader') as typeof protoLoader).fromJSON(criDescriptor(), LOADER_OPTIONS));

  const definition: protoLoader.PackageDefinition = {};
  for (const name of SERVICES) {
    const fullName = `${PACKAGE}.${name}`;
    const methods = entries[name]?.methods;
    if (!methods) throw new Error(`${fullName} is not a service in the CRI descriptor`);
    definition[fullName] = serviceDefinition(methods, fullName, name === SERVICES[0], fullDefinition);
  }
  const contract = grpc.loadPackageDefinition(definition);

  const pkg = PACKAGE.split('.').reduce((ns, part) => ns[part] as grpc.GrpcObject, contract);
  for (const [name, entry] of Object.entries(entries)) {
    if (entry.methods) continue;
    Object.defineProperty(pkg, name, {
      enumerable: true,
      configurable: true,
      get: () => fullDefinition()[`${PACKAGE}.${name}`],
    });
  }
  return contract as unknown as ProtoGrpcType;
}

function serviceDefinition(
  methods: Record<string, MethodJson>,
  fullName: string,
  isRuntimeService: boolean,
  fullDefinition: () => protoLoader.PackageDefinition,
): protoLoader.ServiceDefinition {
  const def: protoLoader.ServiceDefinition = {};
  for (const [name, method] of Object.entries(methods)) {
    const first = isRuntimeService && FIRST_CALLS.includes(name);
    const reflected = (): protoLoader.MethodDefinition<object, object> => (fullDefinition()[fullName] as protoLoader.ServiceDefinition)[name]!;
    const m = {
      path: `/${fullName}/${name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(() => messageType(method.requestType, first)),
      requestDeserialize: deserializer(() => messageType(method.requestType, first)),
      responseSerialize: serializer(() => messageType(method.responseType, first)),
      responseDeserialize: deserializer(() => messageType(method.responseType, first)),
      // grpc-js also names a client method this way (Version and version).
      originalName: name.charAt(0).toLowerCase() + name.slice(1),
    };
    // Not enumerable: grpc-js copies a method's enumerable fields onto the client's method,
    // which would make them all at once.
    for (const key of ['requestType', 'responseType', 'options'] as const) {
      Object.defineProperty(m, key, { enumerable: false, configurable: true, get: () => reflected()[key] });
    }
    def[name] = m as protoLoader.MethodDefinition<object, object>;
  }
  return def;
}

/**
 * Answers whose encoding is kept with them once made (null until then): answers given again
 * and again unchanged (../shim/support/list-answers.ts), so their bytes are made once. Such an
 * answer must not change after it is first given. grpc-js copies the bytes into each frame.
 */
const keptEncodings = new WeakMap<object, Buffer | null>();

/** Keeps `answer`'s encoding once made, for as long as the answer lives; it must not change any more. */
export function keepEncoding(answer: object): void {
  if (!keptEncodings.has(answer)) keptEncodings.set(answer, null);
}

/**
 * `answer`, to be sent as `bytes`: its encoding, made by its handler (ExecSync writes its
 * output into the encoding as it arrives, so the answer is never copied whole by an encoder).
 */
export function withEncoding<T extends object>(answer: T, bytes: Buffer): T {
  keptEncodings.set(answer, bytes);
  return answer;
}

/** Encodes as `typeOf()` (looked up on the first call) describes. */
function serializer(typeOf: () => protobuf.Type): (value: object) => Buffer {
  let type: protobuf.Type | undefined;
  return (value) => {
    const kept = keptEncodings.get(value);
    if (kept) return kept;
    type ??= typeOf();
    // fromObject would quietly turn an array into an empty message.
    if (Array.isArray(value)) throw new Error(`cannot serialize an array as ${type.name}`);
    const bytes = type.encode(type.fromObject(value as Record<string, unknown>)).finish();
    const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (kept === null) keptEncodings.set(value, buffer);
    return buffer;
  };
}

function deserializer(typeOf: () => protobuf.Type): (bytes: Buffer) => object {
  let type: protobuf.Type | undefined;
  return (bytes) => {
    type ??= typeOf();
    return type.toObject(type.decode(bytes), LOADER_OPTIONS);
  };
}

export type * from './types';
