package interop

import (
	"encoding/hex"
	"strings"
	"unicode/utf16"

	"github.com/dubbogw/dubbogw/test/peers"
)

// Why dubbo-go-hessian2's bytes differ from ours (and Java's) for the same
// value. Each is a valid Hessian 2.0 form; none changes the value.
const (
	whyDouble = "dubbo-go-hessian2 writes a double that is not a small integer as all 64 bits (D); " +
		"Java's Hessian2Output and we use the 4-byte thousandths form (x5f) when it is exact"
	whyDate      = "dubbo-go-hessian2 always writes milliseconds (x4a); Java and we write a date on a whole minute as minutes (x4b)"
	whyList      = "dubbo-go-hessian2 always writes an untyped list as x58 and a length; Java and we use x78-x7f for up to 7 items"
	whyTypedList = "dubbo-go-hessian2 writes a typed list as V, the type as a full string and a length every time; " +
		"Java and we use x70-x77 for up to 7 items and refer to a type already written by number"
	whyEnum      = "a Go enum is a value, so dubbo-go-hessian2 writes a repeated constant again instead of a reference as Java does"
	whyException = "dubbo-go-hessian2 writes its Go struct's fields (serialVersionUID first, suppressedExceptions before stackTrace) " +
		"and null for no cause; hessian-lite, Java and we write detailMessage, cause (itself when none), stackTrace, suppressedExceptions"
	whyString       = "dubbo-go-hessian2 splits strings into chunks of about 4096 UTF-16 units; Java and we into 32768"
	whyNoNullString = "a Go string cannot be null: dubbo-go-hessian2 writes the empty string"
)

