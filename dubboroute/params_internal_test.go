package dubboroute

import "testing"

// TestListOrOne: the values of a query parameter or header become a JSON
// array for a list or array type (one value already written as a JSON
// array is kept), and stay one value for any other type.
func TestListOrOne(t *testing.T) {
	list, one := &param{list: true}, &param{}
	for _, c := range []struct {
		p    *param
		vs   []string
		want string
		ok   bool
	}{
		{list, []string{"1", "2"}, `["1","2"]`, true},
		{list, []string{"1"}, `["1"]`, true},
		{list, []string{` [1, 2]`}, ` [1, 2]`, true},
		{list, []string{`a"b`}, `["a\"b"]`, true},
		{list, nil, "", false},
		{one, []string{"x"}, "x", true},
		{one, []string{"[1]"}, "[1]", true},
		{one, nil, "", false},
	} {
		got, ok := listOrOne(c.p, c.vs)
		if got != c.want || ok != c.ok {
			t.Errorf("listOrOne(list=%v, %q) = %q, %v; want %q, %v", c.p.list, c.vs, got, ok, c.want, c.ok)
		}
	}
}
