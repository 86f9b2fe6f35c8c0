package jsonbridge

import (
	"fmt"
	"strings"
)

// kind is how a declared Java type takes a JSON value.
type kind uint8

const (
	kindAny           kind = iota // java.lang.Object: inferred from the JSON value
	kindBool                      // boolean, java.lang.Boolean
	kindByte                      // byte, java.lang.Byte
	kindShort                     // short, java.lang.Short
	kindInt                       // int, java.lang.Integer
	kindLong                      // long, java.lang.Long
	kindFloat                     // float, java.lang.Float
	kindDouble                    // double, java.lang.Double
	kindNumber                    // java.lang.Number: a number, inferred as for Object
	kindChar                      // char, java.lang.Character
	kindString                    // java.lang.String, CharSequence
	kindBigDecimal                // java.math.BigDecimal
	kindBigInteger                // java.math.BigInteger
	kindDate                      // java.util.Date
	kindLocalDate                 // java.time.LocalDate
	kindLocalTime                 // java.time.LocalTime
	kindLocalDateTime             // java.time.LocalDateTime
	kindBytes                     // byte[]: hessian binary
	kindChars                     // char[]: hessian string
	kindList                      // collections and other arrays: hessian list
	kindMap                       // maps: hessian map
	kindEnum                      // a class declared in EncodeOptions.Enums
	kindClass                     // any other class: a DTO
)

// Type is a declared Java type ("int", "java.util.List<com.example.Item>",
// "[Ljava.lang.String;", "com.example.User") compiled against an Encoder's
// options. Compile each parameter type once, at configuration time, with
// Encoder.Type, and reuse it for every request; a Type is immutable and safe
// for concurrent use.
type Type struct {
	name      string // as declared, for messages
	kind      kind
	primitive bool   // a Java primitive: null is refused
	array     bool   // a Java array (kindList, kindBytes, kindChars)
	wire      string // hessian list/map type; class name of a DTO or enum
	elem      *Type  // element type of lists and arrays, value type of maps
	key       *Type  // key type of maps
	class     *class // DTO: its Schema entry; nil when the Schema does not know it
	enum      *enum  // enum: its declared constants
}

// String returns the type as it was declared.
func (t *Type) String() string { return t.name }

// IsList reports whether t is a collection or an array other than byte[]
// and char[]: a JSON array in, a hessian list out.
func (t *Type) IsList() bool { return t.kind == kindList }

// class is a DTO class of the Schema.
type class struct {
	name   string
	fields map[string]*Type
}

// enum is a declared enum class; constants nil means any name is accepted.
type enum struct {
	constants map[string]struct{}
}

// builtin describes the Java types the bridge knows by name.
type builtin struct {
	kind      kind
	primitive bool
	wire      string // list/map type written for collections and maps
	arrayWire string // component name in hessian array types ("[int")
}