// dubboExpect is what dubbo-go-hessian2 does differently with a case of the
// table, by case name; it replaces the table's own entry for this peer.
var dubboExpect = map[string]peers.Expect{
	"double 32768":           {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("4440e0000000000000")}},
	"double -32769":          {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("44c0e0002000000000")}},
	"double 1.5":             {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("443ff8000000000000")}},
	"double -1.5":            {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("44bff8000000000000")}},
	"double 0.001":           {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("443f50624dd2f1a9fc")}},
	"double -0.001":          {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("44bf50624dd2f1a9fc")}},
	"double 0.1":             {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("443fb999999999999a")}},
	"double 12.25":           {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("444028800000000000")}},
	"double 2.147483647e+06": {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("444140624dd2d0e560")}},
	"date 0":                 {Form: &peers.Form{Why: whyDate, Bytes: mustHex("4a0000000000000000")}},
	"date 1699999980000":     {Form: &peers.Form{Why: whyDate, Bytes: mustHex("4a0000018bcfe519e0")}},
	"date -86400000":         {Form: &peers.Form{Why: whyDate, Bytes: mustHex("4afffffffffad9a400")}},
	"date 128849018820000":   {Form: &peers.Form{Why: whyDate, Bytes: mustHex("4a0000752fffff15a0")}},
	"list untyped empty":     {Form: &peers.Form{Why: whyList, Bytes: mustHex("5890")}},
	"list untyped mixed":     {Form: &peers.Form{Why: whyList + "; " + whyDouble, Bytes: mustHex("5896910374776f44400c0000000000004e54e6")}},
	"list [int 3 items":      {Form: &peers.Form{Why: whyTypedList, Bytes: mustHex("56045b696e7493c60cc631c656")}},
	"list [string":           {Form: &peers.Form{Why: whyTypedList, Bytes: mustHex("56075b737472696e6793016101c3bc02eda0bdedb880")}},
	"list [long":             {Form: &peers.Form{Why: whyTypedList, Bytes: mustHex("56055b6c6f6e6792e14c7fffffffffffffff")}},
	"list [double":           {Form: &peers.Form{Why: whyTypedList + "; " + whyDouble, Bytes: mustHex("56075b646f75626c65935b443ff8000000000000447e37e43c8800759c")}},
	"list [boolean":          {Form: &peers.Form{Why: whyTypedList, Bytes: mustHex("56085b626f6f6c65616e925446")}},
	"list nested, type names reused by reference": {Form: &peers.Form{Why: whyList + "; " + whyTypedList, Bytes: mustHex("589456045b696e74919156045b696e74919256075b737472696e6791017856075b737472696e67910179")}},
	"map nested in list in map":                   {Form: &peers.Form{Why: whyList, Bytes: mustHex("48046c6973745891480178915a5a")}},
	"object pojo":                                 {Form: &peers.Form{Why: whyDouble, Bytes: mustHex("430c696e7465726f702e506f6a6f95026964046e616d6503616765066163746976650573636f726560e105616c696365ae54444058a00000000000")}},
	"object list of 3 pojos (x60 reuse)":          {Form: &peers.Form{Why: whyList + "; " + whyDouble, Bytes: mustHex("5893430c696e7465726f702e506f6a6f95026964046e616d6503616765066163746976650573636f726560e101619154443ff800000000000060e20162924644400400000000000060e301639354443f50624dd2f1a9fc")}},
	"object two classes interleaved":              {Form: &peers.Form{Why: whyList + "; " + whyDouble, Bytes: mustHex("5894430c696e7465726f702e506f6a6f95026964046e616d6503616765066163746976650573636f726560e1016191545c430c696e7465726f702e4e6f646593046e616d65046e657874077061796c6f616461016e4e9760e2016292465d0261016d4e4e")}},
	"ref shared object in list":                   {Form: &peers.Form{Why: whyList, Bytes: mustHex("5893430c696e7465726f702e4e6f646593046e616d65046e657874077061796c6f616460067368617265644e9151915191")}},
	"ref shared list from two objects":            {Form: &peers.Form{Why: whyList, Bytes: mustHex("5892430c696e7465726f702e4e6f646593046e616d65046e657874077061796c6f61646001784e589291926001794e5192")}},
	"ref list containing itself":                  {Form: &peers.Form{Why: whyList, Bytes: mustHex("5892915190")}},
	"ref map shared by two list slots":            {Form: &peers.Form{Why: whyList, Bytes: mustHex("589248016b915a5191")}},
	"ref nested objects with shared payload":      {Form: &peers.Form{Why: whyList + "; " + whyDouble, Bytes: mustHex("430c696e7465726f702e4e6f646593046e616d65046e657874077061796c6f61646004726f6f7460036d696460046c6561664e430c696e7465726f702e506f6a6f95026964046e616d6503616765066163746976650573636f726561e901709954444023000000000000519358915193")}},
	"enum repeated is a reference":                {Form: &peers.Form{Why: whyList + "; " + whyEnum, Bytes: mustHex("5893430d696e7465726f702e436f6c6f7291046e616d6560035245446005475245454e6003524544")}},
	"date in a list":                              {Form: &peers.Form{Why: whyList + "; " + whyDate, Bytes: mustHex("58924a0000018bcfe5687b4a0000018bcfe519e0")}},
	"exception without cause":                     {Form: &peers.Form{Why: whyException, Bytes: mustHex("4315696e7465726f702e54657374457863657074696f6e951073657269616c56657273696f6e5549440d64657461696c4d6573736167651473757070726573736564457863657074696f6e730a737461636b547261636505636175736560e004626f6f6d4e561c5b6a6176612e6c616e672e537461636b5472616365456c656d656e7491431b6a6176612e6c616e672e537461636b5472616365456c656d656e74940e6465636c6172696e67436c6173730a6d6574686f644e616d650866696c654e616d650a6c696e654e756d626572610f696e7465726f702e536572766963650463616c6c0c536572766963652e6a617661ba4e")}},
	"exception with cause":                        {Form: &peers.Form{Why: whyException, Bytes: mustHex("4315696e7465726f702e54657374457863657074696f6e951073657269616c56657273696f6e5549440d64657461696c4d6573736167651473757070726573736564457863657074696f6e730a737461636b547261636505636175736560e0056f757465724e561c5b6a6176612e6c616e672e537461636b5472616365456c656d656e7491431b6a6176612e6c616e672e537461636b5472616365456c656d656e74940e6465636c6172696e67436c6173730a6d6574686f644e616d650866696c654e616d650a6c696e654e756d626572610f696e7465726f702e536572766963650463616c6c0c536572766963652e6a617661ba60e005696e6e65724e561c5b6a6176612e6c616e672e537461636b5472616365456c656d656e7491610f696e7465726f702e536572766963650463616c6c0c536572766963652e6a617661ba4e")}},
	"object payloads of every kind":               {Form: &peers.Form{Why: whyList + "; " + whyTypedList + "; " + whyDouble, Bytes: mustHex("5895430c696e7465726f702e4e6f646593046e616d65046e657874077061796c6f61646004646174654e4a0000018bcfe5687b600662696e6172794e34140726456483a2c1e0ff1e3d5c7b9ab9d8f71635546004696e74734e56045b696e7492919260036d61704e48016bdf5a6004706f6a6f4e430c696e7465726f702e506f6a6f95026964046e616d6503616765066163746976650573636f726561e504666976659546444016000000000000")}},
	"object pojo all zero": {
		Wire: peers.Object(peers.PojoClass, "id", peers.Long(0), "name", peers.String(""), "age", peers.Int(0), "active", peers.Bool(false), "score", peers.Double(0)),
		Sees: peers.Object(peers.PojoClass, "id", peers.Long(0), "name", peers.String(""), "age", peers.Int(0), "active", peers.Bool(false), "score", peers.Double(0)),
		Form: &peers.Form{Why: whyNoNullString, Bytes: mustHex("430c696e7465726f702e506f6a6f95026964046e616d6503616765066163746976650573636f726560e00090465b")},
	},

	"string 32768 units":                       stringForm(peers.Text(32768)),
	"string 32769 units":                       stringForm(peers.Text(32769)),
	"string 65536 units":                       stringForm(peers.Text(65536)),
	"string emoji across the 32768 chunk edge": stringForm(strings.Repeat("a", 32767) + "😀" + strings.Repeat("b", 32767)),

	"list [object":                {PeerReadsOnly: "dubbo-go-hessian2 writes []interface{} untyped and has no Go type it writes as [object"},
	"list java.util.LinkedList":   {PeerReadsOnly: "dubbo-go-hessian2 writes a Go slice untyped or as a primitive array; LinkedList needs a registered collection type"},
	"map java.util.TreeMap":       {PeerReadsOnly: "dubbo-go-hessian2 writes a Go map untyped (H)"},
	"map java.util.LinkedHashMap": {PeerReadsOnly: "dubbo-go-hessian2 writes a Go map untyped (H)"},
}

