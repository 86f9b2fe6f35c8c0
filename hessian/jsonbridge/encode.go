package jsonbridge

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/dubbogw/dubbogw/hessian"
)

// Schema gives the field types of DTO classes, for nested values JSON cannot
// type by itself. Keys are class names; values map field names to Java types
// written as Dubbo writes parameter types:
//
//	Schema{"com.example.User": {
//		"address":  "com.example.Address",
//		"tags":     "java.util.List<java.lang.String>",
//		"birthday": "java.util.Date",
//		"salary":   "java.math.BigDecimal",
//	}}
//
// Fields a class's entry does not list are inferred as for java.lang.Object.
type Schema map[string]map[string]string

// EncodeOptions configure an Encoder.
type EncodeOptions struct {
	// Generic selects the form Dubbo's generic invocation ($invoke) expects:
	// DTOs become maps carrying a "class" key and enums their constant name,
	// which the provider's PojoUtils turns back into objects. When false,
	// DTOs become hessian objects (class definition plus fields) and enums
	// hessian-lite's enum objects, for typed invocation.
	Generic bool
	// Schema types the fields of DTO classes.
	Schema Schema
	// Enums declares enum classes, each with its constant names; a nil or
	// empty list accepts any name (the provider then checks it).
	Enums map[string][]string
	// RestrictClasses makes a "class" key in a JSON object (and, in generic
	// invocation, inside a map, where the provider's PojoUtils reads it
	// too) name only the declared class, a class of Schema or Enums, a
	// built-in type, or one of AllowClasses; other names are refused, and
	// so are such classes in types compiled with ClientType. Turn it on
	// for routes open to untrusted clients: it stops them from making the
	// provider instantiate arbitrary classes. Known deserialization
	// gadgets (DeniedClass) are refused whatever the options.
	RestrictClasses bool
	// AllowClasses are the classes RestrictClasses lets clients name
	// beyond the declared ones: exact names or package prefixes ending in
	// ".*" ("com.example.dto.*").
	AllowClasses []string
	// MaxDepth bounds the nesting of arrays and objects. 0 means 128.
	MaxDepth int
	// MaxValues bounds the JSON values (scalars, keys and containers) of one
	// Encode, so that the token tape of a body stays a small multiple of a
	// sensible body. 0 means DefaultMaxValues.
	MaxValues int
}

// DefaultMaxValues is the default bound of JSON values in one Encode.
const DefaultMaxValues = 1 << 20

// Encoder writes JSON values as hessian arguments of declared Java types.
// Build one per route (or per service) at configuration time with
// NewEncoder; it is immutable and safe for concurrent use, and keeps scratch
// buffers between calls so that the request path allocates little.
type Encoder struct {
	generic   bool
	restrict  bool
	allowed   classList
	maxDepth  int
	maxValues int
	classes   map[string]*class
	enums     map[string]*enum
	anyType   *Type
	states    sync.Pool // *encodeState
}

