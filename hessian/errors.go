package hessian

import "strconv"

// DecodeError reports malformed, truncated or over-limit input. Offset is
// the position of the tag byte of the value being decoded when the problem
// was found, Tag that byte.
type DecodeError struct {
	Offset int
	Tag    byte
	Msg    string
}

func (e *DecodeError) Error() string {
	b := make([]byte, 0, 48+len(e.Msg))
	b = append(b, "hessian: offset "...)
	b = strconv.AppendInt(b, int64(e.Offset), 10)
	b = append(b, ", tag 0x"...)
	const hexDigits = "0123456789abcdef"
	b = append(b, hexDigits[e.Tag>>4], hexDigits[e.Tag&0xf])
	if e.Tag >= 0x20 && e.Tag < 0x7f {
		b = append(b, " ('"...)
		b = append(b, e.Tag)
		b = append(b, "')"...)
	}
	b = append(b, ": "...)
	b = append(b, e.Msg...)
	return string(b)
}
