package hessian

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// maxEncodeDepth bounds the nesting the Encoder follows, so a Go value that
// contains itself (a map holding itself) fails instead of recursing forever.
// Shared and circular *List, *Map, *Object and *Exception values do not
// nest: they are written once and referred to after.
const maxEncodeDepth = 1024

// Encoder appends Hessian 2.0 values to a byte slice, choosing the same
// (shortest) forms as hessian-lite. Class definitions, type strings and
// references are shared by every value written until Reset. An Encoder is
// not safe for concurrent use.
type Encoder struct {
	buf   []byte
	err   error
	depth int

	// refCount numbers every list, map and object written, as the reader
	// numbers them; the tables remember the pointers that may be seen again.
	refCount int
	objRefs  refTable[*Object]
	listRefs refTable[*List]
	mapRefs  refTable[*Map]
	excRefs  refTable[*Exception]

	classes  []encClass
	classIdx map[string]int // class name → its latest definition, once there are many
	names    []string       // backing store of the field lists of classes
	defCache []cachedDef    // encoded definitions, kept across Reset
	types    map[string]int

	keys []string // scratch for sorting map[string]… keys
}

// refTable maps pointers to their reference numbers: the first few in a
// small array (most payloads have few containers), the rest in a map.
type refTable[K comparable] struct {
	keys [8]K
	refs [8]int
	n    int
	m    map[K]int
}

func (t *refTable[K]) get(k K) (int, bool) {
	for i := range t.n {
		if t.keys[i] == k {
			return t.refs[i], true
		}
	}
	if len(t.m) == 0 {
		return 0, false
	}
	ref, ok := t.m[k]
	return ref, ok
}

func (t *refTable[K]) put(k K, ref int) {
	if t.n < len(t.keys) {
		t.keys[t.n] = k
		t.refs[t.n] = ref
		t.n++
		return
	}
	if t.m == nil {
		t.m = make(map[K]int)
	}
	t.m[k] = ref
}

func (t *refTable[K]) reset() {
	clear(t.keys[:t.n])
	t.n = 0
	if len(t.m) > 0 {
		clear(t.m)
	}
}

// encClass is a class definition already written.
type encClass struct {
	name   string
	fields []string
	prev   int // earlier definition of the same class name, or -1
}

// NewEncoder returns an Encoder that appends to dst.
func NewEncoder(dst []byte) *Encoder {
	return &Encoder{buf: dst}
}

// Reset makes the Encoder append to dst and forget class definitions, type
// strings, references and any error, keeping allocated capacity.
func (e *Encoder) Reset(dst []byte) {
	e.buf = dst
	e.err = nil
	e.depth = 0
	e.refCount = 0
	e.objRefs.reset()
	e.listRefs.reset()
	e.mapRefs.reset()
	e.excRefs.reset()
	clear(e.classes)
	e.classes = e.classes[:0]
	if len(e.classIdx) > 0 {
		clear(e.classIdx)
	}
	clear(e.names)
	e.names = e.names[:0]
	if len(e.types) > 0 {
		clear(e.types)
	}
	clear(e.keys)
	e.keys = e.keys[:0]
}

// Bytes returns the encoded bytes: dst with everything written appended.
func (e *Encoder) Bytes() []byte { return e.buf }

// Encode writes v: a value of the model (see the package documentation) or
// a plain Go value. The error names the Go type it cannot encode; after an
// error the output is cut back to where this call started and every later
// Encode returns the same error until Reset.
func (e *Encoder) Encode(v any) error {
	if e.err != nil {
		return e.err
	}
	mark := len(e.buf)
	if err := e.encode(v); err != nil {
		e.buf = e.buf[:mark]
		e.err = err
		return err
	}
	return nil
}

