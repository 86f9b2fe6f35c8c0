'use strict';

// A Dubbo consumer built on dubbo-remoting (the dubbo protocol codec of
// sofa-rpc-node), for dubbogw's provider interop tests (test/peers/dubbo).
//
//   node peer.js 127.0.0.1:20880
//
// It opens one connection to the provider and reads one JSON request per
// line on stdin, answering each with one JSON line on stdout, in order:
//
//   {"op":"call", "call":CALL}        -> RESULT
//   {"op":"parallel", "calls":[CALL]} -> {"results":[RESULT]}   all sent at once on the connection
//   {"op":"heartbeat"}                -> {"ok":true} once the provider acknowledged a heartbeat
//   {"op":"event"}                    -> {"event":DATA} the next event request the provider sends
//                                        other than a heartbeat (a readonly event's data is "R")
//   a request the harness cannot carry out -> {"fatal":"..."}
//
// CALL is {"service","version","group","method","args":[ARG],"props":{...},"timeoutMs"}:
// ARG is a value as dubbo-remoting takes it (js-to-java form: {"$class":"long","$":"1"},
// with {"$date":ms}, {"$bytes":base64} and {"$error":message} for a Date, a Buffer
// and an Error);
// props are extra request attachments ({"generic":"true"}).
//
// RESULT is {"ok":true,"value":V,"props":P} for a value, or
// {"ok":false,"status":S,"error":E} where S is the response's status byte
// and E the error dubbo-remoting decoded (for an exception, {"$exception":
// {"class","message"}}), or {"ok":false,"timeout":true}.
//
// Values are printed as plain JSON, with dates as {"$date":ms}, binaries as
// {"$bytes":base64}, longs past 2^53 as strings (hessian.js's choice).

const net = require('net');
const readline = require('readline');
const protocol = require('dubbo-remoting');

const [ host, port ] = (process.argv[2] || '').split(':');
if (!host || !port) {
  process.stderr.write('usage: node peer.js host:port\n');
  process.exit(2);
}

const socket = net.connect(Number(port), host);
const encoder = protocol.encoder({});
const decoder = protocol.decoder({});

const pending = new Map(); // packet id -> resolve(answer)
const statuses = new Map(); // packet id -> status byte of its response frame
const events = []; // event data not yet asked for
let eventWaiter = null;
let nextId = 1;

// dubbo-remoting's decoder does not say which status a response carried,
// so the frames are read here too, for their status byte only. This
// listener is added before the decoder's, so it sees each chunk first.
let raw = Buffer.alloc(0);
socket.on('data', chunk => {
  raw = Buffer.concat([ raw, chunk ]);
  while (raw.length >= 16) {
    const bodyLen = raw.readInt32BE(12);
    if (raw.length < 16 + bodyLen) break;
    if ((raw[2] & 0x80) === 0) { // a response
      statuses.set(raw.readUInt32BE(4) * 0x100000000 + raw.readUInt32BE(8), raw[3]);
    }
    raw = raw.slice(16 + bodyLen);
  }
});
encoder.pipe(socket).pipe(decoder);

decoder.on('response', packet => {
  const resolve = pending.get(packet.packetId);
  if (!resolve) return;
  pending.delete(packet.packetId);
  const status = statuses.get(packet.packetId);
  statuses.delete(packet.packetId);
  const data = packet.data;
  if (data.error) {
    resolve({ ok: false, status, error: plain(data.error) });
  } else {
    resolve({ ok: true, status, value: plain(data.appResponse), props: plain(data.responseProps) });
  }
});

decoder.on('heartbeat_ack', packet => {
  const resolve = pending.get(packet.packetId);
  if (!resolve) return;
  pending.delete(packet.packetId);
  resolve({ ok: true });
});

// Event requests from the provider: heartbeats are answered, anything else
// (a readonly event) is kept for the "event" op.
decoder.on('heartbeat', packet => {
  if (packet.data === null || packet.data === undefined) {
    encoder.writeHeartbeatAck(packet);
    return;
  }
  events.push(plain(packet.data));
  if (eventWaiter) {
    const w = eventWaiter;
    eventWaiter = null;
    w(events.shift());
  }
});

