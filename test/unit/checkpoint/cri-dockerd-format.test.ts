// cri-dockerd's sandbox checkpoint: go-spew's rendering and the FNV-1a checksum over it (the
// expected values were computed by go-spew 1.1.1, as vendored by cri-dockerd, through
// cri-dockerd's own CheckpointData and PortMapping types decoded from the JSON shown), the
// file's encoding, decoding of corrupt and foreign files, and the store reading it where ours
// is missing.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import {
  criDockerdChecksum,
  decodeCriDockerdCheckpoint,
  encodeCriDockerdCheckpoint,
  fnv1a32,
  spewCheckpointData,
  type GoCheckpointData,
  type GoPortMapping,
} from '../../../src/checkpoint/cri-dockerd-format';
import { encodeCheckpoint } from '../../../src/checkpoint/checkpoint';
import { CheckpointFiles } from '../../../src/checkpoint/checkpoint-files';
import { silentLogger } from '../../../src/util/logger';
import { sandboxFromCheckpoint } from '../../../src/translate/to-cri/sandbox-convert';
import { sandboxCheckpoint } from '../../support/fixtures/checkpoint';

const pm = (protocol: string | undefined, containerPort: number | undefined, hostPort: number | undefined, hostIp = ''): GoPortMapping => ({
  protocol,
  containerPort,
  hostPort,
  hostIp,
});

/** [the `data` JSON as cri-dockerd reads it, the Go value it decodes into, go-spew's checksum]. */
const VECTORS: Array<[string, GoCheckpointData, number]> = [
  ['{}', { portMappings: undefined, hostNetwork: false }, 2305795928],
  ['{"host_network":false}', { portMappings: undefined, hostNetwork: false }, 2305795928],
  ['{"port_mappings":null,"host_network":null}', { portMappings: undefined, hostNetwork: false }, 2305795928],
  ['{"host_network":true}', { portMappings: undefined, hostNetwork: true }, 12315789],
  ['{"port_mappings":[]}', { portMappings: [], hostNetwork: false }, 3930330829],
  ['{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":8080}]}', { portMappings: [pm('tcp', 80, 8080)], hostNetwork: false }, 3712672205],
  ['{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":8080,"host_ip":""}]}', { portMappings: [pm('tcp', 80, 8080)], hostNetwork: false }, 3712672205],
  [
    '{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":8080}],"host_network":true}',
    { portMappings: [pm('tcp', 80, 8080)], hostNetwork: true },
    1012551782,
  ],
  ['{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":0}]}', { portMappings: [pm('tcp', 80, 0)], hostNetwork: false }, 73209639],
  ['{"port_mappings":[{"protocol":"tcp","container_port":80}]}', { portMappings: [pm('tcp', 80, undefined)], hostNetwork: false }, 4217034330],
  [
    '{"port_mappings":[{"protocol":"tcp","container_port":53,"host_port":0},{"protocol":"udp","container_port":53,"host_port":5353,"host_ip":"127.0.0.1"},{"protocol":"sctp","container_port":9000,"host_port":9000,"host_ip":"::1"}]}',
    { portMappings: [pm('tcp', 53, 0), pm('udp', 53, 5353, '127.0.0.1'), pm('sctp', 9000, 9000, '::1')], hostNetwork: false },
    1917788430,
  ],
  [
    '{"port_mappings":[{"protocol":"tcp","container_port":8443,"host_port":443,"host_ip":"0.0.0.0"},{"protocol":"udp","container_port":8443,"host_port":443,"host_ip":"fd00::1"}],"host_network":true}',
    { portMappings: [pm('tcp', 8443, 443, '0.0.0.0'), pm('udp', 8443, 443, 'fd00::1')], hostNetwork: true },
    1615120859,
  ],
  ['{"port_mappings":[{"protocol":"udp","container_port":53}]}', { portMappings: [pm('udp', 53, undefined)], hostNetwork: false }, 481125798],
  ['{"port_mappings":[{"container_port":53,"host_port":53}]}', { portMappings: [pm(undefined, 53, 53)], hostNetwork: false }, 2018259057],
  ['{"port_mappings":[{}]}', { portMappings: [pm(undefined, undefined, undefined)], hostNetwork: false }, 3292248103],
  [
    '{"port_mappings":[{"protocol":"tcp","container_port":-1,"host_port":2147483647,"host_ip":"10.0.0.1 x"}]}',
    { portMappings: [pm('tcp', -1, 2147483647, '10.0.0.1 x')], hostNetwork: false },
    1454602655,
  ],
  ['{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":8080,"host_ip":"é"}]}', { portMappings: [pm('tcp', 80, 8080, 'é')], hostNetwork: false }, 3142387741],
];