func (e *Encoder) encode(v any) error {
	switch x := v.(type) {
	case nil:
		e.WriteNull()
	case bool:
		e.WriteBool(x)
	case int32:
		e.WriteInt(x)
	case int64:
		e.WriteLong(x)
	case float64:
		e.WriteDouble(x)
	case string:
		e.WriteString(x)
	case []byte:
		if x == nil {
			e.WriteNull()
		} else {
			e.WriteBinary(x)
		}
	case time.Time:
		e.WriteDate(x)
	case *Object:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.encodeObject(x)
	case *List:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.encodeList(x)
	case *Map:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.encodeMap(x)
	case Object:
		return e.writeObject(x.Class, x.Fields)
	case List:
		e.refCount++
		return e.writeListItems(x.Type, x.Items)
	case Map:
		e.refCount++
		return e.writeMapEntries(x.Type, x.Entries)
	case int:
		e.writeGoInt(int64(x))
	case int8:
		e.WriteInt(int32(x))
	case int16:
		e.WriteInt(int32(x))
	case uint8:
		e.WriteInt(int32(x))
	case uint16:
		e.WriteInt(int32(x))
	case uint32:
		e.WriteLong(int64(x))
	case uint:
		return e.writeUint(uint64(x), v)
	case uint64:
		return e.writeUint(x, v)
	case float32:
		e.WriteDouble(float64(x))
	case []any:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.refCount++
		return e.writeListItems("", x)
	case []string:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteListStart("", len(x))
		for _, s := range x {
			e.WriteString(s)
		}
	case []int32:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteListStart("", len(x))
		for _, n := range x {
			e.WriteInt(n)
		}
	case []int64:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteListStart("", len(x))
		for _, n := range x {
			e.WriteLong(n)
		}
	case []int:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteListStart("", len(x))
		for _, n := range x {
			e.writeGoInt(int64(n))
		}
	case []float64:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteListStart("", len(x))
		for _, f := range x {
			e.WriteDouble(f)
		}
	case []bool:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteListStart("", len(x))
		for _, b := range x {
			e.WriteBool(b)
		}
	case map[string]any:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.encodeStringMap(x)
	case map[string]string:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return encodeSortedMap(e, x, func(s string) error { e.WriteString(s); return nil })
	case map[any]any:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.encodeAnyMap(x)
	case BigDecimal:
		return e.writeBigDecimal(x)
	case *BigDecimal:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.writeBigDecimal(*x)
	case BigInteger:
		return e.writeBigInteger(x)
	case *BigInteger:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.writeBigInteger(*x)
	case *Exception:
		if x == nil {
			e.WriteNull()
			return nil
		}
		return e.encodeException(x)
	case *time.Time:
		if x == nil {
			e.WriteNull()
			return nil
		}
		e.WriteDate(*x)
	default:
		if ok := e.encodeJavaValue(v); !ok {
			return fmt.Errorf("hessian: cannot encode Go type %T", v)
		}
	}
	return nil
}

func (e *Encoder) writeGoInt(n int64) {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		e.WriteInt(int32(n))
	} else {
		e.WriteLong(n)
	}
}

func (e *Encoder) writeUint(n uint64, v any) error {
	if n > math.MaxInt64 {
		return fmt.Errorf("hessian: cannot encode %T %d: it does not fit in a Java long", v, n)
	}
	e.WriteLong(int64(n))
	return nil
}

// enter records one more level of nesting.
func (e *Encoder) enter() error {
	e.depth++
	if e.depth > maxEncodeDepth {
		return fmt.Errorf("hessian: value nested deeper than %d levels (does it contain itself?)", maxEncodeDepth)
	}
	return nil
}

func (e *Encoder) encodeList(l *List) error {
	if ref, ok := e.listRefs.get(l); ok {
		e.writeRef(ref)
		return nil
	}
	e.listRefs.put(l, e.refCount)
	e.refCount++
	return e.writeListItems(l.Type, l.Items)
}

// writeListItems writes a fixed-length list; the caller has counted its ref.
func (e *Encoder) writeListItems(typ string, items []any) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.listHeader(typ, len(items))
	for _, it := range items {
		if err := e.encode(it); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}

