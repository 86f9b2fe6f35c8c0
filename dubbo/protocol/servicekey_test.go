package protocol

import "testing"

func TestServiceKey(t *testing.T) {
	for _, c := range []struct{ group, iface, version, want string }{
		{"", "a.B", "", "a.B"},
		{"g", "a.B", "", "g/a.B"},
		{"", "a.B", "1.0.0", "a.B:1.0.0"},
		{"g", "a.B", "1.0.0", "g/a.B:1.0.0"},
	} {
		if got := ServiceKey(c.group, c.iface, c.version); got != c.want {
			t.Errorf("ServiceKey(%q, %q, %q) = %q, want %q", c.group, c.iface, c.version, got, c.want)
		}
	}
}
