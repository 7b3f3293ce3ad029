// The proto served (CRI v1.37: k8s.io/cri-api after v0.37.0-beta.0) and the one a v1.36 kubelet
// or critest speaks (test/fixtures/cri-api-v0.36.1.proto) are one wire form: every v1.36
// message, field and RPC is there with its number and wire type, and a request or answer
// made by either side reads the same on the other, only the names of the Signal enum differing.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import * as protobuf from 'protobufjs';
import { criContract, protoPath } from '../../../src/cri/contract';
import { CRI_V136_PROTO, criV136Definition } from '../../support/client-v136';

const v136 = criV136Definition();
const runtimeV136 = v136['runtime.v1.RuntimeService'] as grpc.ServiceDefinition;
const runtimeServed = (criContract().runtime.v1 as unknown as Record<string, { service: grpc.ServiceDefinition }>).RuntimeService!.service;

function root(file: string): protobuf.Root {
  const r = new protobuf.Root();
  r.loadSync(file, { keepCase: true });
  r.resolveAll();
  return r;
}

/** What the wire says of a field: the number and wire type, length-delimited for string and bytes alike. */
function wireOf(field: protobuf.Field): string {
  const type = field.resolvedType instanceof protobuf.Enum ? 'varint' : field.resolvedType ? 'message' : ['string', 'bytes'].includes(field.type) ? 'length-delimited' : field.type;
  return `${field.id} ${field.repeated ? 'repeated ' : ''}${field instanceof protobuf.MapField ? `map<${field.keyType}> ` : ''}${type}`;
}

describe('CRI v1.37 as served, against CRI v1.36', () => {
  it('keeps every v1.36 message, field, enum number and RPC with its wire form', () => {
    const old = root(CRI_V136_PROTO);
    const served = root(protoPath());
    let fields = 0;
    const visit = (ns: protobuf.NamespaceBase): void => {
      for (const entry of ns.nestedArray) {
        if (entry instanceof protobuf.Type) {
          const now = served.lookupType(entry.fullName);
          for (const field of entry.fieldsArray) {
            assert.equal(wireOf(now.fields[field.name]!), wireOf(field), `${entry.fullName}.${field.name}`);
            fields++;
          }
        } else if (entry instanceof protobuf.Enum) {
          const now = served.lookupEnum(entry.fullName);
          for (const [name, number] of Object.entries(entry.values)) {
            // v1.37 renamed Signal's values SIGNAL_<name>; no other enum changed.
            const renamed: string = entry.name === 'Signal' ? `SIGNAL_${name}` : name;
            assert.equal(now.values[renamed], number, `${entry.fullName}.${name}`);
          }
        } else if (entry instanceof protobuf.Service) {
          const now = served.lookupService(entry.fullName);
          for (const m of entry.methodsArray) {
            const n = now.methods[m.name]!;
            assert.deepEqual([n.requestType, n.responseType, !!n.responseStream], [m.requestType, m.responseType, !!m.responseStream], m.name);
          }
        }
        if (entry instanceof protobuf.Namespace) visit(entry);
      }
    };
    visit(old);
    assert.ok(fields > 400, `${fields} fields compared`);
    assert.equal(served.lookupType('runtime.v1.KeyValue').fields.value!.type, 'bytes');
    assert.equal(old.lookupType('runtime.v1.KeyValue').fields.value!.type, 'string');
    assert.deepEqual(Object.keys(runtimeServed).filter((rpc) => !(rpc in runtimeV136)).sort(), ['CheckpointPod', 'RestorePod']);
  });

  it('reads a v1.36 CreateContainer as v1.37: the env value\'s bytes exactly, the stop signal by its number', () => {
    const value = 'grüße ✓ 𝄞';
    const request = {
      podSandboxId: 'p',
      config: { metadata: { name: 'c' }, envs: [{ key: 'GREETING', value }], stopSignal: 'SIGUSR1', mounts: [{ containerPath: '/d', hostPath: '/h', readonly: true }] },
    };
    const bytes = runtimeV136.CreateContainer!.requestSerialize(request);
    const read = runtimeServed.CreateContainer!.requestDeserialize(bytes) as {
      config: { envs: Array<{ key: string; value: Buffer }>; stopSignal: string; mounts: Array<{ readonly: boolean; mountOptions: string[] }> };
    };
    assert.ok(Buffer.isBuffer(read.config.envs[0]!.value));
    assert.deepEqual(read.config.envs[0]!.value, Buffer.from(value, 'utf8'));
    assert.equal(read.config.stopSignal, 'SIGNAL_SIGUSR1');
    assert.deepEqual([read.config.mounts[0]!.readonly, read.config.mounts[0]!.mountOptions], [true, []]);
    // And back: what v1.37 writes of it, v1.36 reads as what it sent.
    const again = runtimeServed.CreateContainer!.requestSerialize(read);
    assert.deepEqual(runtimeV136.CreateContainer!.requestDeserialize(again), runtimeV136.CreateContainer!.requestDeserialize(bytes));
  });

  it('gives a v1.36 client answers it reads: the stop signal under its old name, no v1.37 field in the way', () => {
    const served = {
      status: { id: 'c', stopSignal: 'SIGNAL_SIGTERM', mounts: [{ containerPath: '/d', hostPath: '/h', mountOptions: ['ro'] }] },
    };
    const read = runtimeV136.ContainerStatus!.responseDeserialize(runtimeServed.ContainerStatus!.responseSerialize(served)) as {
      status: { stopSignal: string; mounts: Array<Record<string, unknown>> };
    };
    assert.equal(read.status.stopSignal, 'SIGTERM');
    assert.equal(read.status.mounts[0]!.containerPath, '/d');
    assert.ok(!('mountOptions' in read.status.mounts[0]!), 'an unknown field is skipped');
    const status = runtimeV136.Status!.responseDeserialize(runtimeServed.Status!.responseSerialize({ features: { supplementalGroupsPolicy: true, mountOptions: true } })) as {
      features: Record<string, unknown>;
    };
    assert.deepEqual(status.features, { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false });
  });
});