func (e *Encoder) encodeMap(m *Map) error {
	if ref, ok := e.mapRefs.get(m); ok {
		e.writeRef(ref)
		return nil
	}
	e.mapRefs.put(m, e.refCount)
	e.refCount++
	return e.writeMapEntries(m.Type, m.Entries)
}

// writeMapEntries writes a map; the caller has counted its ref.
func (e *Encoder) writeMapEntries(typ string, entries []Entry) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.mapHeader(typ)
	for i := range entries {
		if err := e.encode(entries[i].Key); err != nil {
			return err
		}
		if err := e.encode(entries[i].Value); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, tagEnd)
	e.depth--
	return nil
}

// encodeStringMap writes a map[string]any as an untyped map, keys sorted so
// the output is deterministic.
func (e *Encoder) encodeStringMap(m map[string]any) error {
	return encodeSortedMap(e, m, e.encode)
}

func encodeSortedMap[V any](e *Encoder, m map[string]V, encodeValue func(V) error) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.WriteMapStart("")
	base := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[base:]
	slices.Sort(keys)
	for _, k := range keys {
		e.WriteString(k)
		if err := encodeValue(m[k]); err != nil {
			return err
		}
	}
	clear(e.keys[base:])
	e.keys = e.keys[:base]
	e.WriteMapEnd()
	e.depth--
	return nil
}

// encodeAnyMap writes a map[any]any in Go's iteration order.
func (e *Encoder) encodeAnyMap(m map[any]any) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.WriteMapStart("")
	for k, v := range m {
		if err := e.encode(k); err != nil {
			return err
		}
		if err := e.encode(v); err != nil {
			return err
		}
	}
	e.WriteMapEnd()
	e.depth--
	return nil
}

func (e *Encoder) encodeObject(o *Object) error {
	if ref, ok := e.objRefs.get(o); ok {
		e.writeRef(ref)
		return nil
	}
	e.objRefs.put(o, e.refCount)
	return e.writeObject(o.Class, o.Fields)
}

