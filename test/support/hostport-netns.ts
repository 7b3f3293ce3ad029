// A small node built from network namespaces, for the host port and kubenet tests: a "node"
// namespace with a bridge cbr0 (10.250.0.1/24, fd00:250::1/64) and an uplink up0 carrying the
// node's own address (10.251.0.1/24, fd00:251::1/64), and "pod" namespaces, each with eth0 on a
// veth whose other end is a port of cbr0. Nothing here touches the host's own namespaces;
// traffic goes only between these namespaces and their loopbacks. `cleanup` deletes every
// namespace made (which takes their interfaces and iptables rules with them) and stops the
// servers started in them, also after a failure.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { netnsRunner, type CommandRunner } from '../../src/network/hostport/runner';
import { waitFor } from './poll';

const run = promisify(execFile);

export const NODE_BRIDGE_V4 = '10.250.0.1';
export const NODE_BRIDGE_V6 = 'fd00:250::1';
export const NODE_UPLINK_V4 = '10.251.0.1';
export const NODE_UPLINK_V6 = 'fd00:251::1';
export const POD_CIDR_V4 = '10.250.0.0/24';
export const POD_CIDR_V6 = 'fd00:250::/64';
export const SERVER_TCP_PORT = 8080;
export const SERVER_UDP_PORT = 5353;

async function sh(args: string[]): Promise<string> {
  const { stdout } = await run('ip', args, { timeout: 20_000 });
  return stdout;
}

async function inNs(ns: string, args: string[]): Promise<string> {
  return sh(['netns', 'exec', ns, ...args]);
}

export interface TestPod {
  ns: string;
  /** The node-side end of its veth, a port of cbr0. */
  veth: string;
  ipv4: string;
  ipv6: string | undefined;
}

/** Answers TCP with "<name> sees <peer address>" and echoes UDP the same way. */
const SERVER = `
const net = require('net'), dgram = require('dgram');
const name = process.argv[1];
const tcp = net.createServer((c) => c.end(name + ' sees ' + c.remoteAddress.replace(/^::ffff:/, '') + '\\n'));
tcp.listen(${SERVER_TCP_PORT}, '::', () => {
  const udp = dgram.createSocket('udp4');
  udp.on('message', (m, r) => udp.send(name + ' sees ' + r.address, r.port, r.address));
  udp.bind(${SERVER_UDP_PORT}, () => process.stdout.write('ready\\n'));
});`;

/** Connects (TCP) or sends a datagram (UDP); prints "OK <answer>" or "ERR <code>". */
const CLIENT = `
const [host, port, proto, waitMs] = process.argv.slice(1);
const done = (s) => { process.stdout.write(s.trim()); process.exit(0); };
setTimeout(() => done('ERR timeout'), Number(waitMs));
if (proto === 'udp') {
  const d = require('dgram').createSocket(host.includes(':') ? 'udp6' : 'udp4');
  d.on('message', (m) => done('OK ' + m));
  d.on('error', (e) => done('ERR ' + e.code));
  d.send('ping', Number(port), host);
} else {
  const s = require('net').connect(Number(port), host);
  let got = '';
  s.on('data', (d) => (got += d));
  s.on('end', () => done('OK ' + got));
  s.on('error', (e) => done('ERR ' + e.code));
}`;

export class TestNode {
  readonly node: string;
  readonly runner: CommandRunner;
  private readonly made: string[] = [];
  private readonly servers: ChildProcess[] = [];
  private pods = 0;

  private constructor(private readonly tag: string) {
    this.node = `${tag}-node`;
    this.runner = netnsRunner(this.node);
  }