const file = (data: string, checksum: number, extra = ''): string =>
  `{"version":"v1","name":"web","namespace":"default","data":${data},"checksum":${checksum}${extra}}`;

describe("cri-dockerd's checkpoint checksum", () => {
  it('is FNV-1a 32', () => {
    assert.equal(fnv1a32(Buffer.from('')), 0x811c9dc5);
    assert.equal(fnv1a32(Buffer.from('a')), 0xe40c292c);
    assert.equal(fnv1a32(Buffer.from('foobar')), 0xbf9cf968);
  });

  it("renders CheckpointData as go-spew's %#v does", () => {
    assert.equal(spewCheckpointData(VECTORS[0]![1]), '(core.CheckpointData){PortMappings:([]*config.PortMapping)<nil> HostNetwork:(bool)false}');
    assert.equal(spewCheckpointData(VECTORS[4]![1]), '(core.CheckpointData){PortMappings:([]*config.PortMapping)[] HostNetwork:(bool)false}');
    assert.equal(
      spewCheckpointData({ portMappings: [pm('udp', 53, undefined, '127.0.0.1'), pm(undefined, 1, 2)], hostNetwork: true }),
      '(core.CheckpointData){PortMappings:([]*config.PortMapping)[<*>{Protocol:(*config.Protocol)udp ContainerPort:(*int32)53 HostPort:(*int32)<nil> HostIP:(string)127.0.0.1} ' +
        '<*>{Protocol:(*config.Protocol)<nil> ContainerPort:(*int32)1 HostPort:(*int32)2 HostIP:(string)}] HostNetwork:(bool)true}',
    );
  });

  it("matches go-spew's checksum for every vector", () => {
    for (const [json, data, sum] of VECTORS) assert.equal(criDockerdChecksum(data), sum, json);
  });

  it('verifies each vector read from its JSON, as cri-dockerd does', () => {
    for (const [json, , sum] of VECTORS) {
      const decoded = decodeCriDockerdCheckpoint(file(json, sum));
      const verified = decoded.ok || !decoded.reason.startsWith('checksum');
      assert.ok(verified, `${json}: ${decoded.ok ? '' : decoded.reason}`);
      assert.deepEqual(decodeCriDockerdCheckpoint(file(json, sum + 1)), { ok: false, reason: 'checksum does not match the data' }, json);
    }
  });
});