// writeObject counts the object's ref and writes its instance (and its
// class definition the first time).
func (e *Encoder) writeObject(class string, fields []Field) error {
	e.refCount++
	if err := e.enter(); err != nil {
		return err
	}
	idx, found := e.findObjectClass(class, fields)
	if !found {
		idx = e.defineObjectClass(class, fields)
	}
	e.instanceHeader(idx)
	for i := range fields {
		if err := e.encode(fields[i].Value); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}

// findClass returns the definition written for class with these fields.
func (e *Encoder) findClass(class string, fields []string) (int, bool) {
	for i, ok := e.firstClass(class); ok; i, ok = e.nextClass(class, i) {
		if slices.Equal(e.classes[i].fields, fields) {
			return i, true
		}
	}
	return 0, false
}

// findObjectClass is findClass for the fields of an Object.
func (e *Encoder) findObjectClass(class string, fields []Field) (int, bool) {
next:
	for i, ok := e.firstClass(class); ok; i, ok = e.nextClass(class, i) {
		c := &e.classes[i]
		if len(c.fields) != len(fields) {
			continue
		}
		for j, f := range c.fields {
			if f != fields[j].Name {
				continue next
			}
		}
		return i, true
	}
	return 0, false
}

// firstClass and nextClass walk the definitions of class, newest first:
// by scanning while there are few, through classIdx and the prev links
// after.
func (e *Encoder) firstClass(class string) (int, bool) {
	if len(e.classes) <= manyClasses {
		return e.scanClass(class, len(e.classes)-1)
	}
	i, ok := e.classIdx[class]
	return i, ok
}

func (e *Encoder) nextClass(class string, i int) (int, bool) {
	if len(e.classes) <= manyClasses {
		return e.scanClass(class, i-1)
	}
	i = e.classes[i].prev
	return i, i >= 0
}

func (e *Encoder) scanClass(class string, from int) (int, bool) {
	for i := from; i >= 0; i-- {
		if e.classes[i].name == class {
			return i, true
		}
	}
	return 0, false
}

// manyClasses is the number of definitions past which lookups go through
// a map rather than a scan.
const manyClasses = 8

// defineClass writes a class definition and returns its index. The
// encoder keeps the field list; the caller never changes it.
func (e *Encoder) defineClass(class string, fields []string) int {
	for i := range e.defCache {
		if c := &e.defCache[i]; c.class == class && slices.Equal(c.fields, fields) {
			e.buf = append(e.buf, c.wire...)
			return e.addClass(class, c.fields)
		}
	}
	start := len(e.buf)
	e.writeClassDef(class, fields)
	e.cacheDef(class, fields, start)
	return e.addClass(class, fields)
}

// defineObjectClass is defineClass for the fields of an Object.
func (e *Encoder) defineObjectClass(class string, fields []Field) int {
next:
	for i := range e.defCache {
		c := &e.defCache[i]
		if c.class != class || len(c.fields) != len(fields) {
			continue
		}
		for j, f := range c.fields {
			if f != fields[j].Name {
				continue next
			}
		}
		e.buf = append(e.buf, c.wire...)
		return e.addClass(class, c.fields)
	}
	start := len(e.names)
	e.names = slices.Grow(e.names, len(fields))[:start+len(fields)]
	names := e.names[start : start+len(fields) : start+len(fields)]
	for i := range fields {
		names[i] = fields[i].Name
	}
	mark := len(e.buf)
	e.writeClassDef(class, names)
	e.cacheDef(class, names, mark)
	return e.addClass(class, names)
}

func (e *Encoder) writeClassDef(class string, fields []string) {
	e.buf = append(e.buf, tagClassDef)
	e.WriteString(class)
	e.WriteInt(int32(len(fields)))
	for _, f := range fields {
		e.WriteString(f)
	}
}

// defCacheSize bounds the class definitions whose bytes an Encoder keeps
// across Reset: a pooled encoder writes the same few classes request after
// request, and copying their definitions beats writing them again.
const defCacheSize = 32

// cachedDef is the encoded form of a class definition.
type cachedDef struct {
	class  string
	fields []string
	wire   []byte
}

// cacheDef remembers the definition just written from e.buf[start:], while
// there is room. The cache owns copies of the names, so it pins no memory
// of the values encoded.
func (e *Encoder) cacheDef(class string, fields []string, start int) {
	if len(e.defCache) >= defCacheSize {
		return
	}
	own := make([]string, len(fields))
	for i, f := range fields {
		own[i] = strings.Clone(f)
	}
	e.defCache = append(e.defCache, cachedDef{class: strings.Clone(class), fields: own, wire: slices.Clone(e.buf[start:])})
}

// addClass records a definition written to the stream and returns its index.
func (e *Encoder) addClass(class string, fields []string) int {
	prev, ok := e.firstClass(class)
	if !ok {
		prev = -1
	}
	idx := len(e.classes)
	e.classes = append(e.classes, encClass{name: class, fields: fields, prev: prev})
	switch {
	case len(e.classes) == manyClasses+1: // from scans to the map
		if e.classIdx == nil {
			e.classIdx = make(map[string]int)
		}
		clear(e.classIdx)
		for i, c := range e.classes {
			e.classIdx[c.name] = i
		}
	case len(e.classes) > manyClasses:
		e.classIdx[class] = idx
	}
	return idx
}

func (e *Encoder) instanceHeader(idx int) {
	if idx <= objectDirectMax {
		e.buf = append(e.buf, byte(tagObjectDirect+idx))
		return
	}
	e.buf = append(e.buf, tagObject)
	e.WriteInt(int32(idx))
}

func (e *Encoder) writeRef(ref int) {
	e.buf = append(e.buf, tagRef)
	e.WriteInt(int32(ref))
}

// WriteNull writes null.
func (e *Encoder) WriteNull() { e.buf = append(e.buf, tagNull) }

// WriteBool writes a boolean.
func (e *Encoder) WriteBool(b bool) {
	if b {
		e.buf = append(e.buf, tagTrue)
	} else {
		e.buf = append(e.buf, tagFalse)
	}
}

// WriteInt writes a 32-bit int in its shortest form.
func (e *Encoder) WriteInt(v int32) {
	switch {
	case v >= -0x10 && v <= 0x2f:
		e.buf = append(e.buf, byte(v+tagIntZero))
	case v >= -0x800 && v <= 0x7ff:
		e.buf = append(e.buf, byte(tagIntByteZero+v>>8), byte(v))
	case v >= -0x40000 && v <= 0x3ffff:
		e.buf = append(e.buf, byte(tagIntShortZero+v>>16), byte(v>>8), byte(v))
	default:
		e.buf = append(e.buf, tagInt, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
}

// WriteLong writes a 64-bit long in its shortest form.
func (e *Encoder) WriteLong(v int64) {
	switch {
	case v >= -8 && v <= 15:
		e.buf = append(e.buf, byte(v+tagLongZero))
	case v >= -0x800 && v <= 0x7ff:
		e.buf = append(e.buf, byte(tagLongByteZero+v>>8), byte(v))
	case v >= -0x40000 && v <= 0x3ffff:
		e.buf = append(e.buf, byte(tagLongShortZero+v>>16), byte(v>>8), byte(v))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		e.buf = append(e.buf, tagLongInt, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	default:
		e.buf = append(e.buf, tagLong, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
			byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
}

// javaInt converts like Java's (int) cast of a double: NaN is 0, values out
// of range saturate, the rest truncate toward zero.
func javaInt(v float64) int32 {
	switch {
	case v != v:
		return 0
	case v >= math.MaxInt32:
		return math.MaxInt32
	case v <= math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}

// WriteDouble writes a double in the form hessian-lite picks: the one-byte
// zero and one, a byte or short for small integral values, an int of
// thousandths when that is exact, else all 64 bits. Like hessian-lite it
// writes -0.0 as the zero form.
func (e *Encoder) WriteDouble(v float64) {
	if iv := javaInt(v); float64(iv) == v {
		switch {
		case iv == 0:
			e.buf = append(e.buf, tagDoubleZero)
			return
		case iv == 1:
			e.buf = append(e.buf, tagDoubleOne)
			return
		case iv >= -0x80 && iv < 0x80:
			e.buf = append(e.buf, tagDoubleByte, byte(iv))
			return
		case iv >= -0x8000 && iv < 0x8000:
			e.buf = append(e.buf, tagDoubleShort, byte(iv>>8), byte(iv))
			return
		}
	}
	if mills := javaInt(v * 1000); 0.001*float64(mills) == v {
		e.buf = append(e.buf, tagDoubleMill, byte(mills>>24), byte(mills>>16), byte(mills>>8), byte(mills))
		return
	}
	bits := math.Float64bits(v)
	if v != v {
		bits = 0x7ff8000000000000 // Java's doubleToLongBits has one NaN
	}
	e.buf = append(e.buf, tagDouble, byte(bits>>56), byte(bits>>48), byte(bits>>40), byte(bits>>32),
		byte(bits>>24), byte(bits>>16), byte(bits>>8), byte(bits))
}

// WriteDate writes a date (milliseconds since the epoch, UTC), in minutes
// when it falls on a whole minute that fits.
func (e *Encoder) WriteDate(t time.Time) {
	ms := t.UnixMilli()
	if ms%60000 == 0 {
		if m := ms / 60000; m >= math.MinInt32 && m <= math.MaxInt32 {
			e.buf = append(e.buf, tagDateMinutes, byte(m>>24), byte(m>>16), byte(m>>8), byte(m))
			return
		}
	}
	e.buf = append(e.buf, tagDateMillis, byte(ms>>56), byte(ms>>48), byte(ms>>40), byte(ms>>32),
		byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms))
}

// WriteBinary writes bytes, in chunks of 32 KiB when longer.
func (e *Encoder) WriteBinary(b []byte) {
	e.buf = slices.Grow(e.buf, len(b)+3+3*(len(b)/chunkMax))
	for len(b) > chunkMax {
		e.buf = append(e.buf, tagBinaryChunk, chunkMax>>8, chunkMax&0xff)
		e.buf = append(e.buf, b[:chunkMax]...)
		b = b[chunkMax:]
	}
	n := len(b)
	switch {
	case n <= binaryDirectMax:
		e.buf = append(e.buf, byte(tagBinaryDirect+n))
	case n <= binaryShortMax:
		e.buf = append(e.buf, byte(tagBinaryShort+n>>8), byte(n))
	default:
		e.buf = append(e.buf, tagBinaryFinal, byte(n>>8), byte(n))
	}
	e.buf = append(e.buf, b...)
}

// WriteString writes a string. Its length counts UTF-16 units and a
// character outside the BMP is written as two 3-byte surrogates, as Java
// does; strings over 32 Ki units are split into chunks as hessian-lite does.
// Invalid UTF-8 is written as U+FFFD.
func (e *Encoder) WriteString(s string) {
	if isASCIIString(s) {
		if len(s) > chunkMax {
			e.buf = slices.Grow(e.buf, len(s)+3*(len(s)/chunkMax+1))
			for len(s) > chunkMax {
				e.buf = append(e.buf, tagStringChunk, chunkMax>>8, chunkMax&0xff)
				e.buf = append(e.buf, s[:chunkMax]...)
				s = s[chunkMax:]
			}
		}
		e.stringHeader(len(s), true)
		e.buf = append(e.buf, s...)
		return
	}
	units, plain := utf16Length(s)
	e.buf = slices.Grow(e.buf, len(s)+3*(units/chunkMax+1))
	start := 0
	for units > chunkMax {
		end, n := chunkEnd(s, start)
		e.stringHeader(n, false)
		e.appendJavaUTF8(s[start:end], plain)
		units -= n
		start = end
	}
	e.stringHeader(units, true)
	e.appendJavaUTF8(s[start:], plain)
}

// stringHeader writes the header of a chunk of n UTF-16 units.
func (e *Encoder) stringHeader(n int, final bool) {
	switch {
	case !final:
		e.buf = append(e.buf, tagStringChunk, byte(n>>8), byte(n))
	case n <= stringDirectMax:
		e.buf = append(e.buf, byte(tagStringDirect+n))
	case n <= stringShortMax:
		e.buf = append(e.buf, byte(tagStringShort+n>>8), byte(n))
	default:
		e.buf = append(e.buf, tagStringFinal, byte(n>>8), byte(n))
	}
}

// appendJavaUTF8 appends s as Java's writer encodes it: plain is set when
// s is valid UTF-8 without characters outside the BMP, which Java encodes
// byte for byte the same.
func (e *Encoder) appendJavaUTF8(s string, plain bool) {
	if plain {
		e.buf = append(e.buf, s...)
		return
	}
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			e.buf = appendUnit3(e.buf, 0xd800+r>>10)
			e.buf = appendUnit3(e.buf, 0xdc00+r&0x3ff)
			continue
		}
		e.buf = utf8.AppendRune(e.buf, r) // invalid bytes arrive as U+FFFD
	}
}

// appendUnit3 writes a UTF-16 unit as a 3-byte sequence.
func appendUnit3(b []byte, u rune) []byte {
	return append(b, byte(0xe0|u>>12), byte(0x80|u>>6&0x3f), byte(0x80|u&0x3f))
}

// utf16Length returns the length of s in UTF-16 units, and whether s can be
// written as it is (valid UTF-8, nothing outside the BMP).
func utf16Length(s string) (units int, plain bool) {
	plain = true
	for i := 0; i < len(s); {
		if i+8 <= len(s) && asciiWord(s, i) {
			i += 8
			units += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			units++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			plain = false
			units++
		case r >= 0x10000:
			plain = false
			units += 2
		default:
			units++
		}
	}
	return units, plain
}

// chunkEnd finds the end of the chunk starting at byte start: 0x8000 UTF-16
// units, or one fewer when the last would be the first half of a pair.
func chunkEnd(s string, start int) (end, units int) {
	i := start
	for i < len(s) {
		if i+8 <= len(s) && units+8 <= chunkMax && asciiWord(s, i) {
			i += 8
			units += 8
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if units == chunkMax {
				break
			}
			i++
			units++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > chunkMax {
			break
		}
		i += size
		units += w
	}
	return i, units
}

// isASCIIString reports whether every byte of s is below 0x80.
func isASCIIString(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !asciiWord(s, i) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiWord reports whether the 8 bytes of s at i are all below 0x80; the
// compiler turns the byte loads into one 64-bit load.
func asciiWord(s string, i int) bool {
	w := s[i : i+8]
	v := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	return v&0x8080808080808080 == 0
}

// WriteListStart writes the header of a list; typ "" writes an untyped one.
// A length below zero starts a variable-length list, closed by WriteListEnd;
// otherwise exactly length values must follow.
func (e *Encoder) WriteListStart(typ string, length int) {
	e.refCount++
	if length < 0 {
		if typ != "" {
			e.buf = append(e.buf, tagListVarTyped)
			e.writeType(typ)
		} else {
			e.buf = append(e.buf, tagListVarUntyped)
		}
		return
	}
	e.listHeader(typ, length)
}

func (e *Encoder) listHeader(typ string, length int) {
	switch {
	case length <= listDirectMax && typ != "":
		e.buf = append(e.buf, byte(tagListTypedLen+length))
		e.writeType(typ)
	case length <= listDirectMax:
		e.buf = append(e.buf, byte(tagListLen+length))
	case typ != "":
		e.buf = append(e.buf, tagListFixedTyped)
		e.writeType(typ)
		e.WriteInt(int32(length))
	default:
		e.buf = append(e.buf, tagListFixedUntyped)
		e.WriteInt(int32(length))
	}
}

// WriteListEnd closes a variable-length list.
func (e *Encoder) WriteListEnd() { e.buf = append(e.buf, tagEnd) }

// WriteMapStart writes the header of a map; typ "" writes an untyped map
// ('H'). Key and value pairs follow, then WriteMapEnd.
func (e *Encoder) WriteMapStart(typ string) {
	e.refCount++
	e.mapHeader(typ)
}

func (e *Encoder) mapHeader(typ string) {
	if typ == "" {
		e.buf = append(e.buf, tagMapUntyped)
		return
	}
	e.buf = append(e.buf, tagMapTyped)
	e.writeType(typ)
}

// WriteMapEnd closes a map.
func (e *Encoder) WriteMapEnd() { e.buf = append(e.buf, tagEnd) }

// WriteObjectStart writes the header of an object of class with these
// fields, and before it the class definition the first time this class and
// field list is written. The caller writes len(fields) values next, in order.
func (e *Encoder) WriteObjectStart(class string, fields []string) {
	e.objectStart(class, fields, true)
}

// objectStart counts the object's ref and writes its header. The field list
// is copied when a definition keeps it, unless the caller never changes it.
func (e *Encoder) objectStart(class string, fields []string, clone bool) {
	e.refCount++
	idx, found := e.findClass(class, fields)
	if !found {
		if clone { // the caller may change its slice later
			start := len(e.names)
			e.names = append(e.names, fields...)
			fields = e.names[start:len(e.names):len(e.names)]
		}
		idx = e.defineClass(class, fields)
	}
	e.instanceHeader(idx)
}

// writeType writes a list or map type, as a reference to the same type
// written earlier when there is one.
func (e *Encoder) writeType(typ string) {
	if idx, ok := e.types[typ]; ok {
		e.WriteInt(int32(idx))
		return
	}
	if e.types == nil {
		e.types = make(map[string]int)
	}
	e.types[typ] = len(e.types)
	e.WriteString(typ)
}
