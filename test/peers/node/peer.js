'use strict';

// A Hessian 2.0 peer backed by hessian.js, driven by the Go interop tests.
//
// Each stdin line is one JSON request, each stdout line the JSON answer to
// it, in order:
//
//   {"op":"encode","desc":DESC}  ->  {"hex":"..."}   builds the hessian.js value DESC describes, writes it
//   {"op":"decode","hex":"..."}  ->  {"desc":DESC}    reads one value and describes what hessian.js returned
//   any failure                  ->  {"error":"..."}
//
// DESC is the typed JSON of test/peers/README.md.

const readline = require('readline');
const hessian = require('hessian.js');

// hessian.js writes a map with a type only for the types it is told are maps;
// any other $class is written as an object. These are the typed maps the
// table uses.
const MAP_TYPES = {
  'java.util.TreeMap': true,
  'java.util.LinkedHashMap': true,
};

// The v2 decoder ignores withType for scalars (a long, an int and a double all
// come back as a bare number), so its answers alone cannot show which tag was
// read. TypedDecoder completes withType the way hessian.js's v1 decoder does
// it, wrapping each scalar read as a value in {$class, $}; hessian.js's own
// code still does every read. The PRIMITIVE symbol tells these wrappers from
// decoded Java objects.
const PRIMITIVE = Symbol('primitive');
const SCALARS = {
  readNull: null,
  readBool: 'bool',
  readInt: 'int',
  readLong: 'long',
  readDouble: 'double',
  readDate: 'date',
  readString: 'string',
  readBytes: 'binary',
};

class TypedDecoder extends hessian.DecoderV2 {
  read(withType) {
    const code = this.byteBuffer.get(this.byteBuffer.position());
    const method = this.BYTE_CODES[code];
    if (method === undefined) {
      throw new Error('hessian read got an unexpected code: 0x' + code.toString(16));
    }
    if (!Object.prototype.hasOwnProperty.call(SCALARS, method) || method === 'readNull') {
      return super.read(withType);
    }
    let value = this[method](false);
    if (value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, '$')) {
      value = value.$; // readBool wraps itself when asked
    }
    const wrapped = { $class: SCALARS[method], $: value };
    Object.defineProperty(wrapped, PRIMITIVE, { value: true });
    return wrapped;
  }
}

function build(desc, ids) {
  let out;
  switch (desc.t) {
    case 'null':
      return null;
    case 'bool':
      return { $class: 'boolean', $: desc.v };
    case 'int':
      return { $class: 'int', $: desc.v };
    case 'long':
      return { $class: 'long', $: desc.v }; // writeLong takes a decimal string
    case 'double':
      return { $class: 'double', $: toNumber(desc.v) };
    case 'date':
      return { $class: 'java.util.Date', $: new Date(desc.v) };
    case 'string':
      return { $class: 'java.lang.String', $: desc.v };
    case 'binary':
      return Buffer.from(desc.v, 'base64');
    case 'bigdecimal':
      return { $class: 'java.math.BigDecimal', $: { value: build({ t: 'string', v: desc.v }, ids) } };
    case 'enum':
      out = { $class: desc.class, $: { name: build({ t: 'string', v: desc.name }, ids) } };
      break;
    case 'exception':
      return exception(desc, ids);
    case 'ref':
      if (!ids.has(desc.id)) {
        throw new Error('ref to unknown id ' + desc.id);
      }
      return ids.get(desc.id);
    case 'list': {
      const items = [];
      out = desc.type ? { $class: desc.type, $: items } : items;
      remember(desc, out, ids);
      for (const item of desc.items) {
        items.push(build(item, ids));
      }
      return out;
    }
    case 'map': {
      const entries = new Map();
      out = desc.type ? { $class: desc.type, $: entries } : entries;
      remember(desc, out, ids);
      for (const [k, v] of desc.entries) {
        entries.set(build(k, ids), build(v, ids));
      }
      return out;
    }
    case 'object': {
      const fields = {};
      out = { $class: desc.class, $: fields };
      remember(desc, out, ids);
      for (const [name, v] of desc.fields) {
        fields[name] = build(v, ids);
      }
      return out;
    }
    default:
      throw new Error('description type ' + desc.t + ' has no hessian.js form');
  }
  remember(desc, out, ids);
  return out;
}