// NewEncoder compiles opts: every Schema type is parsed here, once, so that a
// mistake in the configuration is reported before the first request.
func NewEncoder(opts EncodeOptions) (*Encoder, error) {
	enc := &Encoder{
		generic:   opts.Generic,
		restrict:  opts.RestrictClasses,
		allowed:   newClassList(opts.AllowClasses),
		maxDepth:  opts.MaxDepth,
		maxValues: opts.MaxValues,
		classes:   make(map[string]*class, len(opts.Schema)),
		enums:     make(map[string]*enum, len(opts.Enums)),
		anyType:   &Type{name: "java.lang.Object", kind: kindAny},
	}
	if enc.maxDepth <= 0 {
		enc.maxDepth = 128
	}
	if enc.maxValues <= 0 {
		enc.maxValues = DefaultMaxValues
	}
	for _, p := range opts.AllowClasses {
		if DeniedClass(strings.TrimSuffix(p, "*")) {
			return nil, fmt.Errorf("allowed class %q: a known deserialization gadget is never allowed", p)
		}
	}
	for name, constants := range opts.Enums {
		if !isClassName(name) {
			return nil, fmt.Errorf("enum %q: not a Java class name", name)
		}
		if DeniedClass(name) {
			return nil, fmt.Errorf("enum %q: a known deserialization gadget is never allowed", name)
		}
		if _, ok := builtins[name]; ok {
			return nil, fmt.Errorf("enum %q: a built-in type, not an enum", name)
		}
		e := &enum{}
		if len(constants) > 0 {
			e.constants = make(map[string]struct{}, len(constants))
			for _, c := range constants {
				e.constants[c] = struct{}{}
			}
		}
		enc.enums[name] = e
	}
	// Classes first, so that fields can refer to any class, themselves included.
	for name := range opts.Schema {
		if !isClassName(name) {
			return nil, fmt.Errorf("schema class %q: not a Java class name", name)
		}
		if DeniedClass(name) {
			return nil, fmt.Errorf("schema class %q: a known deserialization gadget is never allowed", name)
		}
		if _, ok := builtins[name]; ok {
			return nil, fmt.Errorf("schema class %q: a built-in type has no schema", name)
		}
		if _, ok := enc.enums[name]; ok {
			return nil, fmt.Errorf("schema class %q: declared as an enum too", name)
		}
		enc.classes[name] = &class{name: name}
	}
	for name, fields := range opts.Schema {
		c := enc.classes[name]
		c.fields = make(map[string]*Type, len(fields))
		for field, javaType := range fields {
			t, err := enc.Type(javaType)
			if err != nil {
				return nil, fmt.Errorf("schema class %s, field %s: %w", name, field, err)
			}
			c.fields[field] = t
		}
	}
	return enc, nil
}

// Type compiles a declared Java type. It accepts the names Dubbo writes
// ("int", "java.lang.String", "com.example.User"), JVM array descriptors
// ("[I", "[Ljava.lang.String;"), Java source forms ("int[]",
// "java.util.List<com.example.Item>", "java.util.Map<java.lang.String,
// java.lang.Integer>", wildcards "? extends T") and java.lang's simple names
// ("String", "Integer").
//
// A type is at most MaxTypeLen bytes long, with at most MaxArrayDims array
// dimensions and MaxTypeNesting levels of type arguments; it never names
// a known deserialization gadget (DeniedClass).
func (enc *Encoder) Type(javaType string) (*Type, error) {
	p := typeParser{enc: enc, src: javaType}
	return p.parse()
}

// ClientType compiles a type a client chose (the pass-through's "types"):
// as Type, and with RestrictClasses every class it names, type arguments
// and array components included, must be one a "class" key could name.
func (enc *Encoder) ClientType(javaType string) (*Type, error) {
	p := typeParser{enc: enc, src: javaType, client: true}
	return p.parse()
}

// Encode writes the JSON value data as Java type t into e. It reads data in
// one pass into a compact token tape (no value tree, no reflection) and then
// writes hessian directly. On error, e holds a partial value and must be
// reset; the error is a *PathError.
func (enc *Encoder) Encode(e *hessian.Encoder, data []byte, t *Type) error {
	return enc.encode(context.Background(), e, string(data), t)
}

// EncodeContext is Encode that gives up, with ctx's error, once ctx is
// done: a large body is cut short at the caller's deadline instead of
// being encoded for nothing. It reads data in place, without the copy
// Encode makes: data must not change until e is Reset (e keeps class
// and field names that are slices of it).
func (enc *Encoder) EncodeContext(ctx context.Context, e *hessian.Encoder, data []byte, t *Type) error {
	return enc.encode(ctx, e, unsafe.String(unsafe.SliceData(data), len(data)), t)
}

func (enc *Encoder) encode(ctx context.Context, e *hessian.Encoder, src string, t *Type) error {
	s := enc.state(e)
	defer enc.release(s)
	s.ctx = ctx
	if err := s.scan(src); err != nil {
		return err
	}
	return s.value(0, t)
}

// EncodeArgs writes the JSON array data as the arguments of a method with
// parameter types types, one hessian value per element, in order (the
// caller writes whatever framing its call needs around them). The array
// must have exactly one element per type; errors name paths like "$[1].id".
func (enc *Encoder) EncodeArgs(e *hessian.Encoder, data []byte, types []*Type) error {
	return enc.encodeArgs(context.Background(), e, string(data), types)
}