describe("cri-dockerd's checkpoint file", () => {
  const facts = {
    name: 'web',
    namespace: 'default',
    hostNetwork: true,
    portMappings: [
      { protocol: 'TCP' as const, containerPort: 8443, hostPort: 443, hostIp: '0.0.0.0' },
      { protocol: 'UDP' as const, containerPort: 8443, hostPort: 443, hostIp: 'fd00::1' },
    ],
  };

  it('is written as cri-dockerd writes it, with the checksum go-spew gives', () => {
    assert.equal(
      encodeCriDockerdCheckpoint(facts),
      '{"version":"v1","name":"web","namespace":"default","data":{"port_mappings":[{"protocol":"tcp","container_port":8443,"host_port":443,"host_ip":"0.0.0.0"},' +
        '{"protocol":"udp","container_port":8443,"host_port":443,"host_ip":"fd00::1"}],"host_network":true},"checksum":1615120859}',
    );
    // Empty fields left out (omitempty), data itself always there (cri-dockerd dereferences it).
    assert.equal(
      encodeCriDockerdCheckpoint({ ...facts, hostNetwork: false, portMappings: [] }),
      '{"version":"v1","name":"web","namespace":"default","data":{},"checksum":2305795928}',
    );
    assert.equal(
      encodeCriDockerdCheckpoint({ ...facts, hostNetwork: false, portMappings: [{ protocol: 'TCP', containerPort: 80, hostPort: 0, hostIp: '' }] }),
      '{"version":"v1","name":"web","namespace":"default","data":{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":0}]},"checksum":73209639}',
    );
  });

  it('is verified by cri-dockerd (checksums from go-spew decoding these exact files)', () => {
    const mappings = [
      { protocol: 'SCTP' as const, containerPort: 1, hostPort: 65535, hostIp: '::' },
      { protocol: 'UDP' as const, containerPort: 65535, hostPort: 0, hostIp: 'héllo wörld' },
    ];
    assert.equal(
      encodeCriDockerdCheckpoint({ name: 'a', namespace: 'b', hostNetwork: false, portMappings: mappings }),
      '{"version":"v1","name":"a","namespace":"b","data":{"port_mappings":[{"protocol":"sctp","container_port":1,"host_port":65535,"host_ip":"::"},' +
        '{"protocol":"udp","container_port":65535,"host_port":0,"host_ip":"héllo wörld"}]},"checksum":4067882552}',
    );
    const tcp = [{ protocol: 'TCP' as const, containerPort: 80, hostPort: 80, hostIp: '192.168.1.1' }];
    assert.match(encodeCriDockerdCheckpoint({ name: 'a', namespace: 'b', hostNetwork: true, portMappings: tcp }), /"host_network":true\},"checksum":1295218837\}$/);
  });

  it('round-trips', () => {
    assert.deepEqual(decodeCriDockerdCheckpoint(encodeCriDockerdCheckpoint(facts)), { ok: true, checkpoint: facts });
    const none = { ...facts, hostNetwork: false, portMappings: [] };
    assert.deepEqual(decodeCriDockerdCheckpoint(encodeCriDockerdCheckpoint(none)), { ok: true, checkpoint: none });
  });

  it('reads a file without data as the empty data, and ignores unknown fields', () => {
    assert.deepEqual(decodeCriDockerdCheckpoint('{"version":"v1","name":"a","namespace":"b","checksum":2305795928,"x":1}'), {
      ok: true,
      checkpoint: { name: 'a', namespace: 'b', hostNetwork: false, portMappings: [] },
    });
  });

  it('refuses corrupt and foreign files without throwing', () => {
    const good = encodeCriDockerdCheckpoint(facts);
    const refused: Array<[string, string]> = [
      ['', 'not JSON'],
      [good.slice(0, good.length / 2), 'not JSON'],
      ['[]', 'not a JSON object'],
      ['null', 'not a JSON object'],
      [encodeCheckpoint(sandboxCheckpoint()), 'name, namespace or checksum'], // the shim's own format
      [good.replace('"v1"', '"v2"'), 'unknown version'],
      [good.replace('"host_port":443', '"host_port":444'), 'checksum does not match'],
      [good.replace('"name":"web"', '"name":7'), 'name, namespace or checksum'],
      [good.replace('"checksum":1615120859', '"checksum":"1615120859"'), 'name, namespace or checksum'],
      [good.replace('"checksum":1615120859', '"checksum":-1'), 'name, namespace or checksum'],
      [file('null', 2305795928), 'data is not an object'],
      [file('{"host_network":"true"}', 12315789), 'host_network is not a boolean'],
      [file('{"port_mappings":{}}', 0), 'port_mappings is not a list'],
      [file('{"port_mappings":[{"container_port":"80"}]}', 0), 'wrong type'],
      [file('{"port_mappings":[{"container_port":80.5}]}', 0), 'wrong type'],
      [file('{"port_mappings":[{"container_port":2147483648}]}', 0), 'wrong type'],
      [file('{"port_mappings":[null]}', 1062990627), 'null'],
      // Checksums that verify, on mappings cri-dockerd never writes: incomplete, out of range.
      [file('{"port_mappings":[{"protocol":"tcp","container_port":80}]}', 4217034330), 'incomplete or out of range'],
      [file('{"port_mappings":[{"container_port":53,"host_port":53}]}', 2018259057), 'incomplete or out of range'],
      [file('{"port_mappings":[{"protocol":"tcp","container_port":-1,"host_port":2147483647,"host_ip":"10.0.0.1 x"}]}', 1454602655), 'incomplete or out of range'],
    ];
    for (const [text, reason] of refused) {
      const decoded = decodeCriDockerdCheckpoint(text);
      assert.equal(decoded.ok, false, text);
      assert.ok(!decoded.ok && decoded.reason.includes(reason), `${text}: ${decoded.ok ? '' : decoded.reason}`);
    }
    const upper = file('{"port_mappings":[{"protocol":"TCP","container_port":80,"host_port":8080}]}', criDockerdChecksum({ portMappings: [pm('TCP', 80, 8080)], hostNetwork: false }));
    assert.equal(decodeCriDockerdCheckpoint(upper).ok, false, 'protocols are lower case');
  });
});

