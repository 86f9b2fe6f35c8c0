package hessian

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"
)

// Limits bound what a Decoder accepts, so hostile input cannot make it
// allocate or recurse without bound. A zero field means the default.
type Limits struct {
	MaxBytes  int // whole input; default 8 MiB
	MaxDepth  int // nesting of lists/maps/objects; default 256
	MaxLength int // elements of one list/map, fields of one class def, bytes of one string/binary (after chunk assembly); default 8 MiB
}

// DefaultLimits returns the limits a new Decoder starts with.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 8 << 20, MaxDepth: 256, MaxLength: 8 << 20}
}

// classDef is one 'C' definition: the class name, its field names in wire
// order and, for the Java classes with a dedicated Go type, which one.
type classDef struct {
	name   string
	fields []string
	kind   javaKind
}

// Decoder reads Hessian 2.0 values from a byte slice. Successive Decode
// calls share references, class definitions and type references, as the
// values of one Dubbo body do. A Decoder is not safe for concurrent use.
//
// Decoded values never alias the input slice, which the caller may reuse.
// To save allocations, short strings are cut from shared copies of 2 KiB
// windows of the input and small objects from shared slabs, so a value
// kept alive keeps its neighbours' memory too; a Decoder itself keeps
// nothing it returned once Reset.
type Decoder struct {
	data   []byte
	pos    int
	limits Limits
	err    error

	depth int
	// pending counts the values that open fixed-length containers still
	// expect after the one being read; each needs at least one byte, so a
	// new declared length must fit in what remains after them.
	pending int

	refs    []any
	classes []classDef
	types   []string

	// Scratch stacks for variable-length lists and maps, copied out into
	// exactly sized slices when the container ends.
	items   []any
	entries []Entry
	chunks  []chunkSpan

	// text is a copy of a window of the input starting at textStart; short
	// strings are sliced from it rather than allocated one by one.
	text      string
	textStart int

	// Slabs that objects and their fields are carved from, doubling from
	// the size of the first object to a few dozen within one input. A slab stays
	// alive while any value carved from it does; Reset lets go of them.
	objSlab   []Object
	fieldSlab []Field
}

const (
	textWindow     = 2048 // bytes copied at a time for short strings
	maxWindowed    = 256  // longer strings get their own allocation
	maxObjSlab     = 32
	maxFieldSlab   = 128
	maxSlabbedList = 16 // objects with more fields get their own slice
)

// NewDecoder returns a Decoder reading data with DefaultLimits.
func NewDecoder(data []byte) *Decoder {
	return &Decoder{data: data, limits: DefaultLimits()}
}

// SetLimits replaces the limits; zero or negative fields take the default.
func (d *Decoder) SetLimits(l Limits) {
	def := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = def.MaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = def.MaxDepth
	}
	if l.MaxLength <= 0 {
		l.MaxLength = def.MaxLength
	}
	d.limits = l
}

// Reset makes the Decoder read data from the start, forgetting references,
// class definitions, type references and any earlier error, and keeping the
// capacity it has allocated. The limits are kept.
func (d *Decoder) Reset(data []byte) {
	d.data = data
	d.pos = 0
	d.err = nil
	d.depth = 0
	d.pending = 0
	clear(d.refs)
	d.refs = d.refs[:0]
	clear(d.classes)
	d.classes = d.classes[:0]
	clear(d.types)
	d.types = d.types[:0]
	clear(d.items)
	d.items = d.items[:0]
	clear(d.entries)
	d.entries = d.entries[:0]
	d.chunks = d.chunks[:0]
	d.text = ""
	d.textStart = 0
	if len(d.objSlab) > 0 { // values already returned live there
		d.objSlab = nil
	}
	if len(d.fieldSlab) > 0 {
		d.fieldSlab = nil
	}
}

// Offset returns the position of the next byte to read.
func (d *Decoder) Offset() int { return d.pos }

// Remaining returns the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.data) - d.pos }