  /** Makes the node namespace; call `cleanup` in `after` whatever happens. */
  static async create(): Promise<TestNode> {
    const node = new TestNode(`cds-hp-${randomBytes(3).toString('hex')}`);
    await node.addNs(node.node);
    const n = node.node;
    await inNs(n, ['ip', 'link', 'set', 'lo', 'up']);
    await inNs(n, ['sysctl', '-q', '-w', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
    await inNs(n, ['ip', 'link', 'add', 'cbr0', 'type', 'bridge']);
    await inNs(n, ['ip', 'addr', 'add', `${NODE_BRIDGE_V4}/24`, 'dev', 'cbr0']);
    await inNs(n, ['ip', '-6', 'addr', 'add', `${NODE_BRIDGE_V6}/64`, 'dev', 'cbr0', 'nodad']);
    await inNs(n, ['ip', 'link', 'set', 'cbr0', 'up']);
    await inNs(n, ['ip', 'link', 'add', 'up0', 'type', 'veth', 'peer', 'name', 'up0-peer']);
    await inNs(n, ['ip', 'addr', 'add', `${NODE_UPLINK_V4}/24`, 'dev', 'up0']);
    await inNs(n, ['ip', '-6', 'addr', 'add', `${NODE_UPLINK_V6}/64`, 'dev', 'up0', 'nodad']);
    await inNs(n, ['ip', 'link', 'set', 'up0', 'up']);
    await inNs(n, ['ip', 'link', 'set', 'up0-peer', 'up']);
    return node;
  }

  private async addNs(name: string): Promise<void> {
    this.made.push(name);
    await sh(['netns', 'add', name]);
  }

  /** A pod namespace on cbr0 with the given addresses and a default route through the bridge. */
  async addPod(ipv4: string, ipv6?: string): Promise<TestPod> {
    const i = ++this.pods;
    const ns = `${this.tag}-pod${i}`;
    const veth = `vhp${i}${this.tag.slice(-6)}`;
    await this.addNs(ns);
    await inNs(ns, ['ip', 'link', 'set', 'lo', 'up']);
    await inNs(this.node, ['ip', 'link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await inNs(this.node, ['ip', 'link', 'set', veth, 'master', 'cbr0', 'up']);
    await inNs(ns, ['ip', 'addr', 'add', `${ipv4}/24`, 'dev', 'eth0']);
    if (ipv6) await inNs(ns, ['ip', '-6', 'addr', 'add', `${ipv6}/64`, 'dev', 'eth0', 'nodad']);
    await inNs(ns, ['ip', 'link', 'set', 'eth0', 'up']);
    await inNs(ns, ['ip', 'route', 'add', 'default', 'via', NODE_BRIDGE_V4]);
    if (ipv6) await inNs(ns, ['ip', '-6', 'route', 'add', 'default', 'via', NODE_BRIDGE_V6]);
    return { ns, veth, ipv4, ipv6 };
  }

  /**
   * A namespace joined to the node's uplink (up0-peer moves into it), as a machine beyond the
   * node: the node gets `nodeIp`/24 on up0 as well, the outside `outsideIp`/24, and a route to
   * the pod CIDR through the node.
   */
  async addOutside(nodeIp: string, outsideIp: string): Promise<string> {
    const ns = `${this.tag}-out`;
    await this.addNs(ns);
    await inNs(ns, ['ip', 'link', 'set', 'lo', 'up']);
    await inNs(this.node, ['ip', 'addr', 'add', `${nodeIp}/24`, 'dev', 'up0']);
    await inNs(this.node, ['ip', 'link', 'set', 'up0-peer', 'netns', ns]);
    await inNs(ns, ['ip', 'addr', 'add', `${outsideIp}/24`, 'dev', 'up0-peer']);
    await inNs(ns, ['ip', 'link', 'set', 'up0-peer', 'up']);
    await inNs(ns, ['ip', 'route', 'add', POD_CIDR_V4, 'via', nodeIp]);
    return ns;
  }

  /** Starts the TCP/UDP answering server in a namespace and waits until it listens. */
  async startServer(ns: string, name: string): Promise<void> {
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', SERVER, name], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.servers.push(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(`server in ${ns}`, () => {
      if (child.exitCode !== null) throw new Error(`server in ${ns} exited ${child.exitCode}`);
      return out.includes('ready');
    });
  }

  /**
   * From inside `ns`: "OK <answer>" or "ERR <code>"; "ERR timeout" after `waitMs` without an
   * answer. An answer comes at once, but a first IPv6 contact waits for neighbour discovery
   * (over 1.5 s on a loaded machine): a probe that expects no answer passes a shorter wait.
   */
  async probe(ns: string, host: string, port: number, proto: 'tcp' | 'udp' = 'tcp', waitMs = 5_000): Promise<string> {
    const { stdout } = await run('ip', ['netns', 'exec', ns, process.execPath, '-e', CLIENT, host, String(port), proto, String(waitMs)], { timeout: waitMs + 10_000 });
    return stdout;
  }

  async exec(ns: string, args: string[]): Promise<string> {
    return inNs(ns, args);
  }

  /** iptables-save (or ip6tables-save) of the whole node namespace. */
  async iptablesSave(family: 4 | 6 = 4): Promise<string> {
    return inNs(this.node, [family === 4 ? 'iptables-save' : 'ip6tables-save']);
  }

  async cleanup(): Promise<void> {
    for (const s of this.servers) if (s.exitCode === null && s.pid !== undefined) s.kill('SIGKILL');
    const errors: string[] = [];
    for (const ns of this.made.reverse()) {
      try {
        await sh(['netns', 'del', ns]);
      } catch (err) {
        const text = (err as { stderr?: string }).stderr ?? String(err);
        if (!/No such file/.test(text)) errors.push(`${ns}: ${text.trim()}`);
      }
    }
    if (errors.length > 0) throw new Error(`could not delete namespaces: ${errors.join('; ')}`);
  }
}
