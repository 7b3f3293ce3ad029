// The shim's own metrics without Docker: the instrumented Docker client over a stub, the
// recorders each folder is given, what the registry renders (parsed back with a real
// exposition-format parser), and the /metrics server's answers.
import assert from 'node:assert/strict';
import { status as Code } from '@grpc/grpc-js';
import { describe, it } from 'node:test';
import type { DockerClient } from '../../../src/docker/client';
import type { ContainerInspect, DockerVersion } from '../../../src/docker/types';
import { dockerErrorKind, InstrumentedDockerClient, type DockerCallRecorder } from '../../../src/docker/instrumented-client';
import { CancelledError, DockerNotFoundError, DockerServerError, DockerTimeoutError } from '../../../src/errors';
import type { NetworkOperation, OperationCounts } from '../../../src/network/network-manager';
import { createShimMetrics } from '../../../src/telemetry/metrics';
import { MetricsServer } from '../../../src/telemetry/telemetry-server';
import { silentLogger } from '../../../src/util/logger';
import { histogram, labelSets, parseExposition, sample, scrape } from '../../support/prom-text';

const MISSING = 'f'.repeat(64);

/** Answers version, and inspect of MISSING with Docker's 404; any other method is not expected. */
function stubDocker(): DockerClient {
  const stub: Partial<DockerClient> = {
    endpoint: 'unix:///stub.sock',
    version: async () => ({ Version: '20.10.24', ApiVersion: '1.41' }) as DockerVersion,
    inspectContainer: async (id: string): Promise<ContainerInspect> => {
      throw new DockerNotFoundError(`no such container: ${id}`);
    },
  };
  return stub as DockerClient;
}

function recorded(): { recorder: DockerCallRecorder; calls: Array<[string, string | undefined]> } {
  const calls: Array<[string, string | undefined]> = [];
  return { calls, recorder: { observe: (op, seconds, kind) => (assert.ok(seconds >= 0), calls.push([op, kind])) } };
}

function networkCounts(setUp: Partial<OperationCounts>): Record<NetworkOperation, OperationCounts> {
  const zero = { calls: 0, succeeded: 0, failures: 0, totalMs: 0 };
  return { setUp: { ...zero, ...setUp }, tearDown: zero, status: zero };
}

describe('instrumented Docker client', () => {
  it('tells the recorder of each operation by name, with the kind of failure when it failed', async () => {
    const { recorder, calls } = recorded();
    const docker = new InstrumentedDockerClient(stubDocker(), recorder);
    assert.equal(docker.endpoint, 'unix:///stub.sock');
    assert.equal((await docker.version()).ApiVersion, '1.41');
    await assert.rejects(docker.inspectContainer(MISSING), DockerNotFoundError);
    assert.deepEqual(calls, [
      ['version', undefined],
      ['inspectContainer', 'not_found'],
    ]);
  });

  it('names failures by the Docker client’s error classes, anything else as other', () => {
    assert.equal(dockerErrorKind(new DockerTimeoutError('slow')), 'timeout');
    assert.equal(dockerErrorKind(new DockerServerError('boom', 500)), 'server');
    assert.equal(dockerErrorKind(new CancelledError('gone')), 'cancelled');
    assert.equal(dockerErrorKind(new Error('what')), 'other');
  });
});

