package hessian

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// Hessian strings are UTF-8 on the wire with lengths in UTF-16 code units,
// as Java counts them. Java writers (hessian-lite, Caucho) encode every UTF-16
// unit separately, so a character outside the BMP arrives as two 3-byte
// surrogate sequences (CESU-8); other writers send standard 4-byte UTF-8,
// which counts as two units. Both decode to the same Go string. A surrogate
// without its partner becomes U+FFFD.

// chunkSpan is one validated string chunk inside the input.
type chunkSpan struct {
	start, end int
	canonical  bool // bytes are already standard UTF-8 and can be copied
}

// scanned is what a pass over one chunk learned.
type scanned struct {
	end       int  // offset after the chunk's bytes
	outLen    int  // upper bound of the chunk's length as standard UTF-8
	canonical bool // the bytes are standard UTF-8 as they are
}

// stringChunk reads the header of the string chunk at d.pos; ctx is the tag
// offset of the whole string.
func (d *Decoder) stringChunk(ctx int) (units int, final bool, err error) {
	p := d.pos
	if p >= len(d.data) {
		return 0, false, d.truncated(ctx)
	}
	b := d.data[p]
	switch {
	case b <= stringDirectMax:
		d.pos = p + 1
		return int(b), true, nil
	case b >= tagStringShort && b <= tagStringShort+3:
		if len(d.data)-p < 2 {
			return 0, false, d.truncated(ctx)
		}
		d.pos = p + 2
		return int(b-tagStringShort)<<8 | int(d.data[p+1]), true, nil
	case b == tagStringFinal || b == tagStringChunk:
		if len(d.data)-p < 3 {
			return 0, false, d.truncated(ctx)
		}
		d.pos = p + 3
		return int(binary.BigEndian.Uint16(d.data[p+1:])), b == tagStringFinal, nil
	}
	return 0, false, d.errorf(p, "expected a string chunk")
}

