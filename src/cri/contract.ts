// The CRI v1 contract (proto/api.proto) as grpc-js wants it, built once per process with the
// same options the generated types in src/generated were made with (see the "gen" script in
// package.json), so the runtime objects and the compile-time types agree. The server and the
// test client both come from here.
//
// Start-up cost: parsing the .proto text and proto-loader's eager reflection (a descriptor of
// every message, made whether anyone asks for it or not) took ~130 ms of each start. So the
// .proto is parsed at build time (scripts/gen-contract.mjs writes cri-descriptor.json), and
// here only the two services are built; each method serialises exactly as proto-loader's
// would (test/unit/cri-contract.test.ts compares them). The reflection parts nobody on the
// call path reads (message and enum definitions, a method's requestType / responseType /
// options) are proto-loader's own, made on first access.
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

let loaded: ProtoGrpcType | undefined;

export function criContract(): ProtoGrpcType {
  loaded ??= buildContract();
  return loaded;
}

function buildContract(): ProtoGrpcType {
  const root = protobuf.Root.fromJSON(criDescriptor());
  root.resolveAll();
  let reflection: protoLoader.PackageDefinition | undefined;
  const fullDefinition = (): protoLoader.PackageDefinition =>
    (reflection ??= (require('@grpc/proto-loader') as typeof protoLoader).fromJSON(criDescriptor(), LOADER_OPTIONS));

  const definition: protoLoader.PackageDefinition = {};
  for (const name of SERVICES) {
    const fullName = `${PACKAGE}.${name}`;
    definition[fullName] = serviceDefinition(root.lookupService(fullName), fullName, fullDefinition);
  }
  const contract = grpc.loadPackageDefinition(definition);

  const pkg = PACKAGE.split('.').reduce((ns, part) => ns[part] as grpc.GrpcObject, contract);
  const nested = root.lookup(PACKAGE);
  if (!(nested instanceof protobuf.Namespace)) throw new Error(`${PACKAGE} is not a package in the CRI descriptor`);
  for (const [name, obj] of Object.entries(nested.nested ?? {})) {
    if (obj instanceof protobuf.Service) continue;
    Object.defineProperty(pkg, name, {
      enumerable: true,
      configurable: true,
      get: () => fullDefinition()[`${PACKAGE}.${name}`],
    });
  }
  return contract as unknown as ProtoGrpcType;
}

function serviceDefinition(
  service: protobuf.Service,
  fullName: string,
  fullDefinition: () => protoLoader.PackageDefinition,
): protoLoader.ServiceDefinition {
  const def: protoLoader.ServiceDefinition = {};
  for (const method of service.methodsArray) {
    const request = method.resolvedRequestType;
    const response = method.resolvedResponseType;
    if (!request || !response) throw new Error(`${fullName}.${method.name}: unresolved message types`);
    const reflected = (): protoLoader.MethodDefinition<object, object> =>
      (fullDefinition()[fullName] as protoLoader.ServiceDefinition)[method.name]!;
    const m = {
      path: `/${fullName}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(request),
      requestDeserialize: deserializer(request),
      responseSerialize: serializer(response),
      responseDeserialize: deserializer(response),
      // grpc-js also names a client method this way (Version and version).
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
    // Not enumerable: grpc-js copies a method's enumerable fields onto the client's method,
    // which would make them all at once.
    for (const key of ['requestType', 'responseType', 'options'] as const) {
      Object.defineProperty(m, key, { enumerable: false, configurable: true, get: () => reflected()[key] });
    }
    def[method.name] = m as protoLoader.MethodDefinition<object, object>;
  }
  return def;
}

function serializer(type: protobuf.Type): (value: object) => Buffer {
  return (value) => {
    // fromObject would quietly turn an array into an empty message.
    if (Array.isArray(value)) throw new Error(`cannot serialize an array as ${type.name}`);
    const bytes = type.encode(type.fromObject(value as Record<string, unknown>)).finish();
    return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer(type: protobuf.Type): (bytes: Buffer) => object {
  return (bytes) => type.toObject(type.decode(bytes), LOADER_OPTIONS);
}

export type * from './types';