var builtins = map[string]builtin{
	"boolean": {kind: kindBool, primitive: true, arrayWire: "boolean"},
	"byte":    {kind: kindByte, primitive: true, arrayWire: "byte"},
	"short":   {kind: kindShort, primitive: true, arrayWire: "short"},
	"int":     {kind: kindInt, primitive: true, arrayWire: "int"},
	"long":    {kind: kindLong, primitive: true, arrayWire: "long"},
	"float":   {kind: kindFloat, primitive: true, arrayWire: "float"},
	"double":  {kind: kindDouble, primitive: true, arrayWire: "double"},
	"char":    {kind: kindChar, primitive: true, arrayWire: "char"},

	"java.lang.Boolean":       {kind: kindBool},
	"java.lang.Byte":          {kind: kindByte},
	"java.lang.Short":         {kind: kindShort},
	"java.lang.Integer":       {kind: kindInt},
	"java.lang.Long":          {kind: kindLong},
	"java.lang.Float":         {kind: kindFloat},
	"java.lang.Double":        {kind: kindDouble},
	"java.lang.Character":     {kind: kindChar},
	"java.lang.Number":        {kind: kindNumber},
	"java.lang.String":        {kind: kindString, arrayWire: "string"},
	"java.lang.CharSequence":  {kind: kindString},
	"java.lang.Object":        {kind: kindAny, arrayWire: "object"},
	"java.io.Serializable":    {kind: kindAny},
	"java.math.BigDecimal":    {kind: kindBigDecimal},
	"java.math.BigInteger":    {kind: kindBigInteger},
	"java.util.Date":          {kind: kindDate, arrayWire: "date"},
	"java.time.LocalDate":     {kind: kindLocalDate},
	"java.time.LocalTime":     {kind: kindLocalTime},
	"java.time.LocalDateTime": {kind: kindLocalDateTime},

	// Collections. Hessian-lite writes an ArrayList as an untyped list and
	// other collections with their class name; an interface is written as the
	// class Java would pick for it, so a value read back as Object keeps its
	// semantics (a Set stays a set).
	"java.util.Collection":    {kind: kindList},
	"java.util.List":          {kind: kindList},
	"java.util.ArrayList":     {kind: kindList},
	"java.lang.Iterable":      {kind: kindList},
	"java.util.LinkedList":    {kind: kindList, wire: "java.util.LinkedList"},
	"java.util.Set":           {kind: kindList, wire: "java.util.HashSet"},
	"java.util.HashSet":       {kind: kindList, wire: "java.util.HashSet"},
	"java.util.LinkedHashSet": {kind: kindList, wire: "java.util.LinkedHashSet"},
	"java.util.SortedSet":     {kind: kindList, wire: "java.util.TreeSet"},
	"java.util.NavigableSet":  {kind: kindList, wire: "java.util.TreeSet"},
	"java.util.TreeSet":       {kind: kindList, wire: "java.util.TreeSet"},

	// Maps: a HashMap is written untyped, as hessian-lite does.
	"java.util.Map":                          {kind: kindMap},
	"java.util.HashMap":                      {kind: kindMap},
	"java.util.LinkedHashMap":                {kind: kindMap, wire: "java.util.LinkedHashMap"},
	"java.util.SortedMap":                    {kind: kindMap, wire: "java.util.TreeMap"},
	"java.util.NavigableMap":                 {kind: kindMap, wire: "java.util.TreeMap"},
	"java.util.TreeMap":                      {kind: kindMap, wire: "java.util.TreeMap"},
	"java.util.concurrent.ConcurrentMap":     {kind: kindMap, wire: "java.util.concurrent.ConcurrentHashMap"},
	"java.util.concurrent.ConcurrentHashMap": {kind: kindMap, wire: "java.util.concurrent.ConcurrentHashMap"},
}

// javaLangAliases lets a Schema say "String" or "Integer", as Java source does.
var javaLangAliases = map[string]string{
	"Boolean": "java.lang.Boolean", "Byte": "java.lang.Byte", "Short": "java.lang.Short",
	"Integer": "java.lang.Integer", "Long": "java.lang.Long", "Float": "java.lang.Float",
	"Double": "java.lang.Double", "Character": "java.lang.Character", "Number": "java.lang.Number",
	"String": "java.lang.String", "CharSequence": "java.lang.CharSequence", "Object": "java.lang.Object",
}

// descriptorNames maps the primitive letters of JVM array descriptors.
var descriptorNames = map[byte]string{
	'Z': "boolean", 'B': "byte", 'S': "short", 'I': "int",
	'J': "long", 'F': "float", 'D': "double", 'C': "char",
}

// typeParser reads a Java type expression:
//
//	type  = "[" descriptor | name [ "<" arg { "," arg } ">" ] { "[]" }
//	arg   = type | "?" [ ("extends" | "super") type ]
type typeParser struct {
	enc    *Encoder
	src    string
	pos    int
	depth  int  // type arguments being read
	client bool // a client chose the type: classes are checked as "class" keys are
}

// Bounds of a type expression, so that compiling one a client sent costs
// little and its descriptor stays small. The JVM allows 255 array
// dimensions; no Java method signature needs the rest.
const (
	// MaxTypeLen bounds the text of one type.
	MaxTypeLen = 4096
	// MaxArrayDims bounds array dimensions, as the JVM does.
	MaxArrayDims = 255
	// MaxTypeNesting bounds nested type arguments (List<List<...>>).
	MaxTypeNesting = 32
)

func (p *typeParser) fail(format string, args ...any) error {
	return fmt.Errorf("java type %q: %s", p.src, fmt.Sprintf(format, args...))
}

func (p *typeParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *typeParser) parse() (*Type, error) {
	if len(p.src) > MaxTypeLen {
		return nil, fmt.Errorf("java type %q: longer than %d bytes", clip(p.src), MaxTypeLen)
	}
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, p.fail("unexpected %q at offset %d", p.src[p.pos:], p.pos)
	}
	return t, nil
}

