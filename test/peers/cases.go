package peers

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"
)

// The peers, as the table names them.
const (
	HessianJS = "hessian.js"        // npm hessian.js, pinned in node/package.json
	Caucho    = "caucho"            // com.caucho.hessian 4.0.38 (Debian libhessian-java)
	DubboGo   = "dubbo-go-hessian2" // github.com/apache/dubbo-go-hessian2, test/interop
)

// The Java classes of java/*.java; hessian.js and dubbo-go-hessian2 use the
// same names.
const (
	PojoClass      = "interop.Pojo" // {long id; String name; int age; boolean active; double score}
	NodeClass      = "interop.Node" // {String name; Node next; Object payload}
	ColorClass     = "interop.Color"
	ExceptionClass = "interop.TestException"
)

// Case is one value of the table, and what each peer does differently with
// it. A peer missing from Peers is held to the full check: its bytes decode
// to Desc, ours decode in it to Desc, and both are the same bytes.
type Case struct {
	Name  string
	Desc  *Desc
	Peers map[string]Expect
}

// Expect is what one peer legitimately does differently with a case. Every
// non-empty field says why in its own words.
type Expect struct {
	// Skip: the case does not apply to this peer at all.
	Skip string
	// PeerWritesOnly: only the peer's bytes are checked (they decode with
	// ours to Desc); the value has a form our encoder never chooses.
	PeerWritesOnly string
	// PeerReadsOnly: only our bytes are checked (they decode in the peer);
	// the peer's API cannot build this value.
	PeerReadsOnly string
	// Wire is what the peer's bytes hold when its writer turns Desc into
	// another Hessian value (a Java ArrayList is written untyped, ...).
	Wire *Desc
	// Sees is what the peer reports after reading our bytes when its value
	// model cannot hold Desc.
	Sees *Desc
	// Form: the peer writes Desc in another valid form than ours.
	Form *Form
	// AnyOrder: the peer writes a map's entries in no fixed order (a Go
	// map). Its bytes must then decode to Desc with the map's entries in
	// some order, and be our bytes for some order of the top-level map's
	// entries.
	AnyOrder string
}

// Form is a peer's own valid encoding of a value, different from ours.
type Form struct {
	Why   string
	Bytes []byte // the peer's exact bytes
}

