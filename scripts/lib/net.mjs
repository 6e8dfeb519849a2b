import net from 'node:net';

/**
 * A free TCP port on 127.0.0.1 (bound to port 0, then released). Another
 * process may take it before the caller binds it: startRedis and
 * startFerretDB then try another one.
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
