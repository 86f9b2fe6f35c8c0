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

func TestJavaTypeProblem(t *testing.T) {
	for _, ok := range []string{"int", "int[]", "java.lang.String", "java.lang.String[][]", "com.example.User",
		"java.util.List<com.example.Item>", "java.util.Map<java.lang.String, java.util.List<com.example.Item>>",
		"java.util.List<?>", "[I", "[Ljava.lang.String;"} {
		if p := javaTypeProblem(ok); p != "" {
			t.Errorf("%q: %s", ok, p)
		}
	}
	for _, bad := range []string{"String", "Integer[]", "java.util.List<String>", "User", "", "<>", "a-b", "[Lfoo", "java..lang.String"} {
		if javaTypeProblem(bad) == "" {
			t.Errorf("%q passes", bad)
		}
	}
}