// readString reads the string whose first chunk starts at start.
func (d *Decoder) readString(start int) (string, error) {
	d.pos = start
	units, final, err := d.stringChunk(start)
	if err != nil {
		return "", err
	}
	if final {
		p := d.pos
		if units <= len(d.data)-p && isASCII(d.data[p:p+units]) {
			if units > d.limits.MaxLength {
				return "", d.errorf(start, "string of %d bytes exceeds MaxLength %d", units, d.limits.MaxLength)
			}
			d.pos = p + units
			return d.substring(p, p+units), nil
		}
		sc, err := d.scanChunk(start, p, units)
		if err != nil {
			return "", err
		}
		if sc.outLen > d.limits.MaxLength {
			return "", d.errorf(start, "string of %d bytes exceeds MaxLength %d", sc.outLen, d.limits.MaxLength)
		}
		d.pos = sc.end
		if sc.canonical {
			return d.substring(p, sc.end), nil
		}
		var sb strings.Builder
		sb.Grow(sc.outLen)
		if high := appendUnits(&sb, d.data[p:sc.end], 0); high != 0 {
			sb.WriteRune(utf8.RuneError)
		}
		return sb.String(), nil
	}

	// Chunked: validate every chunk first, then copy once into a buffer of
	// the right size.
	d.chunks = d.chunks[:0]
	total := 0
	for {
		p := d.pos
		sc, err := d.scanChunk(start, p, units)
		if err != nil {
			return "", err
		}
		total += sc.outLen
		if total > d.limits.MaxLength {
			return "", d.errorf(start, "string of more than %d bytes exceeds MaxLength %d", total, d.limits.MaxLength)
		}
		d.chunks = append(d.chunks, chunkSpan{start: p, end: sc.end, canonical: sc.canonical})
		d.pos = sc.end
		if final {
			break
		}
		if units, final, err = d.stringChunk(start); err != nil {
			return "", err
		}
	}
	var sb strings.Builder
	sb.Grow(total)
	var high rune
	for _, c := range d.chunks {
		if c.canonical {
			if high != 0 {
				sb.WriteRune(utf8.RuneError)
				high = 0
			}
			sb.Write(d.data[c.start:c.end])
			continue
		}
		high = appendUnits(&sb, d.data[c.start:c.end], high)
	}
	if high != 0 {
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String(), nil
}

// substring returns data[p:end] as a string. Short ones are sliced from a
// copy of the input window around them, so decoding many small strings
// costs one allocation per window instead of one per string.
func (d *Decoder) substring(p, end int) string {
	switch n := end - p; {
	case n == 0:
		return ""
	case n > maxWindowed:
		return string(d.data[p:end])
	}
	if p < d.textStart || end > d.textStart+len(d.text) {
		d.text = string(d.data[p:min(p+textWindow, len(d.data))])
		d.textStart = p
	}
	return d.text[p-d.textStart : end-d.textStart]
}

// scanChunk validates a chunk of units UTF-16 units starting at p and
// measures it.
func (d *Decoder) scanChunk(ctx, p, units int) (scanned, error) {
	data := d.data
	if units <= len(data)-p && isASCII(data[p:p+units]) {
		return scanned{end: p + units, outLen: units, canonical: true}, nil
	}
	i, n, out := p, units, 0
	canonical := true
	for n > 0 {
		if n >= 8 && len(data)-i >= 8 && binary.LittleEndian.Uint64(data[i:])&0x8080808080808080 == 0 {
			i += 8
			n -= 8
			out += 8
			continue
		}
		if i >= len(data) {
			return scanned{}, d.truncated(ctx)
		}
		c := data[i]
		switch {
		case c < 0x80:
			i++
			n--
			out++
		case c&0xe0 == 0xc0:
			if len(data)-i < 2 {
				return scanned{}, d.truncated(ctx)
			}
			if !isCont(data[i+1]) {
				return scanned{}, d.errorf(ctx, "invalid UTF-8 at offset %d", i)
			}
			if c < 0xc2 { // overlong: decodes like Java, re-encoded canonically
				canonical = false
				out += utf8.RuneLen(rune(c&0x1f)<<6 | rune(data[i+1]&0x3f))
			} else {
				out += 2
			}
			i += 2
			n--
		case c&0xf0 == 0xe0:
			if len(data)-i < 3 {
				return scanned{}, d.truncated(ctx)
			}
			if !isCont(data[i+1]) || !isCont(data[i+2]) {
				return scanned{}, d.errorf(ctx, "invalid UTF-8 at offset %d", i)
			}
			v := rune(c&0x0f)<<12 | rune(data[i+1]&0x3f)<<6 | rune(data[i+2]&0x3f)
			switch {
			case v < 0x800:
				canonical = false
				out += utf8.RuneLen(v)
			case v >= 0xd800 && v <= 0xdfff:
				canonical = false
				out += 3 // a pair shrinks to 4 bytes, a lone half becomes U+FFFD (3)
			default:
				out += 3
			}
			i += 3
			n--
		case c&0xf8 == 0xf0:
			if len(data)-i < 4 {
				return scanned{}, d.truncated(ctx)
			}
			if !isCont(data[i+1]) || !isCont(data[i+2]) || !isCont(data[i+3]) {
				return scanned{}, d.errorf(ctx, "invalid UTF-8 at offset %d", i)
			}
			v := rune(c&0x07)<<18 | rune(data[i+1]&0x3f)<<12 | rune(data[i+2]&0x3f)<<6 | rune(data[i+3]&0x3f)
			if v < 0x10000 || v > utf8.MaxRune {
				return scanned{}, d.errorf(ctx, "invalid UTF-8 at offset %d", i)
			}
			if n < 2 {
				return scanned{}, d.errorf(ctx, "4-byte character at offset %d crosses the end of its chunk", i)
			}
			i += 4
			n -= 2
			out += 4
		default:
			return scanned{}, d.errorf(ctx, "invalid UTF-8 at offset %d", i)
		}
	}
	return scanned{end: i, outLen: out, canonical: canonical}, nil
}

// appendUnits decodes a chunk that scanChunk accepted and writes it as
// standard UTF-8, pairing surrogates. high is a high surrogate left over
// from the previous chunk (0 if none); the one left at the end is returned.
func appendUnits(sb *strings.Builder, b []byte, high rune) rune {
	for i := 0; i < len(b); {
		c := b[i]
		var v rune
		switch {
		case c < 0x80:
			v = rune(c)
			i++
		case c&0xe0 == 0xc0:
			v = rune(c&0x1f)<<6 | rune(b[i+1]&0x3f)
			i += 2
		case c&0xf0 == 0xe0:
			v = rune(c&0x0f)<<12 | rune(b[i+1]&0x3f)<<6 | rune(b[i+2]&0x3f)
			i += 3
		default:
			v = rune(c&0x07)<<18 | rune(b[i+1]&0x3f)<<12 | rune(b[i+2]&0x3f)<<6 | rune(b[i+3]&0x3f)
			i += 4
		}
		switch {
		case v >= 0xd800 && v <= 0xdbff:
			if high != 0 {
				sb.WriteRune(utf8.RuneError)
			}
			high = v
			continue
		case v >= 0xdc00 && v <= 0xdfff:
			if high != 0 {
				sb.WriteRune(0x10000 + (high-0xd800)<<10 + (v - 0xdc00))
				high = 0
			} else {
				sb.WriteRune(utf8.RuneError)
			}
			continue
		}
		if high != 0 {
			sb.WriteRune(utf8.RuneError)
			high = 0
		}
		if v < utf8.RuneSelf {
			sb.WriteByte(byte(v))
		} else {
			sb.WriteRune(v)
		}
	}
	return high
}

func isCont(b byte) bool { return b&0xc0 == 0x80 }

// isASCII reports whether every byte of b is below 0x80.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// readBinary reads the binary value whose first chunk starts at start.
func (d *Decoder) readBinary(start int) ([]byte, error) {
	// First pass: walk the chunk headers, check every chunk's bytes are
	// there and add up the length.
	p := start
	total := 0
	for {
		if p >= len(d.data) {
			return nil, d.truncated(start)
		}
		b := d.data[p]
		var n, hdr int
		final := true
		switch {
		case b >= tagBinaryDirect && b <= tagBinaryDirect+binaryDirectMax:
			n, hdr = int(b-tagBinaryDirect), 1
		case b >= tagBinaryShort && b <= tagBinaryShort+3:
			if len(d.data)-p < 2 {
				return nil, d.truncated(start)
			}
			n, hdr = int(b-tagBinaryShort)<<8|int(d.data[p+1]), 2
		case b == tagBinaryFinal || b == tagBinaryChunk:
			if len(d.data)-p < 3 {
				return nil, d.truncated(start)
			}
			n, hdr = int(binary.BigEndian.Uint16(d.data[p+1:])), 3
			final = b == tagBinaryFinal
		default:
			return nil, d.errorf(p, "expected a binary chunk")
		}
		if len(d.data)-p-hdr < n {
			return nil, d.truncated(start)
		}
		total += n
		if total > d.limits.MaxLength {
			return nil, d.errorf(start, "binary of more than %d bytes exceeds MaxLength %d", total, d.limits.MaxLength)
		}
		p += hdr + n
		if final {
			break
		}
	}
	out := make([]byte, 0, total)
	// Second pass: copy. Headers were validated above.
	q := start
	for q < p {
		b := d.data[q]
		var n, hdr int
		switch {
		case b >= tagBinaryDirect && b <= tagBinaryDirect+binaryDirectMax:
			n, hdr = int(b-tagBinaryDirect), 1
		case b >= tagBinaryShort && b <= tagBinaryShort+3:
			n, hdr = int(b-tagBinaryShort)<<8|int(d.data[q+1]), 2
		default:
			n, hdr = int(binary.BigEndian.Uint16(d.data[q+1:])), 3
		}
		out = append(out, d.data[q+hdr:q+hdr+n]...)
		q += hdr + n
	}
	d.pos = p
	return out, nil
}