// Decode reads the next value. It returns io.EOF when no bytes remain and a
// *DecodeError for malformed, truncated or over-limit input; after an error
// every later call returns the same error until Reset.
func (d *Decoder) Decode() (any, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.pos >= len(d.data) {
		return nil, io.EOF
	}
	if len(d.data) > d.limits.MaxBytes {
		d.err = d.errorf(0, "input of %d bytes exceeds MaxBytes %d", len(d.data), d.limits.MaxBytes)
		return nil, d.err
	}
	v, err := d.value()
	if err != nil {
		d.err = err
		return nil, err
	}
	return v, nil
}

// value reads one value starting at d.pos, which must be inside the input.
func (d *Decoder) value() (any, error) {
	for {
		start := d.pos
		tag := d.data[start]
		d.pos++
		switch tagKinds[tag] {
		case kNull:
			return nil, nil
		case kTrue:
			return true, nil
		case kFalse:
			return false, nil
		case kIntDirect:
			return int32(tag) - tagIntZero, nil
		case kIntByte:
			if err := d.need(start, 1); err != nil {
				return nil, err
			}
			v := (int32(tag)-tagIntByteZero)<<8 | int32(d.data[d.pos])
			d.pos++
			return v, nil
		case kIntShort:
			if err := d.need(start, 2); err != nil {
				return nil, err
			}
			v := (int32(tag)-tagIntShortZero)<<16 | int32(d.data[d.pos])<<8 | int32(d.data[d.pos+1])
			d.pos += 2
			return v, nil
		case kInt:
			if err := d.need(start, 4); err != nil {
				return nil, err
			}
			v := int32(binary.BigEndian.Uint32(d.data[d.pos:]))
			d.pos += 4
			return v, nil
		case kLongDirect:
			return int64(tag) - tagLongZero, nil
		case kLongByte:
			if err := d.need(start, 1); err != nil {
				return nil, err
			}
			v := (int64(tag)-tagLongByteZero)<<8 | int64(d.data[d.pos])
			d.pos++
			return v, nil
		case kLongShort:
			if err := d.need(start, 2); err != nil {
				return nil, err
			}
			v := (int64(tag)-tagLongShortZero)<<16 | int64(d.data[d.pos])<<8 | int64(d.data[d.pos+1])
			d.pos += 2
			return v, nil
		case kLongInt:
			if err := d.need(start, 4); err != nil {
				return nil, err
			}
			v := int64(int32(binary.BigEndian.Uint32(d.data[d.pos:])))
			d.pos += 4
			return v, nil
		case kLong:
			if err := d.need(start, 8); err != nil {
				return nil, err
			}
			v := int64(binary.BigEndian.Uint64(d.data[d.pos:]))
			d.pos += 8
			return v, nil
		case kDoubleZero:
			return float64(0), nil
		case kDoubleOne:
			return float64(1), nil
		case kDoubleByte:
			if err := d.need(start, 1); err != nil {
				return nil, err
			}
			v := float64(int8(d.data[d.pos]))
			d.pos++
			return v, nil
		case kDoubleShort:
			if err := d.need(start, 2); err != nil {
				return nil, err
			}
			v := float64(int16(binary.BigEndian.Uint16(d.data[d.pos:])))
			d.pos += 2
			return v, nil
		case kDoubleMill:
			if err := d.need(start, 4); err != nil {
				return nil, err
			}
			// hessian-lite and Caucho write and read this form as an int
			// number of thousandths, whatever the spec's "float" says.
			v := 0.001 * float64(int32(binary.BigEndian.Uint32(d.data[d.pos:])))
			d.pos += 4
			return v, nil
		case kDouble:
			if err := d.need(start, 8); err != nil {
				return nil, err
			}
			v := math.Float64frombits(binary.BigEndian.Uint64(d.data[d.pos:]))
			d.pos += 8
			return v, nil
		case kDateMillis:
			if err := d.need(start, 8); err != nil {
				return nil, err
			}
			ms := int64(binary.BigEndian.Uint64(d.data[d.pos:]))
			d.pos += 8
			return time.UnixMilli(ms).UTC(), nil
		case kDateMinutes:
			if err := d.need(start, 4); err != nil {
				return nil, err
			}
			minutes := int64(int32(binary.BigEndian.Uint32(d.data[d.pos:])))
			d.pos += 4
			return time.UnixMilli(minutes * 60000).UTC(), nil
		case kString:
			s, err := d.readString(start)
			if err != nil {
				return nil, err
			}
			return s, nil
		case kBinary:
			b, err := d.readBinary(start)
			if err != nil {
				return nil, err
			}
			return b, nil
		case kListVarTyped:
			typ, err := d.readType(start)
			if err != nil {
				return nil, err
			}
			return d.readVarList(start, typ)
		case kListFixedTyped:
			typ, err := d.readType(start)
			if err != nil {
				return nil, err
			}
			n, err := d.readInt(start)
			if err != nil {
				return nil, err
			}
			return d.readFixedList(start, typ, int(n))
		case kListVarUntyped:
			return d.readVarList(start, "")
		case kListFixedUntyped:
			n, err := d.readInt(start)
			if err != nil {
				return nil, err
			}
			return d.readFixedList(start, "", int(n))
		case kListDirectTyped:
			typ, err := d.readType(start)
			if err != nil {
				return nil, err
			}
			return d.readFixedList(start, typ, int(tag-tagListTypedLen))
		case kListDirectUntyped:
			return d.readFixedList(start, "", int(tag-tagListLen))
		case kMapTyped:
			typ, err := d.readType(start)
			if err != nil {
				return nil, err
			}
			return d.readMap(start, typ)
		case kMapUntyped:
			return d.readMap(start, "")
		case kClassDef:
			if err := d.readClassDef(start); err != nil {
				return nil, err
			}
			if d.pos >= len(d.data) {
				return nil, d.errorf(start, "class definition not followed by a value")
			}
			continue // a definition precedes the value it describes
		case kObject:
			idx, err := d.readInt(start)
			if err != nil {
				return nil, err
			}
			return d.readInstance(start, int(idx))
		case kObjectDirect:
			return d.readInstance(start, int(tag-tagObjectDirect))
		case kRef:
			idx, err := d.readInt(start)
			if err != nil {
				return nil, err
			}
			if idx < 0 || int(idx) >= len(d.refs) {
				return nil, d.errorf(start, "reference %d to an undefined value (%d defined)", idx, len(d.refs))
			}
			return d.refs[idx], nil
		case kEnd:
			return nil, d.errorf(start, "end marker where a value was expected")
		default:
			return nil, d.errorf(start, "unknown tag")
		}
	}
}

