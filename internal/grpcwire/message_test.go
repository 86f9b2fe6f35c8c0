package grpcwire

import "testing"

func TestDecodeMessage(t *testing.T) {
	for in, want := range map[string]string{"": "", "plain": "plain", "a%20b": "a b", "%E2%82%AC": "€", "bad%zz": "bad%zz", "end%2": "end%2"} {
		if got := DecodeMessage(in); got != want {
			t.Errorf("DecodeMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEncodeMessage: printable ASCII but '%' is kept, everything else
// escaped, and DecodeMessage undoes it.
func TestEncodeMessage(t *testing.T) {
	for in, want := range map[string]string{"": "", "plain text": "plain text", "100%": "100%25", "€": "%E2%82%AC",
		"line\nbreak": "line%0Abreak", "tab\t": "tab%09"} {
		if got := EncodeMessage(in); got != want {
			t.Errorf("EncodeMessage(%q) = %q, want %q", in, got, want)
		}
		if back := DecodeMessage(EncodeMessage(in)); back != in {
			t.Errorf("DecodeMessage(EncodeMessage(%q)) = %q", in, back)
		}
	}
}