describe('shim metrics registry', () => {
  it('renders what the recorders were told, with their label sets, and reads sources at scrape time', async () => {
    const metrics = createShimMetrics();
    metrics.rpc.observe('ContainerStatus', Code.NOT_FOUND, 0.002);
    metrics.rpc.observe('ContainerStatus', Code.NOT_FOUND, 0.004);
    metrics.rpc.observe('Version', Code.OK, 0.0005);
    metrics.docker.observe('inspectContainer', 0.003, 'not_found');
    metrics.docker.observe('inspectContainer', 0.001, undefined);
    metrics.stateCache.reconnecting();
    metrics.logs.written(12, 2);
    metrics.logs.rotated();
    metrics.streaming.tokenIssued('exec');
    metrics.streaming.tokenRejected('exec');
    metrics.streaming.sessionOpened('exec');
    metrics.streaming.sessionOpened('exec');
    metrics.streaming.sessionClosed('exec');
    metrics.read({
      stateCache: { synced: true, containers: { size: 3 }, images: { size: 1 } },
      network: { pluginName: 'kubenet', operationCounts: () => networkCounts({ calls: 3, succeeded: 2, failures: 1 }) },
    });

    const parsed = await parseExposition((await metrics.render()).body);
    const rpc = histogram(parsed, 'cri_docker_shim_rpc_duration_seconds', { method: 'ContainerStatus', code: 'NOT_FOUND' });
    assert.equal(rpc?.count, 2);
    assert.ok(Math.abs((rpc?.sum ?? 0) - 0.006) < 1e-9);
    assert.equal(histogram(parsed, 'cri_docker_shim_rpc_duration_seconds', { method: 'Version', code: 'OK' })?.count, 1);
    assert.deepEqual(labelSets(parsed, 'cri_docker_shim_rpc_duration_seconds'), new Set(['code,method']));

    assert.equal(sample(parsed, 'cri_docker_shim_docker_operations_total', { operation: 'inspectContainer' }), 2);
    assert.equal(sample(parsed, 'cri_docker_shim_docker_operation_errors_total', { operation: 'inspectContainer', kind: 'not_found' }), 1);
    assert.equal(histogram(parsed, 'cri_docker_shim_docker_operation_duration_seconds', { operation: 'inspectContainer' })?.count, 2);

    assert.equal(sample(parsed, 'cri_docker_shim_state_cache_reconnects_total'), 1);
    assert.equal(sample(parsed, 'cri_docker_shim_state_cache_objects', { kind: 'containers' }), 3);
    assert.equal(sample(parsed, 'cri_docker_shim_state_cache_objects', { kind: 'image_answers' }), 1);
    assert.equal(sample(parsed, 'cri_docker_shim_state_cache_synced'), 1);

    assert.equal(sample(parsed, 'cri_docker_shim_container_log_bytes_total'), 12);
    assert.equal(sample(parsed, 'cri_docker_shim_container_log_lines_total'), 2);
    assert.equal(sample(parsed, 'cri_docker_shim_container_log_rotations_total'), 1);

    assert.equal(sample(parsed, 'cri_docker_shim_streaming_sessions', { kind: 'exec' }), 1);
    assert.equal(sample(parsed, 'cri_docker_shim_streaming_sessions', { kind: 'attach' }), 0, 'every kind is there from the start');
    assert.equal(sample(parsed, 'cri_docker_shim_streaming_tokens_issued_total', { kind: 'exec' }), 1);
    assert.equal(sample(parsed, 'cri_docker_shim_streaming_tokens_rejected_total', { kind: 'exec' }), 1);

    const net = { plugin: 'kubenet', operation: 'setUp' };
    assert.equal(sample(parsed, 'cri_docker_shim_network_plugin_operations_total', { ...net, result: 'ok' }), 2);
    assert.equal(sample(parsed, 'cri_docker_shim_network_plugin_operations_total', { ...net, result: 'failed' }), 1);
    assert.deepEqual(labelSets(parsed, 'cri_docker_shim_network_plugin_operations_total'), new Set(['operation,plugin,result']));

    // prom-client's process metrics, in this registry.
    assert.ok(sample(parsed, 'process_cpu_seconds_total') !== undefined);
    assert.ok(sample(parsed, 'nodejs_heap_size_used_bytes') !== undefined);
  });

  it('keeps two shims’ registries apart (none is the library’s global one)', async () => {
    const first = createShimMetrics();
    const second = createShimMetrics();
    first.rpc.observe('Version', Code.OK, 0.001);
    const parsed = await parseExposition((await second.render()).body);
    assert.equal(histogram(parsed, 'cri_docker_shim_rpc_duration_seconds', { method: 'Version' }), undefined);
    const globalRegistry = (require('prom-client') as typeof import('prom-client')).register;
    assert.equal(globalRegistry.getSingleMetric('cri_docker_shim_rpc_duration_seconds'), undefined);
  });

  it('reads the scraped figures as zero before their sources are known', async () => {
    const parsed = await parseExposition((await createShimMetrics().render()).body);
    assert.equal(sample(parsed, 'cri_docker_shim_state_cache_synced'), 0);
    assert.equal(sample(parsed, 'cri_docker_shim_state_cache_objects', { kind: 'containers' }), 0);
  });
});

describe('metrics server', () => {
  it('answers GET /metrics with the exposition, 404 elsewhere, 405 for other methods', async () => {
    const metrics = createShimMetrics();
    metrics.rpc.observe('Version', Code.OK, 0.001);
    const server = new MetricsServer(metrics, silentLogger());
    const { host, port } = await server.listen('127.0.0.1:0');
    try {
      assert.equal(host, '127.0.0.1');
      const ok = await scrape(host, port);
      assert.equal(ok.status, 200);
      assert.match(ok.contentType, /^text\/plain; version=0\.0\.4/);
      assert.equal(histogram(await parseExposition(ok.body), 'cri_docker_shim_rpc_duration_seconds', { method: 'Version', code: 'OK' })?.count, 1);
      assert.equal((await scrape(host, port, '/')).status, 404);
      assert.equal((await scrape(host, port, '/metrics/x')).status, 404);
      assert.equal((await scrape(host, port, '/metrics', 'POST')).status, 405);
    } finally {
      await server.close();
    }
  });

  it('fails to listen on an address already taken', async () => {
    const holder = new MetricsServer(createShimMetrics(), silentLogger());
    const { port } = await holder.listen('127.0.0.1:0');
    const second = new MetricsServer(createShimMetrics(), silentLogger());
    try {
      await assert.rejects(second.listen(`127.0.0.1:${port}`), /EADDRINUSE/);
    } finally {
      await second.close();
      await holder.close();
    }
  });
});