// elem reads a value inside the container whose tag is at ctx.
func (d *Decoder) elem(ctx int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.truncated(ctx)
	}
	return d.value()
}

// readInt reads an int in any of its forms, for a length or an index inside
// the value whose tag is at ctx.
func (d *Decoder) readInt(ctx int) (int32, error) {
	start := d.pos
	if start >= len(d.data) {
		return 0, d.truncated(ctx)
	}
	tag := d.data[start]
	d.pos++
	switch tagKinds[tag] {
	case kIntDirect:
		return int32(tag) - tagIntZero, nil
	case kIntByte:
		if err := d.need(ctx, 1); err != nil {
			return 0, err
		}
		v := (int32(tag)-tagIntByteZero)<<8 | int32(d.data[d.pos])
		d.pos++
		return v, nil
	case kIntShort:
		if err := d.need(ctx, 2); err != nil {
			return 0, err
		}
		v := (int32(tag)-tagIntShortZero)<<16 | int32(d.data[d.pos])<<8 | int32(d.data[d.pos+1])
		d.pos += 2
		return v, nil
	case kInt:
		if err := d.need(ctx, 4); err != nil {
			return 0, err
		}
		v := int32(binary.BigEndian.Uint32(d.data[d.pos:]))
		d.pos += 4
		return v, nil
	}
	return 0, d.errorf(start, "expected an int")
}