func (p *typeParser) typ() (*Type, error) {
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '[' {
		return p.descriptor()
	}
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	name := p.src[start:p.pos]
	if name == "" {
		return nil, p.fail("expected a type name at offset %d", start)
	}
	var args []*Type
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == '<' {
		p.pos++
		if p.depth++; p.depth > MaxTypeNesting {
			return nil, p.fail("type arguments nested deeper than %d", MaxTypeNesting)
		}
		for {
			arg, err := p.typeArg()
			if err != nil {
				return nil, err
			}
			args = append(args, arg)
			p.space()
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.src) && p.src[p.pos] == '>' {
				p.pos++
				p.depth--
				break
			}
			return nil, p.fail("expected ',' or '>' at offset %d", p.pos)
		}
	}
	text := strings.TrimSpace(p.src[start:p.pos])
	t, err := p.named(name, text, args)
	if err != nil {
		return nil, p.fail("%v", err)
	}
	for dims := 0; ; dims++ {
		p.space()
		if !strings.HasPrefix(p.src[p.pos:], "[]") {
			return t, nil
		}
		if dims == MaxArrayDims {
			return nil, p.fail("more than %d array dimensions", MaxArrayDims)
		}
		p.pos += 2
		t = p.enc.arrayOf(t, strings.TrimSpace(p.src[start:p.pos]))
	}
}

// named resolves a name as Encoder.named does, refusing known gadgets and,
// for a client's type, the classes a client may not name.
func (p *typeParser) named(name, text string, args []*Type) (*Type, error) {
	t, err := p.enc.named(name, text, args)
	if err != nil {
		return nil, err
	}
	if t.kind == kindClass || t.kind == kindEnum {
		if DeniedClass(t.wire) || p.client && !p.enc.classAllowed(t.wire) {
			return nil, fmt.Errorf("%s", classRefusal("the type", t.wire))
		}
	}
	return t, nil
}

func (p *typeParser) typeArg() (*Type, error) {
	p.space()
	if p.pos >= len(p.src) || p.src[p.pos] != '?' {
		return p.typ()
	}
	p.pos++
	p.space()
	rest := p.src[p.pos:]
	switch {
	case strings.HasPrefix(rest, "extends") && len(rest) > 7 && !isNameByte(rest[7]):
		p.pos += 7
		return p.typ()
	case strings.HasPrefix(rest, "super") && len(rest) > 5 && !isNameByte(rest[5]):
		// "? super T" admits any supertype of T: nothing is known.
		p.pos += 5
		if _, err := p.typ(); err != nil {
			return nil, err
		}
	}
	return p.enc.anyType, nil
}

// descriptor reads a JVM array descriptor: "[I", "[[J", "[Ljava.lang.String;".
func (p *typeParser) descriptor() (*Type, error) {
	start := p.pos
	dims := 0
	for p.pos < len(p.src) && p.src[p.pos] == '[' {
		p.pos++
		dims++
	}
	if dims > MaxArrayDims {
		return nil, p.fail("more than %d array dimensions", MaxArrayDims)
	}
	if p.pos >= len(p.src) {
		return nil, p.fail("array descriptor without a component type")
	}
	var elem *Type
	var err error
	if c := p.src[p.pos]; c == 'L' {
		end := strings.IndexByte(p.src[p.pos:], ';')
		if end < 0 {
			return nil, p.fail("array descriptor %q lacks the closing ';'", p.src[start:])
		}
		name := p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
		if name == "" || !isClassName(name) {
			return nil, p.fail("invalid class name %q in array descriptor", name)
		}
		elem, err = p.named(name, name, nil)
	} else if name, ok := descriptorNames[c]; ok {
		p.pos++
		elem, err = p.named(name, name, nil)
	} else {
		return nil, p.fail("invalid array descriptor %q", p.src[start:])
	}
	if err != nil {
		return nil, p.fail("%v", err)
	}
	// The source names of the levels are prefixes of one string: no
	// quadratic concatenation.
	base := len(elem.name)
	names := elem.name + strings.Repeat("[]", dims-1)
	for i := 0; i < dims; i++ {
		name := p.src[start:p.pos]
		if i < dims-1 {
			name = names[:base+2*i+2]
		}
		elem = p.enc.arrayOf(elem, name)
	}
	return elem, nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '$' || c == '.' || c >= 0x80
}

