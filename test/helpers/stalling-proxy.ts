/**
 * A TCP proxy on 127.0.0.1 that can stall: while stalled it accepts connections but
 * forwards nothing (a server that is up but does not answer, like a database
 * grinding under load); once released, the held connections and every new one are
 * piped to the target.
 *
 *   const proxy = await StallingProxy.start(targetPort, { stalled: true });
 *   t.teardown(() => proxy.close());
 *   proxy.release();
 */
import net from 'node:net';

export class StallingProxy {
  private stalled: boolean;
  private readonly held: net.Socket[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly targetPort: number,
    options: { stalled: boolean },
  ) {
    this.stalled = options.stalled;
  }

  static async start(targetPort: number, options: { stalled?: boolean } = {}): Promise<StallingProxy> {
    const server = net.createServer();
    const proxy = new StallingProxy(server, targetPort, { stalled: options.stalled ?? false });
    server.on('connection', (socket) => proxy.accept(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Connections held, not forwarded, so far. */
  get heldCount(): number {
    return this.held.length;
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    if (this.stalled) {
      socket.pause();
      this.held.push(socket);
    } else {
      this.forward(socket);
    }
  }

  private forward(socket: net.Socket): void {
    if (socket.destroyed) return;
    const upstream = net.connect({ host: '127.0.0.1', port: this.targetPort });
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      socket.destroy();
    });
    upstream.on('error', () => upstream.destroy());
    socket.on('close', () => upstream.destroy());
    socket.pipe(upstream).pipe(socket);
    socket.resume();
  }

  /** Forwards the held connections and every new one from now on. */
  release(): void {
    this.stalled = false;
    for (const socket of this.held.splice(0)) this.forward(socket);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