// EncodeArgsContext is EncodeArgs that gives up, with ctx's error, once
// ctx is done. Like EncodeContext it reads data in place: data must not
// change until e is Reset.
func (enc *Encoder) EncodeArgsContext(ctx context.Context, e *hessian.Encoder, data []byte, types []*Type) error {
	return enc.encodeArgs(ctx, e, unsafe.String(unsafe.SliceData(data), len(data)), types)
}

func (enc *Encoder) encodeArgs(ctx context.Context, e *hessian.Encoder, src string, types []*Type) error {
	s := enc.state(e)
	defer enc.release(s)
	s.ctx = ctx
	if err := s.scan(src); err != nil {
		return err
	}
	root := &s.toks[0]
	if root.kind != tokArray || int(root.count) != len(types) {
		return &PathError{Path: "$", Msg: fmt.Sprintf("want a JSON array of %d arguments, found %s", len(types), s.describe(0))}
	}
	s.path = append(s.path, pathSeg{isIndex: true})
	arg := 0
	for c := int32(1); c < root.next; c = s.toks[c].next {
		s.path[0].index = arg
		if err := s.value(c, types[arg]); err != nil {
			return err
		}
		arg++
	}
	return nil
}

// EncodeString writes a string that arrived outside a JSON body (a query
// parameter, a path segment, a header) as Java type t: it is converted the
// way a JSON string is (numbers, booleans, dates, enums... are parsed from
// it), except that for lists, arrays other than byte[] and char[], and maps,
// s is read as JSON text, and for DTOs too when it starts with '{' or is
// "null".
func (enc *Encoder) EncodeString(e *hessian.Encoder, str string, t *Type) error {
	s := enc.state(e)
	defer enc.release(s)
	switch t.kind {
	case kindClass:
		if trimmed := strings.TrimLeft(str, " \t\r\n"); !strings.HasPrefix(trimmed, "{") && trimmed != "null" {
			break // a constant of an enum the options do not declare, say
		}
		fallthrough
	case kindList, kindMap:
		if err := s.scan(str); err != nil {
			return err
		}
		return s.value(0, t)
	}
	return s.fromString(str, t, "string")
}

// Encode is the one-shot form of Encoder.Encode: it compiles opts and
// javaType on every call. The gateway's request path should hold an Encoder
// and compiled Types instead.
func Encode(e *hessian.Encoder, data []byte, javaType string, opts *EncodeOptions) error {
	enc, t, err := compile(javaType, opts)
	if err != nil {
		return err
	}
	return enc.Encode(e, data, t)
}

// EncodeString is the one-shot form of Encoder.EncodeString.
func EncodeString(e *hessian.Encoder, s string, javaType string, opts *EncodeOptions) error {
	enc, t, err := compile(javaType, opts)
	if err != nil {
		return err
	}
	return enc.EncodeString(e, s, t)
}

func compile(javaType string, opts *EncodeOptions) (*Encoder, *Type, error) {
	var o EncodeOptions
	if opts != nil {
		o = *opts
	}
	enc, err := NewEncoder(o)
	if err != nil {
		return nil, nil, err
	}
	t, err := enc.Type(javaType)
	if err != nil {
		return nil, nil, err
	}
	return enc, t, nil
}

// encodeState is the scratch of one Encode call; Encoders recycle them.
type encodeState struct {
	enc  *Encoder
	out  *hessian.Encoder
	src  string
	sc   scanner
	toks []token
	path []pathSeg
	buf  []byte
	// names is a stack of the field lists of objects being written
	// (hessian.Encoder copies a list it keeps for a class definition).
	names []string
	// Passed to hessian.Encoder.Encode by pointer, so that writing one does
	// not allocate.
	decimal hessian.BigDecimal
	integer hessian.BigInteger
	// ctx is the caller's: value checks it every checkEvery values.
	ctx   context.Context
	ticks int
}

// checkEvery is how many values are written between two looks at the
// caller's context: often enough to stop within a millisecond or so, rarely
// enough to cost nothing.
const checkEvery = 4096

func (enc *Encoder) state(e *hessian.Encoder) *encodeState {
	s, _ := enc.states.Get().(*encodeState)
	if s == nil {
		s = &encodeState{enc: enc}
		s.sc.maxDepth = enc.maxDepth
		s.sc.maxTokens = enc.maxValues
	}
	s.out = e
	return s
}

