// Package requestid gives every request an id, echoed to the client and sent
// upstream in one header (default X-Request-Id). A well-formed id from the
// client is kept, so one id follows a request across systems; anything else
// is replaced. The gateway core applies it to every request, including those
// that match no route, because every response must carry an id.
package requestid

import (
	"encoding/hex"
	"math/rand/v2"
	"unsafe"
)

// MaxLen is the longest incoming id kept.
const MaxLen = 128

// Valid reports whether an incoming id is safe to keep: 1..MaxLen bytes of
// letters, digits and - _ . : (nothing that could split a log line or header).
func Valid(id string) bool {
	if len(id) == 0 || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == ':':
		default:
			return false
		}
	}
	return true
}

// New returns a random 32-hex-digit id (128 bits, the shape of a W3C trace id).
func New() string { return NewIn(new(Buf)) }

// Buf holds the bytes of an id made by NewIn.
type Buf [32]byte

// NewIn is New with the id's bytes in buf, which the returned string
// shares: buf must not be written again. It lets a caller that allocates
// per-request state anyway keep the id there.
func NewIn(buf *Buf) string {
	var raw [16]byte
	a, b := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		raw[i] = byte(a >> (8 * i))
		raw[8+i] = byte(b >> (8 * i))
	}
	hex.Encode(buf[:], raw[:])
	return unsafe.String(&buf[0], len(buf))
}

// Pick keeps incoming when trusted and valid, else makes a new id in buf
// (see NewIn).
func Pick(buf *Buf, incoming string, trust bool) string {
	if trust && Valid(incoming) {
		return incoming
	}
	return NewIn(buf)
}
