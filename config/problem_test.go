package config

import (
	"slices"
	"testing"
)

func TestPaths(t *testing.T) {
	p := keyPath(indexPath(keyPath("", "routes"), 2), "match")
	if p != "routes[2].match" {
		t.Errorf("keyPath/indexPath = %q", p)
	}
	odd := keyPath(keyPath("", "upstreams"), `my "svc".v1[0]`)
	if want := `upstreams["my \"svc\".v1[0]"]`; odd != want {
		t.Errorf("quoted key path = %s, want %s", odd, want)
	}
	segs := splitPath(odd + ".targets[3]")
	var keys []any
	for _, s := range segs {
		if s.isIdx {
			keys = append(keys, s.index)
		} else {
			keys = append(keys, s.key)
		}
	}
	if want := []any{"upstreams", `my "svc".v1[0]`, "targets", 3}; !slices.Equal(keys, want) {
		t.Errorf("splitPath = %v, want %v", keys, want)
	}
	if got := keyPath("", "9lives"); got != `["9lives"]` {
		t.Errorf("keyPath of a name starting with a digit = %s", got)
	}
}

func TestComparePaths(t *testing.T) {
	paths := []string{
		"upstreams.users.targets[10].url",
		"routes[10].name",
		"routes[2].match",
		"routes[2]",
		"admin.listen",
		`upstreams["a b"]`,
		"upstreams.users.targets[9].url",
		"",
		"routes[2].match.path",
	}
	slices.SortFunc(paths, comparePaths)
	want := []string{
		"",
		"admin.listen",
		"routes[2]",
		"routes[2].match",
		"routes[2].match.path",
		"routes[10].name",
		`upstreams["a b"]`,
		"upstreams.users.targets[9].url",
		"upstreams.users.targets[10].url",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("sorted = %q\nwant     %q", paths, want)
	}
}

func TestRelated(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"routes[1]", "routes[1].name", true},
		{"routes[1].name", "routes[1]", true},
		{"routes[1]", "routes[10]", false},
		{"upstreams.users", "upstreams.users2", false},
		{"", "listen", true},
		{"listen", "listen", true},
		{"admin", "admin.listen", true},
	}
	for _, c := range cases {
		if got := related(c.a, c.b); got != c.want {
			t.Errorf("related(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
