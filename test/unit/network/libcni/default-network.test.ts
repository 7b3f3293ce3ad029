// The pod network scripts/setup.sh writes on a development machine with no CNI config: it must
// sort after any cluster's, so a cluster's network installed later is the one pods get.
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { chooseNetwork } from '../../../../src/network/libcni/cni-config';

const DEFAULT_FILE = '99-cri-docker-shim.conflist';
const defaultText = fs.readFileSync(path.resolve(__dirname, '../../../../../packaging/cni', DEFAULT_FILE), 'utf8');

describe("setup's default pod network", () => {
  it('is used where it is the only one', () => {
    const choice = chooseNetwork([{ name: DEFAULT_FILE, text: defaultText }], () => true);
    assert.equal(choice.network?.name, 'cri-docker-shim');
  });

  it("yields to a cluster's network, whatever its usual name", () => {
    for (const name of ['10-flannel.conflist', '10-calico.conflist', '05-cilium.conflist', '87-podman-bridge.conflist', '10-weave.conf', '98-cluster.json']) {
      const cluster = JSON.stringify({ cniVersion: '1.0.0', name: 'cluster', plugins: [{ type: 'bridge' }] });
      const choice = chooseNetwork([{ name: DEFAULT_FILE, text: defaultText }, { name, text: cluster }], () => true);
      assert.equal(choice.network?.name, 'cluster', name);
    }
  });
});
