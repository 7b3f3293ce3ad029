// The base the Docker client's decorators and the tests' fake stand on, so that each writes only
// the calls it changes. `fillCalls` makes a method for every call of DOCKER_CALLS a class does
// not write itself, once, on its prototype at load: a call costs what a written-out delegation
// costs (the arguments are passed on as they came, which V8 forwards without an array once the
// method is optimised), never a Proxy's trap.
import { DOCKER_CALLS, type DockerCall, type DockerClient } from './client';

/** Any call of the client, taken with whatever arguments it came with. */
export type AnyCall = (...args: never[]) => unknown;

/** Gives the prototype of `cls` a method made by `make` for each call it does not define itself. */
export function fillCalls<T extends DockerClient>(cls: { readonly prototype: T }, make: (call: DockerCall) => (this: T, ...args: never[]) => unknown): void {
  const proto: object = cls.prototype;
  for (const call of DOCKER_CALLS) {
    if (Object.hasOwn(proto, call)) continue;
    Object.defineProperty(proto, call, { value: make(call), writable: true, configurable: true });
  }
}

/**
 * A DockerClient by declaration; its subclasses write some calls (checked against the
 * interface as overrides) and `fillCalls` the rest.
 */
export interface DockerClientBase extends DockerClient {}
export abstract class DockerClientBase {
  constructor(readonly endpoint: string) {}
}

/** Passes every call to `docker`: a decorator extends it and overrides what it changes. */
export class PassThroughClient extends DockerClientBase {
  static {
    fillCalls(this, (call) =>
      function (this: PassThroughClient, ...args: never[]): unknown {
        return (this.docker[call] as AnyCall)(...args);
      },
    );
  }

  constructor(protected readonly docker: DockerClient) {
    super(docker.endpoint);
  }
}
