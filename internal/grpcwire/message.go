package grpcwire

import "strconv"

// A grpc-message header is percent-encoded: every byte outside printable
// ASCII (0x20-0x7E), and '%' itself, as %XX (gRPC's PROTOCOL-HTTP2.md).

// DecodeMessage undoes grpc-message's percent-encoding; a malformed
// escape is kept as is, as gRPC says to.
func DecodeMessage(s string) string {
	i := 0
	for i < len(s) && s[i] != '%' {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// EncodeMessage percent-encodes s for a grpc-message header.
func EncodeMessage(s string) string {
	const hex = "0123456789ABCDEF"
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x7e && s[i] != '%' {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e && c != '%' {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}