// readType reads a list or map type: a string, which is remembered, or an
// int referring to an earlier one.
func (d *Decoder) readType(ctx int) (string, error) {
	if d.pos >= len(d.data) {
		return "", d.truncated(ctx)
	}
	if isStringTag(d.data[d.pos]) {
		s, err := d.readString(d.pos)
		if err != nil {
			return "", err
		}
		d.types = append(d.types, s)
		return s, nil
	}
	at := d.pos
	idx, err := d.readInt(ctx)
	if err != nil {
		return "", err
	}
	if idx < 0 || int(idx) >= len(d.types) {
		return "", d.errorf(at, "type reference %d out of range (%d types defined)", idx, len(d.types))
	}
	return d.types[idx], nil
}

// enter records one more level of nesting for the container at start.
func (d *Decoder) enter(start int) error {
	d.depth++
	if d.depth > d.limits.MaxDepth {
		return d.errorf(start, "nesting deeper than MaxDepth %d", d.limits.MaxDepth)
	}
	return nil
}

// claim checks a declared count of values against the limits and against
// the bytes that remain once the values already expected are accounted for.
func (d *Decoder) claim(start, n int, what string) error {
	if n < 0 {
		return d.errorf(start, "negative %s count %d", what, n)
	}
	if n > d.limits.MaxLength {
		return d.errorf(start, "%s count %d exceeds MaxLength %d", what, n, d.limits.MaxLength)
	}
	if avail := len(d.data) - d.pos - d.pending; n > avail {
		return d.errorf(start, "%s count %d exceeds the %d bytes left for it", what, n, max(avail, 0))
	}
	return nil
}

func (d *Decoder) readFixedList(start int, typ string, n int) (any, error) {
	if err := d.claim(start, n, "list item"); err != nil {
		return nil, err
	}
	if err := d.enter(start); err != nil {
		return nil, err
	}
	items := make([]any, n)
	l := &List{Type: typ, Items: items}
	d.refs = append(d.refs, l)
	saved := d.pending
	for i := range items {
		d.pending = saved + n - 1 - i
		v, err := d.elem(start)
		if err != nil {
			return nil, err
		}
		items[i] = v
	}
	d.pending = saved
	d.depth--
	return l, nil
}

func (d *Decoder) readVarList(start int, typ string) (any, error) {
	if err := d.enter(start); err != nil {
		return nil, err
	}
	l := &List{Type: typ}
	d.refs = append(d.refs, l)
	base := len(d.items)
	for {
		more, err := d.more(start, len(d.items)-base, "list")
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.items = append(d.items, v)
	}
	l.Items = make([]any, len(d.items)-base)
	copy(l.Items, d.items[base:])
	clear(d.items[base:])
	d.items = d.items[:base]
	d.depth--
	return l, nil
}

// more reports whether the variable-length list or map that started at
// start, with n elements read, has another one; at its end tag (consumed)
// it has not. Past MaxLength elements, or with the data ending first, it
// is an error.
func (d *Decoder) more(start, n int, what string) (bool, error) {
	switch {
	case d.pos >= len(d.data):
		return false, d.truncated(start)
	case d.data[d.pos] == tagEnd:
		d.pos++
		return false, nil
	case n >= d.limits.MaxLength:
		return false, d.errorf(start, "%s longer than MaxLength %d", what, d.limits.MaxLength)
	}
	return true, nil
}

func (d *Decoder) readMap(start int, typ string) (any, error) {
	if err := d.enter(start); err != nil {
		return nil, err
	}
	m := &Map{Type: typ}
	d.refs = append(d.refs, m)
	base := len(d.entries)
	for {
		more, err := d.more(start, len(d.entries)-base, "map")
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		k, err := d.value()
		if err != nil {
			return nil, err
		}
		v, err := d.elem(start)
		if err != nil {
			return nil, err
		}
		d.entries = append(d.entries, Entry{Key: k, Value: v})
	}
	m.Entries = make([]Entry, len(d.entries)-base)
	copy(m.Entries, d.entries[base:])
	clear(d.entries[base:])
	d.entries = d.entries[:base]
	d.depth--
	return m, nil
}

