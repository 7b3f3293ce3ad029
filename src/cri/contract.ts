// Loads the CRI v1 contract (proto/api.proto) once, with the same options the generated
// types in src/generated were made with (see the "gen" script in package.json), so the
// runtime objects and the compile-time types agree. The server and the test client both
// come from here.
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../generated/api';

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

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

let loaded: ProtoGrpcType | undefined;

export function criContract(): ProtoGrpcType {
  if (!loaded) {
    const definition = protoLoader.loadSync(protoPath(), LOADER_OPTIONS);
    loaded = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return loaded;
}

export type * from './types';