// exception builds a Throwable the way Java (hessian-lite) writes one: an
// object with detailMessage, cause (itself when there is none, Java's
// marker), stackTrace (the one frame every peer sends, README.md) and
// suppressedExceptions. hessian.js has no exception type of its own to write.
function exception(desc, ids) {
  const fields = {};
  const out = { $class: desc.class, $: fields };
  fields.detailMessage = build({ t: 'string', v: desc.message }, ids);
  fields.cause = desc.cause ? exception(desc.cause, ids) : out;
  fields.stackTrace = {
    $class: '[java.lang.StackTraceElement',
    $: [{
      $class: 'java.lang.StackTraceElement',
      $: {
        declaringClass: build({ t: 'string', v: 'interop.Service' }, ids),
        methodName: build({ t: 'string', v: 'call' }, ids),
        fileName: build({ t: 'string', v: 'Service.java' }, ids),
        lineNumber: build({ t: 'int', v: 42 }, ids),
      },
    }],
  };
  fields.suppressedExceptions = [];
  return out;
}

function remember(desc, value, ids) {
  if (desc.id !== undefined) {
    ids.set(desc.id, value);
  }
}

function toNumber(v) {
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  return v;
}

function fromNumber(v) {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  return v;
}

function isWrapper(v) {
  return v !== null && typeof v === 'object' && typeof v.$class === 'string' &&
    Object.prototype.hasOwnProperty.call(v, '$');
}

// describe turns what TypedDecoder returned into a description. A list, map
// or object gets an id on first sight and is a ref after that; a reference
// read by hessian.js returns the stored container itself, sometimes bare and
// sometimes in its {$class, $} wrapper, so identity is keyed on the inner
// container.
function describe(v, seen) {
  if (v === null || v === undefined) {
    return { t: 'null' };
  }
  if (v[PRIMITIVE]) {
    switch (v.$class) {
      case 'bool':
        return { t: 'bool', v: v.$ };
      case 'int':
        return { t: 'int', v: v.$ };
      case 'long':
        return { t: 'long', v: String(v.$) }; // handleLong answers a string past 2^53
      case 'double':
        return { t: 'double', v: fromNumber(v.$) };
      case 'date':
        return { t: 'date', v: v.$.getTime() };
      case 'string':
        return { t: 'string', v: v.$ };
      case 'binary':
        return { t: 'binary', v: v.$.toString('base64') };
    }
  }
  const inner = isWrapper(v) ? v.$ : v;
  if (seen.has(inner)) {
    return { t: 'ref', id: seen.get(inner) };
  }
  const id = 'n' + seen.size;
  seen.set(inner, id);
  const type = isWrapper(v) ? v.$class : '';
  if (Array.isArray(inner)) {
    return { t: 'list', id, type, items: inner.map((x) => describe(x, seen)) };
  }
  if (inner instanceof Error) {
    const cause = inner.cause;
    const selfCause = cause === undefined || cause === null || cause === v ||
      (isWrapper(cause) && cause.$ === inner);
    return {
      t: 'exception',
      class: inner.name,
      message: inner.message,
      cause: selfCause ? null : describe(cause, seen),
    };
  }
  if (inner.$map instanceof Map) {
    const entries = [];
    for (const [k, x] of inner.$map) {
      entries.push([describe(k, seen), describe(x, seen)]);
    }
    return { t: 'map', id, type, entries };
  }
  const fields = Object.keys(inner).map((name) => [name, describe(inner[name], seen)]);
  return { t: 'object', id, class: type, fields };
}

function handle(line) {
  try {
    const req = JSON.parse(line);
    if (req.op === 'encode') {
      const encoder = new hessian.EncoderV2({ mapTypes: MAP_TYPES });
      encoder.write(build(req.desc, new Map()));
      return { hex: encoder.get().toString('hex') };
    }
    if (req.op === 'decode') {
      const decoder = new TypedDecoder(Buffer.from(req.hex, 'hex'));
      const value = decoder.read(true);
      const left = decoder.byteBuffer.limit() - decoder.byteBuffer.position();
      if (left !== 0) {
        throw new Error(left + ' bytes left after the value');
      }
      return { desc: describe(value, new Map()) };
    }
    throw new Error('unknown op ' + req.op);
  } catch (err) {
    return { error: String(err && err.stack || err) };
  }
}

const out = [];
readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  .on('line', (line) => {
    if (line !== '') {
      out.push(JSON.stringify(handle(line)));
    }
  })
  .on('close', () => {
    process.stdout.write(out.length ? out.join('\n') + '\n' : '');
  });
