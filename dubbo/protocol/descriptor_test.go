package protocol

import (
	"slices"
	"strings"
	"testing"
)

func TestDescriptor(t *testing.T) {
	for _, tc := range []struct {
		types []string
		want  string
	}{
		{nil, ""},
		{[]string{"boolean", "byte", "char", "short", "int", "long", "float", "double"}, "ZBCSIJFD"},
		{[]string{"void"}, "V"},
		{[]string{"java.lang.String", "int", "com.x.User[]", "[Ljava.lang.String;"}, "Ljava/lang/String;I[Lcom/x/User;[Ljava/lang/String;"},
		{[]string{"int[]", "long[][]", "[I", "[[D", "com.x.Outer$Inner"}, "[I[[J[I[[DLcom/x/Outer$Inner;"},
		{[]string{"[[[Lcom.x.User;", "java.lang.Object[][][]"}, "[[[Lcom/x/User;[[[Ljava/lang/Object;"},
		{[]string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"}, GenericParamTypes},
	} {
		got, err := Descriptor(tc.types)
		if err != nil {
			t.Errorf("Descriptor(%q): %v", tc.types, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Descriptor(%q) = %q, want %q", tc.types, got, tc.want)
		}
	}
}

func TestDescriptorRejects(t *testing.T) {
	for _, bad := range []string{"", "[]", "void[]", "[V", "[", "[X", "[Ljava.lang.String", "[Ljava/lang/String;",
		"Ljava/lang/String;", "java..lang.String", ".String", "String.", "a b", "int[", "java.util.List<String>[]x[]"} {
		if got, err := Descriptor([]string{"int", bad}); err == nil {
			t.Errorf("Descriptor(%q) = %q, want an error", bad, got)
		} else if !strings.Contains(err.Error(), "parameter 1") {
			t.Errorf("error %q does not name the parameter", err)
		}
	}
}

func TestParseDescriptor(t *testing.T) {
	for _, tc := range []struct {
		desc string
		want []string
	}{
		{"", []string{}},
		{"ZBCSIJFDV", []string{"boolean", "byte", "char", "short", "int", "long", "float", "double", "void"}},
		{"Ljava/lang/String;I[Lcom/x/User;[Ljava/lang/String;", []string{"java.lang.String", "int", "com.x.User[]", "java.lang.String[]"}},
		{"[[I[[[Ljava/lang/Object;J", []string{"int[][]", "java.lang.Object[][][]", "long"}},
		{GenericParamTypes, []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"}},
	} {
		got, err := ParseDescriptor(tc.desc)
		if err != nil {
			t.Errorf("ParseDescriptor(%q): %v", tc.desc, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseDescriptor(%q) = %q, want %q", tc.desc, got, tc.want)
		}
		// And back.
		if back, err := Descriptor(got); err != nil || back != tc.desc {
			t.Errorf("Descriptor(%q) = %q, %v; want %q", got, back, err, tc.desc)
		}
	}
}

func TestParseDescriptorRejects(t *testing.T) {
	for _, bad := range []string{"X", "[", "L", "Ljava/lang/String", "L;", "Ljava.lang.String;", "L/x;", "Lx//y;", "[V", "I[", strings.Repeat("[", 256) + "I"} {
		if got, err := ParseDescriptor(bad); err == nil {
			t.Errorf("ParseDescriptor(%q) = %q, want an error", bad, got)
		} else if !strings.Contains(err.Error(), "invalid parameter descriptor") {
			t.Errorf("error %q", err)
		}
	}
}

func TestAppendDescriptorDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		buf, _ = AppendDescriptor(buf[:0], "com.example.demo.User[]")
	})
	if allocs != 0 || string(buf) != "[Lcom/example/demo/User;" {
		t.Errorf("%q with %.1f allocations", buf, allocs)
	}
}