func (d *Decoder) readClassDef(start int) error {
	if d.pos >= len(d.data) {
		return d.truncated(start)
	}
	if !isStringTag(d.data[d.pos]) {
		return d.errorf(d.pos, "class name must be a string")
	}
	name, err := d.readString(d.pos)
	if err != nil {
		return err
	}
	n, err := d.readInt(start)
	if err != nil {
		return err
	}
	if err := d.claim(start, int(n), "field"); err != nil {
		return err
	}
	fields := make([]string, n)
	for i := range fields {
		if d.pos >= len(d.data) {
			return d.truncated(start)
		}
		if !isStringTag(d.data[d.pos]) {
			return d.errorf(d.pos, "field name must be a string")
		}
		if fields[i], err = d.readString(d.pos); err != nil {
			return err
		}
	}
	d.classes = append(d.classes, classDef{name: name, fields: fields, kind: javaKindOf(name)})
	return nil
}

func (d *Decoder) readInstance(start, idx int) (any, error) {
	if idx < 0 || idx >= len(d.classes) {
		return nil, d.errorf(start, "class reference %d out of range (%d classes defined)", idx, len(d.classes))
	}
	def := d.classes[idx] // a copy: nested definitions may grow d.classes
	n := len(def.fields)
	if err := d.claim(start, n, "field value"); err != nil {
		return nil, err
	}
	if err := d.enter(start); err != nil {
		return nil, err
	}
	fields := d.newFields(n)
	obj := d.newObject()
	obj.Class, obj.Fields = def.name, fields
	ref := len(d.refs)
	d.refs = append(d.refs, obj)
	saved := d.pending
	for i := range fields {
		d.pending = saved + n - 1 - i
		v, err := d.elem(start)
		if err != nil {
			return nil, err
		}
		fields[i] = Field{Name: def.fields[i], Value: v}
	}
	d.pending = saved
	d.depth--
	if def.kind != kindPlain {
		if v, ok := fromJava(def.kind, obj); ok {
			d.refs[ref] = v
			return v, nil
		}
	}
	return obj, nil
}

// newObject returns a zero Object carved from the current slab.
func (d *Decoder) newObject() *Object {
	if len(d.objSlab) == cap(d.objSlab) {
		d.objSlab = make([]Object, 0, min(max(2*cap(d.objSlab), 1), maxObjSlab))
	}
	d.objSlab = d.objSlab[:len(d.objSlab)+1]
	return &d.objSlab[len(d.objSlab)-1]
}

// newFields returns n zero Fields, carved from the current slab when n is
// small; the slice's capacity is n, so appending to it cannot overwrite a
// neighbour.
func (d *Decoder) newFields(n int) []Field {
	if n > maxSlabbedList {
		return make([]Field, n)
	}
	if cap(d.fieldSlab)-len(d.fieldSlab) < n {
		d.fieldSlab = make([]Field, 0, min(max(2*cap(d.fieldSlab), n), maxFieldSlab))
	}
	start := len(d.fieldSlab)
	d.fieldSlab = d.fieldSlab[:start+n]
	return d.fieldSlab[start : start+n : start+n]
}

// need checks that n more bytes follow d.pos in the value whose tag is at ctx.
func (d *Decoder) need(ctx, n int) error {
	if len(d.data)-d.pos < n {
		return d.truncated(ctx)
	}
	return nil
}

func (d *Decoder) truncated(ctx int) error {
	return d.errorf(ctx, "unexpected end of input at offset %d", len(d.data))
}

func (d *Decoder) errorf(at int, format string, args ...any) error {
	var tag byte
	if at < len(d.data) {
		tag = d.data[at]
	}
	return &DecodeError{Offset: at, Tag: tag, Msg: fmt.Sprintf(format, args...)}
}