// Cases returns the table, built fresh (callers may keep or change it).
func Cases() []Case {
	var cs []Case
	add := func(name string, d *Desc, peers map[string]Expect) {
		cs = append(cs, Case{Name: name, Desc: d, Peers: peers})
	}

	// --- null, boolean ---------------------------------------------------
	add("null", Null(), nil)
	add("true", Bool(true), nil)
	add("false", Bool(false), nil)

	// --- int: each compact form's two edges ------------------------------
	for _, v := range []int32{0, -16, -17, 47, 48, -2048, -2049, 2047, 2048, -262144, -262145, 262143, 262144, math.MinInt32, math.MaxInt32} {
		add(fmt.Sprintf("int %d", v), Int(v), nil)
	}

	// --- long: each compact form's two edges, the x59 int32 form, 64 bits -
	for _, v := range []int64{0, -8, -9, 15, 16, -2048, -2049, 2047, 2048, -262144, -262145, 262143, 262144,
		math.MinInt32, math.MaxInt32, math.MinInt32 - 1, math.MaxInt32 + 1,
		1 << 53, 1<<53 + 1, -(1<<53 + 1), math.MinInt64, math.MaxInt64} {
		add(fmt.Sprintf("long %d", v), Long(v), nil)
	}

	// --- double: x5b x5c x5d x5e, the x5f milli form, and D ----------------
	for _, v := range []float64{0, 1, 127, -128, 128, -129, 32767, -32768, 32768, -32769,
		1.5, -1.5, 0.001, -0.001, 0.1, 12.25, 2147483.647, 2147483.648, 3.141592653589793,
		1e300, -1e-300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Float64frombits(canonicalNaN), math.Inf(1), math.Inf(-1)} {
		add(fmt.Sprintf("double %v", v), Double(v), nil)
	}
	// Everyone writes -0.0 as the zero byte (x5b), as Java's
	// Hessian2Output does: the sign is lost on the wire, by design.
	zero := Expect{Wire: Double(0), Sees: Double(0)}
	add("double -0", Double(math.Copysign(0, -1)), map[string]Expect{HessianJS: zero, Caucho: zero, DubboGo: zero})

	// --- date: the minute form x4b and the millisecond form x4a -----------
	for _, ms := range []int64{0, 1699999980000, 1700000000123, -86400000, -1, 253402300799999, 60000 * math.MaxInt32} {
		add(fmt.Sprintf("date %d", ms), Date(ms), nil)
	}

	// --- string: lengths are UTF-16 units, as Java counts them ------------
	for _, n := range []int{0, 1, 31, 32, 1023, 1024, 32768, 32769, 65536} {
		add(fmt.Sprintf("string %d units", n), String(Text(n)), nil)
	}
	// A chunk may not end inside a surrogate pair: the first chunk holds
	// 32767 units and the emoji starts the second.
	add("string emoji across the 32768 chunk edge", String(strings.Repeat("a", 32767)+"😀"+strings.Repeat("b", 32767)), nil)
	add("string only 4-byte UTF-8", String(strings.Repeat("😀🎉", 300)), nil)
	add("string NUL, controls and BMP edges", String("\x00\x01\t\n\x7f\u0080\u07ff\u0800\ufeff\uffff"), nil)

	// --- binary ----------------------------------------------------------
	for _, n := range []int{0, 1, 15, 16, 1023, 1024, 4093, 4094, 8192, 32768, 65536} {
		add(fmt.Sprintf("binary %d bytes", n), Binary(Bytes(n)), binaryForms(Bytes(n)))
	}

	// --- list ------------------------------------------------------------
	add("list untyped empty", List(""), nil)
	add("list untyped mixed", List("", Int(1), String("two"), Double(3.5), Null(), Bool(true), Long(6)), nil)
	add("list untyped 8 items (x58 length form)", List("", ints(8)...), nil)
	add("list [int 3 items", List("[int", ints(3)...), nil)
	add("list [int 100 items", List("[int", ints(100)...), nil)
	add("list [string", List("[string", String("a"), String("ü"), String("😀")), nil)
	add("list [long", List("[long", Long(1), Long(math.MaxInt64)), nil)
	add("list [double", List("[double", Double(0), Double(1.5), Double(1e300)), nil)
	add("list [boolean", List("[boolean", Bool(true), Bool(false)), nil)
	add("list [object", List("[object", Int(1), String("x"), Null()), nil)
	add("list java.util.LinkedList", List("java.util.LinkedList", Int(1), Int(2)), nil)
	add("list nested, type names reused by reference", List("",
		List("[int", Int(1)), List("[int", Int(2)), List("[string", String("x")), List("[string", String("y"))), nil)
	add("list variable-length untyped (x57)", List("", Int(1), String("two")).Varlen(), map[string]Expect{
		HessianJS: {Skip: "hessian.js neither writes nor reads variable-length lists"},
		Caucho:    {PeerWritesOnly: "our encoder always knows a list's length and writes the fixed form; Caucho writes an Iterator this way"},
		DubboGo:   {Skip: "dubbo-go-hessian2 has no way to write a variable-length list"},
	})

	// --- map -------------------------------------------------------------
	goMapOrder := map[string]Expect{DubboGo: {AnyOrder: "dubbo-go-hessian2 writes a Go map, in Go's random iteration order"}}
	add("map untyped empty", Map(""), nil)
	// Keys a, b, c: a Java HashMap iterates them in this order too.
	add("map untyped string keys", Map("", String("a"), Int(1), String("b"), String("two"), String("c"), Null()), goMapOrder)
	add("map untyped int keys", Map("", Int(1), String("one"), Int(2), String("two")), goMapOrder)
	add("map java.util.TreeMap", Map("java.util.TreeMap", String("k1"), Long(1), String("k2"), Long(2)), nil)
	add("map java.util.LinkedHashMap", Map("java.util.LinkedHashMap", String("z"), Int(26), String("a"), Int(1)), nil)
	add("map typed twice (type reference)", List("",
		Map("java.util.TreeMap", String("a"), Int(1)), Map("java.util.TreeMap", String("b"), Int(2))), map[string]Expect{
		DubboGo: {PeerReadsOnly: "dubbo-go-hessian2 writes a Go map untyped (H)"},
	})
	add("map null key and value", Map("", Null(), String("null key"), String("null value"), Null()), goMapOrder)
	add("map nested in list in map", Map("", String("list"), List("", Map("", String("x"), Int(1)))), nil)

	// --- object: class definitions and their reuse -----------------------
	add("object pojo", Pojo(1, "alice", 30, true, 98.5), nil)
	add("object pojo all zero", Object(PojoClass, "id", Long(0), "name", Null(), "age", Int(0), "active", Bool(false), "score", Double(0)), nil)
	add("object list of 3 pojos (x60 reuse)", List("", Pojo(1, "a", 1, true, 1.5), Pojo(2, "b", 2, false, 2.5), Pojo(3, "c", 3, true, 0.001)), nil)
	add("object two classes interleaved", List("",
		Pojo(1, "a", 1, true, 1), NodeOf("n", Null(), Int(7)), Pojo(2, "b", 2, false, 2), NodeOf("m", Null(), Null())), nil)
	add("object 17 classes (O int reference form)", manyClasses(17), map[string]Expect{
		Caucho:  {Skip: "needs 17 Java classes; hessian.js and dubbo-go-hessian2 cover the O form"},
		DubboGo: {Skip: "needs 17 registered Go types; hessian.js covers the O form"},
	})

	add("object payloads of every kind", List("",
		NodeOf("date", Null(), Date(1700000000123)),
		NodeOf("binary", Null(), Binary(Bytes(20))),
		NodeOf("ints", Null(), List("[int", Int(1), Int(2))),
		NodeOf("map", Null(), Map("", String("k"), Long(-1))),
		NodeOf("pojo", Null(), Pojo(5, "five", 5, false, 5.5))), nil)

	// --- shared references and cycles ------------------------------------
	add("ref shared object in list", List("", NodeOf("shared", Null(), Int(1)).As("s"), Ref("s"), Ref("s")), nil)
	add("ref cycle: node points at itself", NodeOf("self", Ref("me"), Null()).As("me"), nil)
	add("ref cycle: a -> b -> a", NodeOf("a", NodeOf("b", Ref("a"), Null()), Null()).As("a"), nil)
	add("ref shared list from two objects", List("",
		NodeOf("x", Null(), List("", Int(1), Int(2)).As("l")),
		NodeOf("y", Null(), Ref("l"))), nil)
	add("ref list containing itself", List("", Int(1), Ref("l")).As("l"), nil)
	add("ref map shared by two list slots", List("", Map("", String("k"), Int(1)).As("m"), Ref("m")), nil)
	add("ref nested objects with shared payload", NodeOf("root",
		NodeOf("mid", NodeOf("leaf", Null(), Pojo(9, "p", 9, true, 9.5).As("p")), Ref("p")),
		List("", Ref("p"))), nil)

	// --- Java conventions ------------------------------------------------
	add("enum", Enum(ColorClass, "RED"), nil)
	add("enum repeated is a reference", List("", Enum(ColorClass, "RED").As("r"), Enum(ColorClass, "GREEN"), Ref("r")), nil)
	add("date in a list", List("", Date(1700000000123), Date(1699999980000)), nil)
	// Every peer writes a Throwable as hessian-lite does: detailMessage,
	// cause (the exception itself when there is none), stackTrace,
	// suppressedExceptions. Java 9 gave StackTraceElement four more fields
	// and Java keeps "no suppressed exceptions" as a shared, typed
	// Collections$EmptyList: Caucho on JDK 17 writes both as they are.
	cauchoFrames := "frames of JDK 17's 8-field StackTraceElement (classLoaderName, moduleName, moduleVersion, format added) " +
		"and suppressedExceptions as the typed java.util.Collections$EmptyList; we write hessian-lite's 4-field frame and an untyped list"
	add("exception without cause", Exception(ExceptionClass, "boom", nil), map[string]Expect{
		Caucho: {Form: &Form{Why: cauchoFrames, Bytes: mustHex("4315696e7465726f702e54657374457863657074696f6e940d64657461696c4d6573736167650563617573650a737461636b54726163651473757070726573736564457863657074696f6e736004626f6f6d5190711c5b6a6176612e6c616e672e537461636b5472616365456c656d656e74431b6a6176612e6c616e672e537461636b5472616365456c656d656e74980f636c6173734c6f616465724e616d650a6d6f64756c654e616d650d6d6f64756c6556657273696f6e0e6465636c6172696e67436c6173730a6d6574686f644e616d650866696c654e616d650a6c696e654e756d62657206666f726d6174614e4e4e0f696e7465726f702e536572766963650463616c6c0c536572766963652e6a617661ba90701f6a6176612e7574696c2e436f6c6c656374696f6e7324456d7074794c697374")}},
	})
	add("exception with cause", Exception(ExceptionClass, "outer", Exception(ExceptionClass, "inner", nil)), map[string]Expect{
		Caucho: {Form: &Form{Why: cauchoFrames, Bytes: mustHex("4315696e7465726f702e54657374457863657074696f6e940d64657461696c4d6573736167650563617573650a737461636b54726163651473757070726573736564457863657074696f6e7360056f757465726005696e6e65725191711c5b6a6176612e6c616e672e537461636b5472616365456c656d656e74431b6a6176612e6c616e672e537461636b5472616365456c656d656e74980f636c6173734c6f616465724e616d650a6d6f64756c654e616d650d6d6f64756c6556657273696f6e0e6465636c6172696e67436c6173730a6d6574686f644e616d650866696c654e616d650a6c696e654e756d62657206666f726d6174614e4e4e0f696e7465726f702e536572766963650463616c6c0c536572766963652e6a617661ba90701f6a6176612e7574696c2e436f6c6c656374696f6e7324456d7074794c6973747190614e4e4e0f696e7465726f702e536572766963650463616c6c0c536572766963652e6a617661ba905194")}},
	})

	// BigDecimal: we, hessian.js and dubbo-go-hessian2 write hessian-lite's
	// form, an object java.math.BigDecimal with one String field "value".
	// Caucho 4.0.38 has no BigDecimal serializer: its generic one writes the
	// non-transient fields scale and intVal, and its generic deserializer
	// reads them back, ignoring "value".
	add("bigdecimal", BigDecimal("-12.3400"), map[string]Expect{
		Caucho: {
			// BigDecimal keeps an unscaled value that fits a long in the
			// transient intCompact, so intVal is null: Caucho loses the
			// value itself, for every reader. Ours keeps what is there.
			Wire: Object("java.math.BigDecimal", "scale", Int(4), "intVal", Null()),
			Sees: BigDecimal("0"),
			Form: &Form{Why: "Caucho writes {scale, intVal}, hessian-lite {value}", Bytes: mustHex("43146a6176612e6d6174682e426967446563696d616c92057363616c6506696e7456616c60944e")},
		},
	})
	add("bigdecimal large", BigDecimal("123456789012345678901234567890.123456789"), map[string]Expect{
		Caucho: {
			// Past a long, intVal is a BigInteger (signum, mag, ...):
			// Caucho's bytes hold the value, and ours reads it. Reading
			// ours, Caucho ignores "value" and builds BigDecimal 0.
			Sees: BigDecimal("0"),
			Form: &Form{Why: "Caucho writes {scale, intVal: BigInteger{signum, mag, ...}}, hessian-lite {value}", Bytes: mustHex("43146a6176612e6d6174682e426967446563696d616c92057363616c6506696e7456616c609943146a6176612e6d6174682e426967496e746567657296067369676e756d0f626974436f756e74506c75734f6e65106269744c656e677468506c75734f6e65136c6f77657374536574426974506c757354776f1966697273744e6f6e7a65726f496e744e756d506c757354776f036d616761919090909074045b696e74495ce0e9a5496015fec549aadfa32849ae398115")},
		},
	})
	return cs
}