func (enc *Encoder) release(s *encodeState) {
	if cap(s.toks) > 1<<16 || cap(s.buf) > 1<<16 {
		return // an outsized request: let its buffers go
	}
	s.out, s.src, s.decimal.Value, s.integer.Value, s.ctx, s.ticks = nil, "", "", "", nil, 0
	clear(s.names[:cap(s.names)]) // drop references into the request body
	s.names = s.names[:0]
	s.path = s.path[:0]
	s.sc.src = ""
	enc.states.Put(s)
}

func (s *encodeState) scan(src string) error {
	if err := s.ctxErr(); err != nil {
		return err
	}
	s.src = src
	var err error
	s.toks, err = s.sc.scan(src, s.toks)
	if err != nil {
		return err
	}
	return s.ctxErr()
}

// ctxErr is the caller's context's error, as a *PathError at the current
// path that wraps it (errors.Is finds context.DeadlineExceeded).
func (s *encodeState) ctxErr() error {
	if s.ctx == nil {
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return &PathError{Path: renderPath(s.path), Msg: "gave up: " + err.Error(), Err: err}
	}
	return nil
}

// str returns the decoded text of the string token at i: a slice of the
// source unless it holds escapes.
func (s *encodeState) str(i int32) string {
	t := &s.toks[i]
	raw := s.src[t.start:t.end]
	if !t.slow {
		return raw
	}
	s.buf = unescape(s.buf[:0], raw)
	return string(s.buf)
}

func (s *encodeState) literal(i int32) string {
	t := &s.toks[i]
	return s.src[t.start:t.end]
}

// describe says what the token at i is, for error messages.
func (s *encodeState) describe(i int32) string {
	switch t := &s.toks[i]; t.kind {
	case tokNull:
		return "null"
	case tokTrue:
		return "true"
	case tokFalse:
		return "false"
	case tokNumber:
		return "number " + clip(s.literal(i))
	case tokString:
		return "string " + quoteClip(s.str(i))
	case tokArray:
		return fmt.Sprintf("array of %d", t.count)
	default:
		return "object"
	}
}