describe("the store reads cri-dockerd's checkpoint where ours is missing", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-cri-dockerd-checkpoint-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'sandbox');
  fs.mkdirSync(dir);
  const store = new CheckpointFiles(root, silentLogger());
  const ID = 'd'.repeat(64);
  const ours = sandboxCheckpoint({ id: ID, hostNetwork: false, portMappings: [{ protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' }] });

  it("writes cri-dockerd's file beside ours, and removes both", async () => {
    await store.write(ours);
    assert.deepEqual(decodeCriDockerdCheckpoint(fs.readFileSync(path.join(dir, ID), 'utf8')), {
      ok: true,
      checkpoint: { name: 'web', namespace: 'default', hostNetwork: false, portMappings: ours.portMappings },
    });
    assert.match(fs.readFileSync(path.join(dir, ID), 'utf8'), /"checksum":3712672205\}$/);
    assert.equal(fs.statSync(path.join(dir, ID)).mode & 0o777, 0o600);
    await store.remove(ID);
    assert.deepEqual(fs.readdirSync(dir), []);
  });

  it("falls back to cri-dockerd's file once cri-dockerd has deleted ours", async () => {
    await store.write(ours);
    fs.rmSync(path.join(dir, `${ID}.json`));
    const adopted = await store.read(ID);
    assert.deepEqual(adopted, {
      ...sandboxCheckpoint({ id: ID, uid: '', attempt: 0, createdAt: '0', runtimeHandler: '', labels: {}, annotations: {} }),
      hostNetwork: false,
      portMappings: ours.portMappings,
      fromCriDockerd: true,
    });
    assert.deepEqual((await store.readAll()).map((c) => c.id), [ID]);
    assert.deepEqual(await store.ids(), [ID]);
    // Listed NOTREADY with name and namespace when the pause container is gone, as cri-dockerd lists it.
    assert.deepEqual(sandboxFromCheckpoint(adopted!).metadata, { name: 'web', namespace: 'default', uid: '', attempt: 0 });
    await store.remove(ID);
    assert.deepEqual(fs.readdirSync(dir), []);
  });

  it('uses cri-dockerd\'s file when ours is corrupt (ours is removed)', async () => {
    await store.write(ours);
    fs.writeFileSync(path.join(dir, `${ID}.json`), '{"version":');
    assert.equal((await store.read(ID))?.fromCriDockerd, true);
    assert.deepEqual(fs.readdirSync(dir), [ID]);
    await store.remove(ID);
  });

  it("writes cri-dockerd's file, when it loads them, for a pod that has only ours (made by an older shim)", async () => {
    fs.writeFileSync(path.join(dir, `${ID}.json`), encodeCheckpoint(ours));
    assert.deepEqual(await store.readAll(), [ours]);
    assert.equal(fs.readFileSync(path.join(dir, ID), 'utf8'), encodeCriDockerdCheckpoint(ours));
    assert.deepEqual(fs.readdirSync(dir).sort(), [ID, `${ID}.json`], 'no temp file left');
    await store.remove(ID);
  });

  it('logs and skips, never removes, a corrupt file, a symlink, a directory, a FIFO; other names are left alone', async () => {
    const [corrupt, link, directory, fifo] = ['1', '2', '3', '4'].map((c) => c.repeat(64)) as [string, string, string, string];
    fs.writeFileSync(path.join(dir, corrupt), '{"version":"v1","name":"a","namespace":"b","data":{},"checksum":1}');
    fs.writeFileSync(path.join(root, 'target'), encodeCriDockerdCheckpoint({ name: 'a', namespace: 'b', hostNetwork: false, portMappings: [] }));
    fs.symlinkSync(path.join(root, 'target'), path.join(dir, link));
    fs.mkdirSync(path.join(dir, directory));
    execFileSync('mkfifo', [path.join(dir, fifo)]);
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'x');
    fs.writeFileSync(path.join(dir, '.tmp-abc'), 'x');
    const warnings: unknown[] = [];
    const log = silentLogger();
    log.warn = ((obj: unknown) => void warnings.push(obj)) as typeof log.warn;
    const watched = new CheckpointFiles(root, log);
    assert.deepEqual(await watched.readAll(), []);
    assert.equal(warnings.length, 4);
    for (const id of [corrupt, link, directory, fifo]) assert.equal(await watched.read(id), undefined);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['.tmp-abc', corrupt, link, directory, fifo, 'notes.txt'].sort());
  });
});
