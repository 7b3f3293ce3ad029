// The contract built from the build-time descriptor (src/cri/contract.ts) must be the contract
// proto-loader makes from proto/api.proto itself: the same services, paths and stream kinds,
// and byte-for-byte the same encoding of every request and response, filled in completely.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as protobuf from 'protobufjs';
import { criContract, criDescriptor, descriptorFor, LOADER_OPTIONS, protoPath, type typesMade } from '../../../src/cri/contract';

const fromProto = protoLoader.loadSync(protoPath(), LOADER_OPTIONS);
const SERVICE_NAMES = ['runtime.v1.RuntimeService', 'runtime.v1.ImageService'] as const;

type Service = { service: grpc.ServiceDefinition };
function builtService(fullName: string): grpc.ServiceDefinition {
  const v1 = criContract().runtime.v1 as unknown as Record<string, Service>;
  return v1[fullName.split('.').pop()!]!.service;
}
function referenceService(fullName: string): protoLoader.ServiceDefinition {
  return fromProto[fullName] as protoLoader.ServiceDefinition;
}

/** A value for every field of `type`, nested messages down to `depth`, two items per list. */
function filled(type: protobuf.Type, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    field.resolve();
    const one = (): unknown => scalar(field, depth);
    if (field.map) out[field.name] = { k1: one(), k2: one() };
    else if (field.repeated) out[field.name] = [one(), one()];
    else out[field.name] = one();
  }
  return out;
}

function scalar(field: protobuf.Field, depth: number): unknown {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Enum) return Object.keys(resolved.values).at(-1);
  if (resolved instanceof protobuf.Type) return depth > 0 ? filled(resolved, depth - 1) : {};
  switch (field.type) {
    case 'string':
      return `s${field.id}`;
    case 'bool':
      return true;
    case 'bytes':
      return Buffer.from([field.id, 0, 255]);
    case 'double':
    case 'float':
      return 1.5;
    case 'int64':
    case 'sint64':
    case 'sfixed64':
      return '-9007199254740993';
    case 'uint64':
    case 'fixed64':
      return '18446744073709551615';
    case 'int32':
    case 'sint32':
    case 'sfixed32':
      return -field.id;
    default:
      return field.id + 300;
  }
}