// Binary chunk sizes: each implementation splits a long binary into
// non-final chunks (x41) of its own size, all valid Hessian. Ours are 32 KiB.
const (
	hessianJSBinaryChunk = 4093 // hessian.js, like hessian-lite's 4 KiB buffer less the 3-byte header
	cauchoBinaryChunk    = 8189 // Caucho 4.0.38's 8 KiB output buffer less the header, for a value written first
	dubboGoBinaryChunk   = 4096 // dubbo-go-hessian2's CHUNK_SIZE
)

// binaryForms documents, for a binary longer than a peer's chunk size, the
// chunks that peer writes.
func binaryForms(data []byte) map[string]Expect {
	forms := map[string]Expect{}
	for peer, chunk := range map[string]int{HessianJS: hessianJSBinaryChunk, Caucho: cauchoBinaryChunk, DubboGo: dubboGoBinaryChunk} {
		if len(data) > chunk {
			forms[peer] = Expect{Form: &Form{
				Why:   fmt.Sprintf("%s splits binaries into %d-byte chunks, we into 32 KiB ones", peer, chunk),
				Bytes: ChunkedBinary(data, chunk),
			}}
		}
	}
	return forms
}

// ChunkedBinary is data written as non-final chunks of chunk bytes and a
// final chunk in its shortest form.
func ChunkedBinary(data []byte, chunk int) []byte {
	var b []byte
	for len(data) > chunk {
		b = append(b, 0x41, byte(chunk>>8), byte(chunk))
		b = append(b, data[:chunk]...)
		data = data[chunk:]
	}
	switch n := len(data); {
	case n <= 15:
		b = append(b, byte(0x20+n))
	case n <= 1023:
		b = append(b, byte(0x34+n>>8), byte(n))
	default:
		b = append(b, 0x42, byte(n>>8), byte(n))
	}
	return append(b, data...)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Pojo describes the five-field interop.Pojo.
func Pojo(id int64, name string, age int32, active bool, score float64) *Desc {
	return Object(PojoClass, "id", Long(id), "name", String(name), "age", Int(age), "active", Bool(active), "score", Double(score))
}

// NodeOf describes an interop.Node.
func NodeOf(name string, next, payload *Desc) *Desc {
	return Object(NodeClass, "name", String(name), "next", next, "payload", payload)
}

func ints(n int) []*Desc {
	items := make([]*Desc, n)
	for i := range items {
		items[i] = Int(int32(i*37 - 500))
	}
	return items
}

// manyClasses is a list of n objects of n distinct classes: from the 17th
// class on, an instance names its definition with O and an int.
func manyClasses(n int) *Desc {
	l := List("")
	for i := range n {
		l.Items = append(l.Items, Object(fmt.Sprintf("interop.C%02d", i), "v", Int(int32(i))))
	}
	// A second instance of the last class reuses its definition by number.
	l.Items = append(l.Items, Object(fmt.Sprintf("interop.C%02d", n-1), "v", Int(-1)))
	return l
}

// Text returns a string of exactly n UTF-16 units mixing 1-, 2-, 3- and
// 4-byte UTF-8 characters.
func Text(n int) string {
	var b strings.Builder
	pattern := []rune("aé中😀b")
	units := 0
	for i := 0; units < n; i++ {
		r := pattern[i%len(pattern)]
		w := 1
		if r > 0xffff {
			w = 2
		}
		if units+w > n {
			r, w = 'z', 1
		}
		b.WriteRune(r)
		units += w
	}
	return b.String()
}

// Bytes returns n deterministic bytes covering every byte value.
func Bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + 7)
	}
	return b
}
