// The Prometheus endpoint: plain HTTP on --metrics-bind-addr, GET /metrics and nothing else
// (404 for other paths, 405 for other methods on /metrics). It holds no credentials and serves
// only what the registry holds, whose labels carry no IDs, names or secrets.
import * as http from 'node:http';
import { errorMessage } from '../errors';
import type { Logger } from '../util/logger';
import { QuietHttpServer } from '../util/http-server';
import type { ShimMetrics } from './metrics';

export class MetricsServer {
  private readonly server = new QuietHttpServer((req, res) => void this.answer(req, res), 'metrics');

  constructor(
    private readonly metrics: ShimMetrics,
    private readonly log: Logger,
  ) {}

  /** Binds host:port (port 0 picks a free one); resolves with the bound address. */
  async listen(bindAddress: string): Promise<{ host: string; port: number }> {
    const bound = await this.server.listen(bindAddress);
    return { host: bound.address, port: bound.port };
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics') return plain(res, 404, 'not found');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return plain(res, 405, 'method not allowed');
    }
    try {
      const { contentType, body } = await this.metrics.render();
      res.statusCode = 200;
      res.setHeader('Content-Type', contentType);
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (err) {
      this.log.warn({ error: errorMessage(err) }, 'collecting metrics failed');
      plain(res, 500, 'collecting metrics failed');
    }
  }
}

function plain(res: http.ServerResponse, status: number, message: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.end(`${message}\n`);
}