func stringForm(s string) peers.Expect {
	return peers.Expect{Form: &peers.Form{Why: whyString, Bytes: dubboGoString(s)}}
}

// dubboGoString is how dubbo-go-hessian2 v1.12.5 writes s: it takes
// characters until a chunk holds 4096 UTF-16 units or more (a pair may make
// it 4097), writes R chunks while characters remain, and writes each unit as
// Java's modified UTF-8 does (a pair as two 3-byte surrogates).
func dubboGoString(s string) []byte {
	const chunk = 4096
	runes := []rune(s)
	var b []byte
	for len(runes) > 0 {
		units, n := 0, 0
		for n < len(runes) && units < chunk {
			units += utf16.RuneLen(runes[n])
			n++
		}
		var body []byte
		for _, u := range utf16.Encode(runes[:n]) {
			switch {
			case u < 0x80:
				body = append(body, byte(u))
			case u < 0x800:
				body = append(body, byte(0xc0|u>>6), byte(0x80|u&0x3f))
			default:
				body = append(body, byte(0xe0|u>>12), byte(0x80|u>>6&0x3f), byte(0x80|u&0x3f))
			}
		}
		runes = runes[n:]
		switch {
		case len(runes) > 0:
			b = append(b, 'R', byte(units>>8), byte(units))
		case units <= 31:
			b = append(b, byte(units))
		case units <= 1023:
			b = append(b, byte(0x30+units>>8), byte(units))
		default:
			b = append(b, 'S', byte(units>>8), byte(units))
		}
		b = append(b, body...)
	}
	return b
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
