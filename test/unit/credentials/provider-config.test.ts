import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { FlagError, parseFlags } from '../../../src/config/flags';
import { CredentialConfigError, loadCredentialProviderConfig, parseCredentialProviderConfig } from '../../../src/credentials/provider-config';

const YAML = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-credential-provider
    matchImages:
      - "*.dkr.ecr.*.amazonaws.com"
      - "127.0.0.1:5000/team"
    defaultCacheDuration: "12h"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args: [get-credentials]
    env:
      - name: AWS_PROFILE
        value: temp
`;

function withProvider(over: Record<string, unknown>): string {
  const provider = { name: 'p', matchImages: ['x.io'], defaultCacheDuration: '1m', apiVersion: 'credentialprovider.kubelet.k8s.io/v1', ...over };
  for (const [k, v] of Object.entries(provider)) if (v === undefined) delete (provider as Record<string, unknown>)[k];
  return JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1', kind: 'CredentialProviderConfig', providers: [provider] });
}

function rejects(text: string, pattern: RegExp): void {
  assert.throws(() => parseCredentialProviderConfig(text), (err: unknown) => {
    assert.ok(err instanceof CredentialConfigError, String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

describe('parseCredentialProviderConfig', () => {
  it('reads kubelet YAML', () => {
    const [p] = parseCredentialProviderConfig(YAML);
    assert.equal(p!.name, 'ecr-credential-provider');
    assert.deepEqual(p!.matchImages, ['*.dkr.ecr.*.amazonaws.com', '127.0.0.1:5000/team']);
    assert.equal(p!.defaultCacheDurationMs, 12 * 3600 * 1000);
    assert.deepEqual(p!.args, ['get-credentials']);
    assert.deepEqual(p!.env, [{ name: 'AWS_PROFILE', value: 'temp' }]);
  });

  it('reads JSON, with args and env optional and a zero cache duration', () => {
    const [p] = parseCredentialProviderConfig(withProvider({ defaultCacheDuration: '0s' }));
    assert.equal(p!.defaultCacheDurationMs, 0);
    assert.deepEqual(p!.args, []);
    assert.deepEqual(p!.env, []);
  });

  it('rejects wrong documents naming the field at fault', () => {
    rejects('{', /not valid YAML or JSON/);
    rejects(YAML.replace('kubelet.config.k8s.io/v1', 'kubelet.config.k8s.io/v9'), /apiVersion must be kubelet\.config\.k8s\.io\/v1/);
    rejects(YAML.replace('kind: CredentialProviderConfig', 'kind: Other'), /kind must be CredentialProviderConfig/);
    rejects(JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1', kind: 'CredentialProviderConfig', providers: [] }), /at least one/);
    rejects(withProvider({ name: '../evil' }), /providers\[0\]\.name .* plain file name/);
    rejects(withProvider({ name: undefined }), /providers\[0\]\.name is required/);
    rejects(withProvider({ matchImages: [] }), /\(p\)\.matchImages must list/);
    rejects(withProvider({ matchImages: ['https://x.io'] }), /matchImages\[0\] "https:\/\/x\.io" must not have a scheme/);
    rejects(withProvider({ defaultCacheDuration: undefined }), /defaultCacheDuration is required/);
    rejects(withProvider({ defaultCacheDuration: 'soon' }), /defaultCacheDuration: "soon" is not a duration/);
    rejects(withProvider({ apiVersion: 'credentialprovider.kubelet.k8s.io/v2' }), /\.apiVersion must be one of/);
    rejects(withProvider({ env: [{ value: 'x' }] }), /env\[0\]\.name is required/);
    rejects(withProvider({ matchImage: ['x'] }), /unknown field "matchImage"/);
    rejects(withProvider({ tokenAttributes: { serviceAccountTokenAudience: 'a' } }), /tokenAttributes/);
    const twice = JSON.parse(withProvider({})) as { providers: unknown[] };
    twice.providers.push(twice.providers[0]);
    rejects(JSON.stringify(twice), /name "p" is used twice/);
  });
});

describe('loadCredentialProviderConfig', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-credcfg-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('finds each provider binary in the bin dir', () => {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'p'), '#!/bin/sh\n', { mode: 0o755 });
    const cfg = path.join(dir, 'ok.json');
    fs.writeFileSync(cfg, withProvider({}));
    const [p] = loadCredentialProviderConfig(cfg, bin);
    assert.equal(p!.binaryPath, path.join(bin, 'p'));
  });

  it('a missing binary or file fails naming it', () => {
    const cfg = path.join(dir, 'missing.json');
    fs.writeFileSync(cfg, withProvider({ name: 'not-there' }));
    assert.throws(() => loadCredentialProviderConfig(cfg, dir), /provider "not-there": no executable .*not-there in --image-credential-provider-bin-dir/);
    assert.throws(() => loadCredentialProviderConfig(path.join(dir, 'nope.yaml'), dir), /--image-credential-provider-config .*nope\.yaml: cannot read/);
    const bad = path.join(dir, 'bad.yaml');
    fs.writeFileSync(bad, 'kind: Nope');
    assert.throws(() => loadCredentialProviderConfig(bad, dir), /bad\.yaml: apiVersion must be/);
  });
});

describe('credential provider flags', () => {

  it('are off by default and read together', () => {
    const off = parseFlags([], {});
    assert.ok(off.kind === 'run');
    assert.equal(off.config.imageCredentialProviderConfig, '');
    const on = parseFlags(['--image-credential-provider-config=/etc/k/cp.yaml', '--image-credential-provider-bin-dir=/opt/cp'], {});
    assert.ok(on.kind === 'run');
    assert.equal(on.config.imageCredentialProviderConfig, '/etc/k/cp.yaml');
    assert.equal(on.config.imageCredentialProviderBinDir, '/opt/cp');
  });

  it('one without the other is a flag error', () => {
    assert.throws(() => parseFlags(['--image-credential-provider-config=/x.yaml'], {}), FlagError);
    assert.throws(() => parseFlags(['--image-credential-provider-bin-dir=/opt'], {}), /must be given together/);
  });
});
