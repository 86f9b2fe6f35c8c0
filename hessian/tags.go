package hessian

// Byte codes of the Hessian 2.0 serialization grammar.
const (
	tagBinaryChunk      = 0x41 // 'A'
	tagBinaryFinal      = 0x42 // 'B'
	tagClassDef         = 0x43 // 'C'
	tagDouble           = 0x44 // 'D'
	tagFalse            = 0x46 // 'F'
	tagMapUntyped       = 0x48 // 'H'
	tagInt              = 0x49 // 'I'
	tagDateMillis       = 0x4a
	tagDateMinutes      = 0x4b
	tagLong             = 0x4c // 'L'
	tagMapTyped         = 0x4d // 'M'
	tagNull             = 0x4e // 'N'
	tagObject           = 0x4f // 'O'
	tagRef              = 0x51 // 'Q'
	tagStringChunk      = 0x52 // 'R'
	tagStringFinal      = 0x53 // 'S'
	tagTrue             = 0x54 // 'T'
	tagListVarTyped     = 0x55 // 'U'
	tagListFixedTyped   = 0x56 // 'V'
	tagListVarUntyped   = 0x57 // 'W'
	tagListFixedUntyped = 0x58 // 'X'
	tagLongInt          = 0x59 // 'Y'
	tagEnd              = 0x5a // 'Z'
	tagDoubleZero       = 0x5b
	tagDoubleOne        = 0x5c
	tagDoubleByte       = 0x5d
	tagDoubleShort      = 0x5e
	tagDoubleMill       = 0x5f

	tagStringDirect  = 0x00 // 0x00-0x1f: string of 0-31 UTF-16 units
	tagBinaryDirect  = 0x20 // 0x20-0x2f: binary of 0-15 bytes
	tagStringShort   = 0x30 // 0x30-0x33: string of 0-1023 units
	tagBinaryShort   = 0x34 // 0x34-0x37: binary of 0-1023 bytes
	tagLongShortZero = 0x3c // 0x38-0x3f: long in three bytes
	tagObjectDirect  = 0x60 // 0x60-0x6f: instance of class def 0-15
	tagListTypedLen  = 0x70 // 0x70-0x77: typed list of 0-7 items
	tagListLen       = 0x78 // 0x78-0x7f: untyped list of 0-7 items
	tagIntZero       = 0x90 // 0x80-0xbf: int -16..47
	tagIntByteZero   = 0xc8 // 0xc0-0xcf: int in two bytes
	tagIntShortZero  = 0xd4 // 0xd0-0xd7: int in three bytes
	tagLongZero      = 0xe0 // 0xd8-0xef: long -8..15
	tagLongByteZero  = 0xf8 // 0xf0-0xff: long in two bytes

	stringDirectMax = 0x1f
	stringShortMax  = 0x3ff
	binaryDirectMax = 0x0f
	binaryShortMax  = 0x3ff
	listDirectMax   = 7
	objectDirectMax = 0x0f

	// chunkMax is the largest chunk hessian-lite writes for a string (in
	// UTF-16 units); the encoder uses it for binary too.
	chunkMax = 0x8000
)

// kind classifies a tag byte so the decoder can dispatch through a dense
// switch (compiled to a jump table).
type kind uint8

const (
	kInvalid kind = iota
	kNull
	kTrue
	kFalse
	kIntDirect
	kIntByte
	kIntShort
	kInt
	kLongDirect
	kLongByte
	kLongShort
	kLongInt
	kLong
	kDoubleZero
	kDoubleOne
	kDoubleByte
	kDoubleShort
	kDoubleMill
	kDouble
	kDateMillis
	kDateMinutes
	kString
	kBinary
	kListVarTyped
	kListFixedTyped
	kListVarUntyped
	kListFixedUntyped
	kListDirectTyped
	kListDirectUntyped
	kMapTyped
	kMapUntyped
	kClassDef
	kObject
	kObjectDirect
	kRef
	kEnd
)

// tagKinds maps every byte to its kind. It is computed once and only read.
var tagKinds = func() (t [256]kind) {
	set := func(lo, hi int, k kind) {
		for i := lo; i <= hi; i++ {
			t[i] = k
		}
	}
	set(0x00, 0x1f, kString)
	set(0x20, 0x2f, kBinary)
	set(0x30, 0x33, kString)
	set(0x34, 0x37, kBinary)
	set(0x38, 0x3f, kLongShort)
	t[tagBinaryChunk] = kBinary
	t[tagBinaryFinal] = kBinary
	t[tagClassDef] = kClassDef
	t[tagDouble] = kDouble
	t[tagFalse] = kFalse
	t[tagMapUntyped] = kMapUntyped
	t[tagInt] = kInt
	t[tagDateMillis] = kDateMillis
	t[tagDateMinutes] = kDateMinutes
	t[tagLong] = kLong
	t[tagMapTyped] = kMapTyped
	t[tagNull] = kNull
	t[tagObject] = kObject
	t[tagRef] = kRef
	t[tagStringChunk] = kString
	t[tagStringFinal] = kString
	t[tagTrue] = kTrue
	t[tagListVarTyped] = kListVarTyped
	t[tagListFixedTyped] = kListFixedTyped
	t[tagListVarUntyped] = kListVarUntyped
	t[tagListFixedUntyped] = kListFixedUntyped
	t[tagLongInt] = kLongInt
	t[tagEnd] = kEnd
	t[tagDoubleZero] = kDoubleZero
	t[tagDoubleOne] = kDoubleOne
	t[tagDoubleByte] = kDoubleByte
	t[tagDoubleShort] = kDoubleShort
	t[tagDoubleMill] = kDoubleMill
	set(0x60, 0x6f, kObjectDirect)
	set(0x70, 0x77, kListDirectTyped)
	set(0x78, 0x7f, kListDirectUntyped)
	set(0x80, 0xbf, kIntDirect)
	set(0xc0, 0xcf, kIntByte)
	set(0xd0, 0xd7, kIntShort)
	set(0xd8, 0xef, kLongDirect)
	set(0xf0, 0xff, kLongByte)
	return t
}()

// isStringTag reports whether b starts a string (any chunk form).
func isStringTag(b byte) bool {
	return b <= stringDirectMax || (b >= tagStringShort && b <= tagStringShort+3) ||
		b == tagStringChunk || b == tagStringFinal
}