// clip shortens long texts quoted in error messages.
func clip(s string) string {
	const maxLen = 40
	if len(s) <= maxLen {
		return s
	}
	cut := maxLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func quoteClip(s string) string {
	return string(appendString(nil, clip(s)))
}

// fail reports that found cannot become t, at the current path.
func (s *encodeState) fail(found string, t *Type, reason string) error {
	msg := "cannot use " + found + " as " + t.name
	if reason != "" {
		msg += ": " + reason
	}
	return &PathError{Path: renderPath(s.path), Msg: msg}
}

func (s *encodeState) mismatch(i int32, t *Type, reason string) error {
	return s.fail(s.describe(i), t, reason)
}

func (s *encodeState) push(seg pathSeg) { s.path = append(s.path, seg) }
func (s *encodeState) pop()             { s.path = s.path[:len(s.path)-1] }

// value writes the JSON value at tape index i as t.
func (s *encodeState) value(i int32, t *Type) error {
	if s.ticks++; s.ticks >= checkEvery {
		s.ticks = 0
		if err := s.ctxErr(); err != nil {
			return err
		}
	}
	tk := &s.toks[i]
	switch tk.kind {
	case tokNull:
		if t.primitive {
			return s.mismatch(i, t, "a primitive cannot be null")
		}
		s.out.WriteNull()
		return nil
	case tokString:
		return s.fromString(s.str(i), t, "string")
	}
	switch t.kind {
	case kindAny:
		return s.infer(i, t)
	case kindBool:
		if tk.kind == tokTrue || tk.kind == tokFalse {
			s.out.WriteBool(tk.kind == tokTrue)
			return nil
		}
	case kindByte, kindShort, kindInt, kindLong, kindFloat, kindDouble, kindNumber,
		kindBigDecimal, kindBigInteger, kindDate:
		if tk.kind == tokNumber {
			return s.number(s.literal(i), t, "number")
		}
	case kindString:
		switch tk.kind {
		case tokNumber:
			// Clients often send numbers for String parameters: the string
			// is the literal text, as written (12.50 stays "12.50").
			s.out.WriteString(s.literal(i))
			return nil
		case tokTrue, tokFalse:
			s.out.WriteString(s.literal(i))
			return nil
		}
	case kindBytes:
		if tk.kind == tokArray {
			return s.bytes(i, t)
		}
	case kindChars:
		if tk.kind == tokArray {
			return s.chars(i, t)
		}
	case kindList:
		if tk.kind == tokArray {
			return s.list(i, t)
		}
	case kindMap:
		if tk.kind == tokObject {
			return s.mapValue(i, t, false)
		}
	case kindClass:
		if tk.kind == tokObject {
			return s.object(i, t)
		}
	}
	return s.mismatch(i, t, "")
}

// infer writes a value of declared type Object (or an undeclared DTO field):
// booleans, strings, numbers (int when the integer fits, else long, else
// double), arrays as untyped lists, objects as untyped maps, or as the class
// their "class" key names.
func (s *encodeState) infer(i int32, t *Type) error {
	tk := &s.toks[i]
	switch tk.kind {
	case tokTrue, tokFalse:
		s.out.WriteBool(tk.kind == tokTrue)
		return nil
	case tokNumber:
		return s.inferNumber(s.literal(i), t, "number")
	case tokArray:
		return s.list(i, t)
	case tokObject:
		if s.findClassKey(i) >= 0 {
			return s.object(i, t)
		}
		return s.mapValue(i, t, false)
	}
	return s.mismatch(i, t, "")
}

func (s *encodeState) inferNumber(lit string, t *Type, what string) error {
	if isIntegerLiteral(lit) {
		v, p := literalInt64(lit)
		if p == numOK {
			if int64(int32(v)) == v {
				s.out.WriteInt(int32(v))
			} else {
				s.out.WriteLong(v)
			}
			return nil
		}
	}
	f, ok := parseFloat64(lit)
	if !ok {
		return s.fail(what+" "+clip(lit), t, "beyond the range of a double")
	}
	s.out.WriteDouble(f)
	return nil
}

// literalInt64 converts a JSON number literal to an exact int64, quickly for
// the usual short integer literals.
func literalInt64(lit string) (int64, numProblem) {
	if len(lit) <= 18 && isIntegerLiteral(lit) {
		neg := lit[0] == '-'
		digits := lit
		if neg {
			digits = lit[1:]
		}
		var v int64
		for i := 0; i < len(digits); i++ {
			v = v*10 + int64(digits[i]-'0')
		}
		if neg {
			v = -v
		}
		return v, numOK
	}
	d := parseDecimal(lit)
	return d.int64()
}

// integerRange is the range of each Java integer kind.
func integerRange(k kind) (lo, hi int64) {
	switch k {
	case kindByte:
		return -1 << 7, 1<<7 - 1
	case kindShort:
		return -1 << 15, 1<<15 - 1
	case kindInt:
		return -1 << 31, 1<<31 - 1
	}
	return -1 << 63, 1<<63 - 1
}

// number writes a number literal (from a JSON number, or a string holding
// one: what says which, for messages) as a numeric type or a Date.
func (s *encodeState) number(lit string, t *Type, what string) error {
	found := func() string {
		if what == "number" {
			return "number " + clip(lit)
		}
		return what + " " + quoteClip(lit)
	}
	switch t.kind {
	case kindByte, kindShort, kindInt, kindLong, kindDate:
		v, p := literalInt64(lit)
		lo, hi := integerRange(t.kind)
		switch {
		case p == numFraction:
			return s.fail(found(), t, "not an integer")
		case p == numRange || v < lo || v > hi:
			if t.kind == kindDate {
				return s.fail(found(), t, "epoch milliseconds beyond the range of a long")
			}
			return s.fail(found(), t, fmt.Sprintf("out of range [%d, %d]", lo, hi))
		}
		switch t.kind {
		case kindLong:
			s.out.WriteLong(v)
		case kindDate:
			s.out.WriteDate(time.UnixMilli(v).UTC())
		default:
			s.out.WriteInt(int32(v))
		}
	case kindFloat:
		f, ok := parseFloat32(lit)
		if !ok {
			return s.fail(found(), t, "beyond the range of a float")
		}
		s.out.WriteDouble(f)
	case kindDouble:
		f, ok := parseFloat64(lit)
		if !ok {
			return s.fail(found(), t, "beyond the range of a double")
		}
		s.out.WriteDouble(f)
	case kindNumber:
		return s.inferNumber(lit, t, what)
	case kindBigDecimal:
		// Java's BigDecimal(String) reads every JSON number literal as is.
		s.decimal.Value = lit
		if err := s.out.Encode(&s.decimal); err != nil {
			return s.fail(found(), t, err.Error())
		}
	case kindBigInteger:
		d := parseDecimal(lit)
		text, p := d.integerText(maxBigIntegerDigits)
		switch p {
		case numFraction:
			return s.fail(found(), t, "not an integer")
		case numRange:
			return s.fail(found(), t, fmt.Sprintf("more than %d digits", maxBigIntegerDigits))
		}
		s.integer.Value = text
		if err := s.out.Encode(&s.integer); err != nil {
			return s.fail(found(), t, err.Error())
		}
	default:
		return s.fail(found(), t, "")
	}
	return nil
}

// fromString writes a string as t; what is "string" for JSON strings and
// parameters, "key" for map keys.
func (s *encodeState) fromString(str string, t *Type, what string) error {
	found := func() string { return what + " " + quoteClip(str) }
	switch t.kind {
	case kindAny, kindString, kindChars:
		s.out.WriteString(str)
	case kindBool:
		switch str {
		case "true":
			s.out.WriteBool(true)
		case "false":
			s.out.WriteBool(false)
		default:
			return s.fail(found(), t, `want "true" or "false"`)
		}
	case kindByte, kindShort, kindInt, kindLong, kindNumber, kindBigDecimal, kindBigInteger:
		if !isNumber(str) {
			return s.fail(found(), t, "not a number")
		}
		return s.number(str, t, what)
	case kindFloat, kindDouble:
		if f, ok := javaSpecialFloat(str); ok {
			s.out.WriteDouble(f)
			return nil
		}
		if !isNumber(str) {
			return s.fail(found(), t, "not a number")
		}
		return s.number(str, t, what)
	case kindChar:
		r, size := utf8.DecodeRuneInString(str)
		if size == 0 || size != len(str) {
			return s.fail(found(), t, "want exactly one character")
		}
		if r > 0xFFFF {
			return s.fail(found(), t, "a character beyond U+FFFF needs two Java chars")
		}
		s.out.WriteString(str)
	case kindDate:
		if isNumber(str) {
			return s.number(str, t, what)
		}
		d, ok := parseDate(str)
		if !ok {
			return s.fail(found(), t, "want RFC 3339 (2006-01-02T15:04:05.000Z), a date (2006-01-02) or epoch milliseconds")
		}
		s.out.WriteDate(d)
	case kindLocalDate, kindLocalTime, kindLocalDateTime:
		// java.time values travel as hessian-lite's handle objects, which its
		// deserializer turns back into LocalDate, LocalTime, LocalDateTime.
		// They do in generic invocation too: the provider decodes a real
		// LocalDate, which PojoUtils passes through, whereas the string forms
		// PojoUtils parses differ between Dubbo versions.
		var v any
		var ok bool
		var want string
		switch t.kind {
		case kindLocalDate:
			v, ok = parseLocalDate(str)
			want = "want an ISO date (2006-01-02)"
		case kindLocalTime:
			v, ok = parseLocalTime(str)
			want = "want an ISO time (15:04, 15:04:05 or 15:04:05.123456789)"
		default:
			v, ok = parseLocalDateTime(str)
			want = "want an ISO date-time without offset (2006-01-02T15:04:05)"
		}
		if !ok {
			return s.fail(found(), t, want)
		}
		if err := s.out.Encode(v); err != nil {
			return s.fail(found(), t, err.Error())
		}
	case kindBytes:
		b, ok := decodeBase64(str)
		if !ok {
			return s.fail(found(), t, "want base64")
		}
		s.out.WriteBinary(b)
	case kindEnum:
		if t.enum.constants != nil {
			if _, ok := t.enum.constants[str]; !ok {
				return s.fail(found(), t, "not a constant of the enum")
			}
		}
		s.writeEnum(t.wire, str)
	case kindClass:
		if s.enc.generic {
			// Generic invocation: the provider's PojoUtils converts a string
			// into an enum constant of that name (an enum not declared in
			// EncodeOptions.Enums), or reports the mismatch itself.
			s.out.WriteString(str)
			return nil
		}
		return s.fail(found(), t, "want a JSON object (declare enums in EncodeOptions.Enums)")
	default: // lists and maps
		return s.fail(found(), t, "")
	}
	return nil
}

// enumFields is the field list of hessian-lite's enum objects.
var enumFields = []string{"name"}

// writeEnum writes an enum constant: its name in generic invocation,
// hessian-lite's enum object (one field, "name") otherwise.
func (s *encodeState) writeEnum(class, name string) {
	if s.enc.generic {
		s.out.WriteString(name)
		return
	}
	s.out.WriteObjectStart(class, enumFields)
	s.out.WriteString(name)
}

func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// list writes a JSON array as a hessian list of t (a collection or an array).
func (s *encodeState) list(i int32, t *Type) error {
	tk := s.toks[i]
	if tk.kind != tokArray {
		return s.mismatch(i, t, "")
	}
	elem := t.elem
	if elem == nil {
		elem = s.enc.anyType
	}
	s.out.WriteListStart(t.wire, int(tk.count))
	s.push(pathSeg{isIndex: true})
	n := 0
	for c := i + 1; c < tk.next; c = s.toks[c].next {
		s.path[len(s.path)-1].index = n
		if err := s.value(c, elem); err != nil {
			return err
		}
		n++
	}
	s.pop()
	return nil
}

// bytes writes a JSON array of numbers as byte[] (hessian binary). Numbers
// from -128 to 255 are accepted; 128 to 255 are stored as Java's negative
// bytes.
func (s *encodeState) bytes(i int32, t *Type) error {
	tk := s.toks[i]
	b := make([]byte, 0, tk.count)
	s.push(pathSeg{isIndex: true})
	n := 0
	for c := i + 1; c < tk.next; c = s.toks[c].next {
		s.path[len(s.path)-1].index = n
		if s.toks[c].kind != tokNumber {
			return s.mismatch(c, t, "want numbers from -128 to 255")
		}
		v, p := literalInt64(s.literal(c))
		if p != numOK || v < -128 || v > 255 {
			return s.mismatch(c, t, "want numbers from -128 to 255")
		}
		b = append(b, byte(v))
		n++
	}
	s.pop()
	s.out.WriteBinary(b)
	return nil
}

// chars writes a JSON array of one-character strings as char[] (a hessian string).
func (s *encodeState) chars(i int32, t *Type) error {
	tk := s.toks[i]
	var b []byte
	s.push(pathSeg{isIndex: true})
	n := 0
	for c := i + 1; c < tk.next; c = s.toks[c].next {
		s.path[len(s.path)-1].index = n
		if s.toks[c].kind != tokString {
			return s.mismatch(c, t, "want one-character strings")
		}
		str := s.str(c)
		r, size := utf8.DecodeRuneInString(str)
		if size == 0 || size != len(str) || r > 0xFFFF {
			return s.mismatch(c, t, "want one-character strings")
		}
		b = append(b, str...)
		n++
	}
	s.pop()
	s.out.WriteString(string(b))
	return nil
}

// mapValue writes a JSON object as a hessian map of t; keys are converted to
// t's key type. A "class" key is an ordinary key unless skipClass (when it
// named the map's class).
func (s *encodeState) mapValue(i int32, t *Type, skipClass bool) error {
	tk := s.toks[i]
	if tk.kind != tokObject {
		return s.mismatch(i, t, "")
	}
	key, elem := t.key, t.elem
	if key == nil {
		key = s.enc.anyType
	}
	if elem == nil {
		elem = s.enc.anyType
	}
	s.out.WriteMapStart(t.wire)
	for k := i + 1; k < tk.next; k = s.toks[k+1].next {
		if skipClass && s.isClassKey(k) {
			continue
		}
		name := s.str(k)
		s.push(pathSeg{key: name})
		if s.enc.generic && name == "class" && s.toks[k+1].kind == tokString {
			// The provider's PojoUtils loads the class a map's "class" key
			// names, whatever the declared type: check it as any other.
			if c := s.str(k + 1); !s.enc.classAllowed(c) {
				return s.mismatch(k+1, t, classRefusal(`the "class" key`, c))
			}
		}
		if key.kind == kindAny || key.kind == kindString {
			s.out.WriteString(name)
		} else if err := s.fromString(name, key, "key"); err != nil {
			return err
		}
		if err := s.value(k+1, elem); err != nil {
			return err
		}
		s.pop()
	}
	s.out.WriteMapEnd()
	return nil
}

// findClassKey returns the tape index of the value of the object's "class"
// member, or -1.
func (s *encodeState) findClassKey(i int32) int32 {
	tk := &s.toks[i]
	for k := i + 1; k < tk.next; k = s.toks[k+1].next {
		if s.isClassKey(k) {
			return k + 1
		}
	}
	return -1
}

func (s *encodeState) isClassKey(k int32) bool {
	t := &s.toks[k]
	if !t.slow {
		return s.src[t.start:t.end] == "class"
	}
	return s.str(k) == "class"
}

// object writes a JSON object as a DTO of declared type t (a class, or
// Object when the JSON names its class). A "class" key overrides the
// declared class, as in Dubbo's generic invocation.
func (s *encodeState) object(i int32, t *Type) error {
	className, cls := t.wire, t.class
	if t.kind != kindClass {
		className, cls = "", nil
	}
	if v := s.findClassKey(i); v >= 0 {
		s.push(pathSeg{key: "class"})
		if s.toks[v].kind != tokString {
			return s.mismatch(v, t, "the \"class\" key must name a class")
		}
		name := s.str(v)
		if name != className || name == "" {
			mapType, c, err := s.resolveClass(name, v, t)
			if err != nil {
				return err
			}
			if mapType != nil {
				s.pop()
				return s.mapValue(i, mapType, true)
			}
			className, cls = name, c
		}
		s.pop()
	}
	tk := s.toks[i]
	if s.enc.generic {
		s.out.WriteMapStart("")
		s.out.WriteString("class")
		s.out.WriteString(className)
		for k := i + 1; k < tk.next; k = s.toks[k+1].next {
			if s.isClassKey(k) {
				continue
			}
			name := s.str(k)
			s.out.WriteString(name)
			if err := s.field(k+1, name, cls); err != nil {
				return err
			}
		}
		s.out.WriteMapEnd()
		return nil
	}
	start := len(s.names)
	for k := i + 1; k < tk.next; k = s.toks[k+1].next {
		if !s.isClassKey(k) {
			s.names = append(s.names, s.str(k))
		}
	}
	names := s.names[start:len(s.names):len(s.names)]
	s.out.WriteObjectStart(className, names)
	f := 0
	for k := i + 1; k < tk.next; k = s.toks[k+1].next {
		if s.isClassKey(k) {
			continue
		}
		if err := s.field(k+1, names[f], cls); err != nil {
			return err
		}
		f++
	}
	s.names = s.names[:start]
	return nil
}

// field writes the value of a DTO field, typed by the Schema when it knows
// the field.
func (s *encodeState) field(v int32, name string, cls *class) error {
	t := s.enc.anyType
	if cls != nil {
		if ft, ok := cls.fields[name]; ok {
			t = ft
		}
	}
	s.push(pathSeg{key: name})
	if err := s.value(v, t); err != nil {
		return err
	}
	s.pop()
	return nil
}

// resolveClass checks the class a "class" key names (value token v). It
// returns the Schema entry (nil when unknown), or a map type when the key
// names a Map class.
func (s *encodeState) resolveClass(name string, v int32, declared *Type) (*Type, *class, error) {
	if !s.enc.classAllowed(name) {
		return nil, nil, s.mismatch(v, declared, classRefusal(`the "class" key`, name))
	}
	if c, ok := s.enc.classes[name]; ok {
		return nil, c, nil
	}
	if b, ok := builtins[name]; ok {
		if b.kind == kindMap || b.kind == kindAny {
			return &Type{name: name, kind: kindMap, wire: b.wire, key: s.enc.anyType, elem: s.enc.anyType}, nil, nil
		}
		return nil, nil, s.mismatch(v, declared, "the \"class\" key names a type a JSON object cannot hold")
	}
	if _, ok := s.enc.enums[name]; ok {
		return nil, nil, s.mismatch(v, declared, "the \"class\" key names an enum")
	}
	if !isClassName(name) {
		return nil, nil, s.mismatch(v, declared, "the \"class\" key must name a Java class")
	}
	return nil, nil, nil
}