// isClassName reports whether s looks like a Java binary class name:
// dot-separated identifiers ("com.example.Outer$Inner").
func isClassName(s string) bool {
	if s == "" || len(s) > 512 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || (part[0] >= '0' && part[0] <= '9') {
			return false
		}
		for i := 0; i < len(part); i++ {
			if !isNameByte(part[i]) || part[i] == '.' {
				return false
			}
		}
	}
	return true
}

// named resolves a type name with its type arguments.
func (enc *Encoder) named(name, text string, args []*Type) (*Type, error) {
	if full, ok := javaLangAliases[name]; ok {
		name = full
	}
	if b, ok := builtins[name]; ok {
		t := &Type{name: text, kind: b.kind, primitive: b.primitive, wire: b.wire}
		switch b.kind {
		case kindList:
			if len(args) > 1 {
				return nil, fmt.Errorf("%s takes one type argument, found %d", name, len(args))
			}
			t.elem = enc.anyType
			if len(args) == 1 {
				t.elem = args[0]
			}
		case kindMap:
			if len(args) != 0 && len(args) != 2 {
				return nil, fmt.Errorf("%s takes two type arguments, found %d", name, len(args))
			}
			t.key, t.elem = enc.anyType, enc.anyType
			if len(args) == 2 {
				if err := checkKeyType(args[0]); err != nil {
					return nil, err
				}
				t.key, t.elem = args[0], args[1]
			}
		default:
			if len(args) != 0 {
				return nil, fmt.Errorf("%s takes no type arguments", name)
			}
			if b.kind == kindAny && len(args) == 0 && text == name {
				return enc.anyType, nil
			}
		}
		return t, nil
	}
	if !isClassName(name) {
		return nil, fmt.Errorf("%q is not a Java class name", name)
	}
	// Type arguments of a DTO class are ignored: the Schema types its fields.
	if e, ok := enc.enums[name]; ok {
		return &Type{name: text, kind: kindEnum, wire: name, enum: e}, nil
	}
	return &Type{name: text, kind: kindClass, wire: name, class: enc.classes[name]}, nil
}

// checkKeyType refuses map key types that a JSON object key cannot hold.
func checkKeyType(t *Type) error {
	switch t.kind {
	case kindList, kindMap, kindClass, kindBytes, kindChars:
		return fmt.Errorf("map keys of type %s cannot come from JSON object keys", t.name)
	}
	return nil
}

// arrayOf returns the array type whose components are elem.
func (enc *Encoder) arrayOf(elem *Type, text string) *Type {
	switch elem.kind {
	case kindByte:
		if elem.primitive {
			return &Type{name: text, kind: kindBytes, array: true}
		}
	case kindChar:
		if elem.primitive {
			return &Type{name: text, kind: kindChars, array: true}
		}
	}
	t := &Type{name: text, kind: kindList, array: true, elem: elem}
	if enc.generic && generalized(elem) {
		// Generic invocation sends DTOs as maps and enums as names; a typed
		// array would make the provider store a map in a User[]. An untyped
		// list lets Dubbo's PojoUtils build the array.
		return t
	}
	t.wire = "[" + arrayComponentWire(elem)
	return t
}

// generalized reports whether values of t travel in generic invocation in a
// different form than their class (DTOs as maps, enums as names), at any
// array depth.
func generalized(t *Type) bool {
	for t.kind == kindList && t.array {
		t = t.elem
	}
	return t.kind == kindClass || t.kind == kindEnum
}

// arrayComponentWire names a component in a hessian array type the way
// hessian-lite does: primitives and String, Object, Date by short names,
// nested arrays with another "[", other classes by their name.
func arrayComponentWire(elem *Type) string {
	switch elem.kind {
	case kindBytes:
		return "[byte"
	case kindChars:
		return "[char"
	case kindList:
		if elem.array {
			return elem.wire
		}
	}
	base := strings.TrimSpace(elem.name)
	if i := strings.IndexByte(base, '<'); i >= 0 {
		base = strings.TrimSpace(base[:i])
	}
	if full, ok := javaLangAliases[base]; ok {
		base = full
	}
	if b, ok := builtins[base]; ok && b.arrayWire != "" {
		return b.arrayWire
	}
	if elem.kind == kindClass || elem.kind == kindEnum {
		return elem.wire
	}
	return base
}
