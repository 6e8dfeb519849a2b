// Readiness checks that speak the servers' own wire protocols (RESP for Redis,
// OP_MSG for MongoDB) with builtins only, so that they work before `npm ci`.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

function tailFile(file, lines = 20) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

// Sends one request on a fresh connection; resolves with the bytes received
// until `done(buffer)` says the reply is complete.
function exchange(port, payload, done, timeoutMs = 1000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buffer = Buffer.alloc(0);
    const finish = (error, value) => {
      socket.destroy();
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error('timeout')), timeoutMs);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (done(buffer)) finish(null, buffer);
    });
    socket.on('error', (error) => finish(error));
    socket.on('close', () => finish(new Error('connection closed')));
  });
}

/**
 * Sends one inline command to the Redis on `port` over a fresh connection and
 * resolves with the first line of the reply (`+PONG`, `-LOADING ...`).
 */
export async function redisCommand(port, line, timeoutMs = 1000) {
  const reply = await exchange(port, `${line}\r\n`, (b) => b.includes('\r\n'), timeoutMs);
  return reply.toString('utf8', 0, reply.indexOf('\r\n'));
}

/** Resolves once the Redis on `port` answers PING. */
export async function redisPing(port) {
  const reply = await redisCommand(port, 'PING');
  // -LOADING while an append-only file is replayed: not ready yet.
  if (reply !== '+PONG') throw new Error(reply);
}

// Minimal BSON for `{ping: 1, $db: "admin"}` in an OP_MSG, and a reader for
// the top-level `ok` field of the reply.
function bsonPing() {
  const cstring = (s) => Buffer.from(`${s}\0`, 'utf8');
  const int32 = (n) => {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    return b;
  };
  const db = Buffer.from('admin\0', 'utf8');
  const body = Buffer.concat([
    Buffer.from([0x10]), cstring('ping'), int32(1),
    Buffer.from([0x02]), cstring('$db'), int32(db.length), db,
    Buffer.from([0x00]),
  ]);
  const doc = Buffer.concat([int32(body.length + 4), body]);
  const msg = Buffer.concat([int32(0), Buffer.from([0]), doc]); // flagBits, section kind 0
  const header = Buffer.alloc(16);
  header.writeInt32LE(16 + msg.length, 0);
  header.writeInt32LE(randomBytes(3).readUIntLE(0, 3), 4); // requestID
  header.writeInt32LE(0, 8); // responseTo
  header.writeInt32LE(2013, 12); // OP_MSG
  return Buffer.concat([header, msg]);
}

function bsonOk(doc) {
  let i = 4;
  while (i < doc.length - 1) {
    const type = doc[i];
    const nameEnd = doc.indexOf(0, i + 1);
    const name = doc.toString('utf8', i + 1, nameEnd);
    let p = nameEnd + 1;
    let size;
    switch (type) {
      case 0x01: if (name === 'ok') return doc.readDoubleLE(p) === 1; size = 8; break;
      case 0x10: if (name === 'ok') return doc.readInt32LE(p) === 1; size = 4; break;
      case 0x12: if (name === 'ok') return doc.readBigInt64LE(p) === 1n; size = 8; break;
      case 0x08: if (name === 'ok') return doc[p] === 1; size = 1; break;
      case 0x02: case 0x0d: case 0x0e: size = 4 + doc.readInt32LE(p); break;
      case 0x03: case 0x04: size = doc.readInt32LE(p); break;
      case 0x05: size = 5 + doc.readInt32LE(p); break;
      case 0x07: size = 12; break;
      case 0x09: case 0x11: size = 8; break;
      case 0x0a: case 0xff: case 0x7f: size = 0; break;
      default: return false;
    }
    i = p + size;
  }
  return false;
}

/** Resolves once the MongoDB-compatible server on `port` answers `{ping: 1}` with ok: 1. */
export async function mongoPing(port) {
  const reply = await exchange(port, bsonPing(), (b) => b.length >= 4 && b.length >= b.readInt32LE(0), 2000);
  if (reply.readInt32LE(12) !== 2013 || reply[20] !== 0) throw new Error('unexpected reply to ping');
  const doc = reply.subarray(21, 21 + reply.readInt32LE(21));
  if (!bsonOk(doc)) throw new Error('ping did not answer ok: 1');
}

/**
 * Polls `ping` until it succeeds. Fails early with the tail of `logFile` when
 * the server (from spawnServer) exits, and stops it when `timeoutMs` runs out.
 */
export async function waitReady(server, ping, { name, logFile, timeoutMs }) {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  while (Date.now() < deadline) {
    if (server.exitInfo !== null) {
      const { code, signal, error } = server.exitInfo;
      throw new Error(
        `${name} exited during startup (${error?.message ?? signal ?? `exit code ${code}`}); ` +
          `log ${logFile}:\n${tailFile(logFile)}`,
      );
    }
    try {
      await ping();
      return;
    } catch (error) {
      lastError = error;
    }
    await sleep(100);
  }
  await server.stop(2000);
  throw new Error(
    `${name} was not ready within ${timeoutMs / 1000} s (${lastError?.message}); ` +
      `log ${logFile}:\n${tailFile(logFile)}`,
  );
}