socket.on('error', err => fail('socket: ' + err.message));
decoder.on('error', err => fail('decoder: ' + err.message));

function fail(message) {
  for (const resolve of pending.values()) resolve({ ok: false, error: message });
  pending.clear();
}

function withTimeout(id, ms, promise) {
  return new Promise(resolve => {
    const timer = setTimeout(() => {
      pending.delete(id);
      resolve({ ok: false, timeout: true });
    }, ms || 5000);
    promise.then(v => {
      clearTimeout(timer);
      resolve(v);
    });
  });
}

function call(c) {
  const id = nextId++;
  const answer = new Promise(resolve => pending.set(id, resolve));
  encoder.writeRequest(id, {
    serverSignature: c.version ? c.service + ':' + c.version : c.service,
    group: c.group || '',
    methodName: c.method,
    args: (c.args || []).map(revive),
    requestProps: c.props || {},
  }, err => {
    if (err) {
      const resolve = pending.get(id);
      pending.delete(id);
      if (resolve) resolve({ ok: false, error: 'encoding: ' + err.message });
    }
  });
  return withTimeout(id, c.timeoutMs, answer);
}

function heartbeat() {
  const id = nextId++;
  const answer = new Promise(resolve => pending.set(id, resolve));
  encoder.writeHeartbeat(id, null);
  return withTimeout(id, 5000, answer);
}

function nextEvent() {
  if (events.length > 0) return Promise.resolve({ event: events.shift() });
  return new Promise(resolve => {
    const timer = setTimeout(() => {
      eventWaiter = null;
      resolve({ timeout: true });
    }, 10000);
    eventWaiter = data => {
      clearTimeout(timer);
      resolve({ event: data });
    };
  });
}

// revive turns the JSON forms of dates, binaries and errors back into a
// Date, a Buffer and an Error.
function revive(v) {
  if (Array.isArray(v)) return v.map(revive);
  if (v && typeof v === 'object') {
    if (Object.keys(v).length === 1 && typeof v.$date === 'number') return new Date(v.$date);
    if (Object.keys(v).length === 1 && typeof v.$bytes === 'string') return Buffer.from(v.$bytes, 'base64');
    if (Object.keys(v).length === 1 && typeof v.$error === 'string') return new Error(v.$error);
    const out = {};
    for (const k of Object.keys(v)) out[k] = revive(v[k]);
    return out;
  }
  return v;
}

// plain is v as JSON can carry it.
function plain(v) {
  if (v === null || v === undefined) return null;
  if (v instanceof Error) {
    return { $exception: { class: v.name, message: v.message } };
  }
  if (v instanceof Date) return { $date: v.getTime() };
  if (Buffer.isBuffer(v)) return { $bytes: v.toString('base64') };
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return { $map: Array.from(v.entries()).map(([ k, x ]) => [ plain(k), plain(x) ]) };
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v)) out[k] = plain(v[k]);
    return out;
  }
  return v;
}

async function handle(req) {
  switch (req.op) {
    case 'call': return call(req.call);
    case 'parallel': return { results: await Promise.all(req.calls.map(call)) };
    case 'heartbeat': return heartbeat();
    case 'event': return nextEvent();
    default: return { fatal: 'unknown op ' + req.op };
  }
}

const connected = new Promise((resolve, reject) => {
  socket.once('connect', resolve);
  socket.once('error', reject);
});

(async () => {
  try {
    await connected;
  } catch (err) {
    process.stdout.write(JSON.stringify({ fatal: 'connecting: ' + err.message }) + '\n');
    process.exit(1);
  }
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let answer;
    try {
      answer = await handle(JSON.parse(line));
    } catch (err) {
      answer = { fatal: err.stack || String(err) };
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
  socket.end();
  socket.destroy();
})();
