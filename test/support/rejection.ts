// What a handler call that must fail failed with, for unit tests that call handlers directly.
import assert from 'node:assert/strict';
import type { status as Code } from '@grpc/grpc-js';
import { toGrpcStatus } from '../../src/errors';

/** Resolves with the error `promise` rejects with; fails the test when it resolves. */
export async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof Error, `rejected with a non-error: ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

/** The gRPC status code the adapter would answer for the error `promise` rejects with. */
export async function failureCode(promise: Promise<unknown>): Promise<Code> {
  return toGrpcStatus(await failure(promise)).code;
}
