// The RuntimeService as the shim serves it: each RPC name mapped to the module that implements
// it. An RPC missing from this table answers UNIMPLEMENTED (see ../grpc/adapter.ts).
import type { RuntimeServiceImpl } from '../cri/types';
import type { ShimContext } from './context';
import { runtimeConfig } from './runtime-config';
import { status } from './status';
import { updateRuntimeConfig } from './update-runtime-config';
import { version } from './version';

export function runtimeService(shim: ShimContext): RuntimeServiceImpl {
  return {
    Version: (req) => version(shim, req),
    Status: (req) => status(shim, req),
    RuntimeConfig: (req) => runtimeConfig(shim, req),
    UpdateRuntimeConfig: (req) => updateRuntimeConfig(shim, req),
  };
}
