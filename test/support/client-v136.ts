// A CRI client speaking k8s.io/cri-api v0.36.1 (test/fixtures/cri-api-v0.36.1.proto, loaded
// with @grpc/proto-loader at test time), as a v1.36 kubelet or critest v1.36 does: env values as
// strings, the Signal enum's names without the SIGNAL_ prefix of v1.37, no v1.37 fields or RPCs.
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LOADER_OPTIONS } from '../../src/cri/contract';
import { promised } from './client';

/** The v1.36 proto; compiled tests run from dist/test/support. */
export const CRI_V136_PROTO = path.resolve(__dirname, '../../../test/fixtures/cri-api-v0.36.1.proto');

/** The v1.36 contract, with the options the shim's own contract is loaded with. */
export function criV136Definition(): protoLoader.PackageDefinition {
  return protoLoader.loadSync(CRI_V136_PROTO, LOADER_OPTIONS);
}

/** A call of the v1.36 client: the request as that proto's JSON form, the answer decoded by it. */
export type V136Call = (req: object, options?: grpc.CallOptions) => Promise<Record<string, unknown>>;

export interface CriV136Client {
  runtime: Record<string, V136Call>;
  close(): void;
}

export function criV136Client(address: string): CriV136Client {
  const definition = criV136Definition();
  const service = definition['runtime.v1.RuntimeService'] as grpc.ServiceDefinition;
  const Client = grpc.makeGenericClientConstructor(service, 'RuntimeService');
  const client = new Client(address, grpc.credentials.createInsecure(), { 'grpc.enable_channelz': 0, 'grpc.enable_retries': 0 });
  return { runtime: promised<Record<string, V136Call>>(client, service), close: () => client.close() };
}