describe('the CRI contract from the build-time descriptor', () => {
  it('builds the services without proto-loader\'s reflection (the start-up cost it avoids)', () => {
    // A fresh process: this one has loaded proto-loader for the comparisons below.
    const script = `
      const { criContract } = require(${JSON.stringify(require.resolve('../../../src/cri/contract'))});
      const v1 = criContract().runtime.v1;
      new v1.RuntimeService('unix:///nonexistent', require('@grpc/grpc-js').credentials.createInsecure()).close();
      const before = Object.keys(require.cache).some((f) => f.includes('@grpc/proto-loader'));
      void v1.VersionRequest.type;
      const after = Object.keys(require.cache).some((f) => f.includes('@grpc/proto-loader'));
      process.stdout.write(JSON.stringify({ before, after }));`;
    const out = execFileSync(process.execPath, ['-e', script], { cwd: path.resolve(__dirname, '../../../..'), encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), { before: false, after: true });
  });

  it('makes only the first calls\' message types for them, and all the others on the first other call', () => {
    // A fresh process, where nothing has made any types yet.
    const script = `
      const { criContract, typesMade } = require(${JSON.stringify(require.resolve('../../../src/cri/contract'))});
      const runtime = criContract().runtime.v1.RuntimeService.service;
      const steps = [typesMade()];
      const version = runtime.Version.responseSerialize({ version: '0.1.0', runtimeName: 'docker', runtimeVersion: '20.10.24', runtimeApiVersion: '1.41.0' });
      runtime.Status.responseDeserialize(runtime.Status.responseSerialize({ status: { conditions: [{ type: 'RuntimeReady', status: true }] } }));
      runtime.RuntimeConfig.responseSerialize({ linux: { cgroupDriver: 'CGROUPFS' } });
      steps.push(typesMade());
      runtime.ListContainers.requestDeserialize(Buffer.alloc(0));
      steps.push(typesMade());
      process.stdout.write(JSON.stringify({ steps, version: version.length }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: path.resolve(__dirname, '../../../..'), encoding: 'utf8' })) as {
      steps: Array<ReturnType<typeof typesMade>>;
      version: number;
    };
    assert.deepEqual(out.steps, [
      { first: false, all: false },
      { first: true, all: false },
      { first: true, all: true },
    ]);
    assert.ok(out.version > 20, `a Version answer of ${out.version} bytes`);
  });

  it('cuts the descriptor down to what the named messages lead to, nested enums and package options included', () => {
    const cut = descriptorFor(['RunPodSandboxRequest']) as { nested: { runtime: { nested: { v1: { options?: object; nested: Record<string, { nested?: object }> } } } } };
    const v1 = cut.nested.runtime.nested.v1;
    assert.deepEqual(v1.options, (criDescriptor() as typeof cut).nested.runtime.nested.v1.options);
    for (const name of ['RunPodSandboxRequest', 'PodSandboxConfig', 'LinuxPodSandboxConfig', 'LinuxSandboxSecurityContext', 'SecurityProfile', 'NamespaceOption', 'NamespaceMode']) {
      assert.ok(name in v1.nested, `${name} kept`);
    }
    assert.ok(v1.nested.SecurityProfile!.nested && 'ProfileType' in v1.nested.SecurityProfile!.nested);
    for (const name of ['ContainerConfig', 'VersionResponse', 'RuntimeService', 'ImageService']) assert.ok(!(name in v1.nested), `${name} left out`);
    // What is kept resolves on its own.
    const root = protobuf.Root.fromJSON(cut as protobuf.INamespace);
    assert.ok(root.lookupType('runtime.v1.RunPodSandboxRequest').encode({}).finish());
  });

  it('has the services, methods, paths and stream kinds proto-loader makes from the .proto', () => {
    for (const fullName of SERVICE_NAMES) {
      const built = builtService(fullName);
      const reference = referenceService(fullName);
      assert.deepEqual(Object.keys(built).sort(), Object.keys(reference).sort(), fullName);
      for (const [name, ref] of Object.entries(reference)) {
        const m = built[name]!;
        assert.equal(m.path, ref.path, name);
        assert.equal(m.requestStream, ref.requestStream, name);
        assert.equal(m.responseStream, ref.responseStream, name);
        assert.equal(m.originalName, ref.originalName, name);
      }
    }
    assert.equal(Object.keys(builtService('runtime.v1.RuntimeService')).length + Object.keys(builtService('runtime.v1.ImageService')).length, 43);
  });

  it('encodes and decodes every request and response exactly as proto-loader does', () => {
    const root = protobuf.Root.fromJSON(criDescriptor());
    root.resolveAll();
    let checked = 0;
    for (const fullName of SERVICE_NAMES) {
      const built = builtService(fullName);
      for (const [name, ref] of Object.entries(referenceService(fullName))) {
        const method = root.lookupService(fullName).methods[name]!;
        method.resolve();
        const m = built[name]!;
        for (const side of ['request', 'response'] as const) {
          const type = side === 'request' ? method.resolvedRequestType! : method.resolvedResponseType!;
          for (const value of [{}, filled(type, 3)]) {
            const serialize = side === 'request' ? m.requestSerialize : m.responseSerialize;
            const deserialize = side === 'request' ? m.requestDeserialize : m.responseDeserialize;
            const bytes = serialize(value);
            assert.ok(Buffer.isBuffer(bytes), `${name} ${side}: a Buffer`);
            const refBytes = (side === 'request' ? ref.requestSerialize : ref.responseSerialize)(value);
            assert.deepEqual(bytes, Buffer.from(refBytes), `${name} ${side} bytes`);
            assert.deepEqual(deserialize(bytes), (side === 'request' ? ref.requestDeserialize : ref.responseDeserialize)(bytes), `${name} ${side} decoded`);
            checked++;
          }
        }
      }
    }
    assert.equal(checked, 43 * 2 * 2);
  });

  it('fills in what the encodings are checked with (the check would be empty otherwise)', () => {
    const root = protobuf.Root.fromJSON(criDescriptor());
    root.resolveAll();
    const req = filled(root.lookupType('runtime.v1.RunPodSandboxRequest'), 3);
    const bytes = builtService('runtime.v1.RuntimeService').RunPodSandbox!.requestSerialize(req);
    assert.ok(bytes.length > 300, `only ${bytes.length} bytes`);
    const back = builtService('runtime.v1.RuntimeService').RunPodSandbox!.requestDeserialize(bytes) as {
      config: { linux: { securityContext: { supplementalGroups: string[] } }; labels: Record<string, string> };
    };
    assert.deepEqual(back.config.linux.securityContext.supplementalGroups, ['-9007199254740993', '-9007199254740993']);
    assert.deepEqual(Object.keys(back.config.labels), ['k1', 'k2']);
  });

  it('refuses an array where a message belongs, as proto-loader does', () => {
    assert.throws(() => builtService('runtime.v1.RuntimeService').Version!.requestSerialize([]), /array/);
  });

  it('gives the same message and enum definitions and method reflection, made on first use', () => {
    const v1 = criContract().runtime.v1 as unknown as Record<string, unknown>;
    const referenceNames = Object.keys(fromProto)
      .filter((k) => k.startsWith('runtime.v1.'))
      .map((k) => k.slice('runtime.v1.'.length));
    assert.deepEqual(Object.keys(v1).sort(), referenceNames.sort());
    const container = v1.Container as protoLoader.MessageTypeDefinition<object, object>;
    assert.equal(container.format, 'Protocol Buffer 3 DescriptorProto');
    assert.deepEqual(container.type, (fromProto['runtime.v1.Container'] as protoLoader.MessageTypeDefinition<object, object>).type);
    assert.equal((v1.ContainerState as protoLoader.EnumTypeDefinition).format, 'Protocol Buffer 3 EnumDescriptorProto');
    const version = builtService('runtime.v1.RuntimeService').Version as unknown as protoLoader.MethodDefinition<object, object>;
    const refVersion = referenceService('runtime.v1.RuntimeService').Version!;
    assert.deepEqual(version.requestType.type, refVersion.requestType.type);
    assert.deepEqual(version.options, refVersion.options);
  });
});
