package dubboroute

import (
	"testing"

	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
)

// TestEncodersShared: routes of a table with the same options get the one
// encoder, generic or not.
func TestEncodersShared(t *testing.T) {
	var es Encoders
	get := func(generic bool) *jsonbridge.Encoder {
		t.Helper()
		enc, err := es.encoder(jsonbridge.EncodeOptions{Generic: generic, RestrictClasses: true})
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	a, b, g := get(false), get(false), get(true)
	if a != b || a == g || g != get(true) {
		t.Errorf("encoders: %p %p generic %p", a, b, g)
	}
}
