package jsonbridge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestDeniedClass(t *testing.T) {
	for _, name := range []string{
		"com.sun.rowset.JdbcRowSetImpl", "java.lang.ProcessBuilder", "java.lang.Runtime", "javax.script.ScriptEngineManager",
		"org.apache.commons.collections.functors.InvokerTransformer", "org.springframework.beans.factory.config.PropertyPathFactoryBean",
		"com.mchange.v2.c3p0.WrapperConnectionPoolDataSource", "org.apache.xbean.naming.context.ContextUtil$ReadOnlyBinding",
		"javax.naming.InitialContext", "java.rmi.server.UnicastRemoteObject", "sun.rmi.server.UnicastRef", "bsh.XThis",
		"groovy.lang.Closure", "org.codehaus.groovy.runtime.MethodClosure", "com.sun.org.apache.xalan.internal.xsltc.trax.TemplatesImpl",
		"[Lcom.sun.rowset.JdbcRowSetImpl;", "java.lang.Runtime[]", "java.lang.ProcessBuilder$Redirect",
	} {
		if !DeniedClass(name) {
			t.Errorf("DeniedClass(%q) = false", name)
		}
	}
	for _, name := range []string{"java.lang.String", "java.util.HashMap", "com.example.User", "java.lang.RuntimeException", "java.time.LocalDate", "java.math.BigDecimal"} {
		if DeniedClass(name) {
			t.Errorf("DeniedClass(%q) = true", name)
		}
	}
}

// TestGadgetsAlwaysRefused: without RestrictClasses, a gadget is still
// refused in a "class" key, a map's "class" key (generic) and a type.
func TestGadgetsAlwaysRefused(t *testing.T) {
	for _, generic := range []bool{false, true} {
		enc := mustEncoder(t, EncodeOptions{Generic: generic})
		obj, _ := enc.Type("java.lang.Object")
		e := hessian.NewEncoder(nil)
		err := enc.Encode(e, []byte(`{"a":{"class":"java.lang.ProcessBuilder"}}`), obj)
		if err == nil || !strings.Contains(err.Error(), "$.a.class") || !strings.Contains(err.Error(), "gadget") {
			t.Errorf("generic=%v: class key: %v", generic, err)
		}
		if _, err := enc.Type("java.util.List<com.sun.rowset.JdbcRowSetImpl>"); err == nil || !strings.Contains(err.Error(), "gadget") {
			t.Errorf("generic=%v: type: %v", generic, err)
		}
	}
	enc := mustEncoder(t, EncodeOptions{Generic: true})
	m, _ := enc.Type("java.util.Map")
	if err := enc.Encode(hessian.NewEncoder(nil), []byte(`{"class":"javax.naming.InitialContext"}`), m); err == nil || !strings.Contains(err.Error(), "$.class") {
		t.Errorf("generic map class key: %v", err)
	}
	// In typed invocation a map's "class" key is an ordinary key.
	enc = mustEncoder(t, EncodeOptions{})
	m, _ = enc.Type("java.util.Map")
	if err := enc.Encode(hessian.NewEncoder(nil), []byte(`{"class":"javax.naming.InitialContext"}`), m); err != nil {
		t.Errorf("typed map class key: %v", err)
	}
	if _, err := NewEncoder(EncodeOptions{Schema: Schema{"java.lang.Runtime": {}}}); err == nil {
		t.Error("a gadget in the schema was accepted")
	}
	if _, err := NewEncoder(EncodeOptions{AllowClasses: []string{"com.sun.*"}}); err == nil {
		t.Error("a gadget package in AllowClasses was accepted")
	}
}

func TestClientType(t *testing.T) {
	enc := mustEncoder(t, EncodeOptions{Generic: true, RestrictClasses: true, AllowClasses: []string{"com.example.*"},
		Schema: Schema{"org.dto.Order": {}}})
	for _, ok := range []string{"int", "java.lang.String", "java.util.List<com.example.Item>", "[Lcom.example.Item;", "org.dto.Order[]",
		"java.util.Map<java.lang.String,java.math.BigDecimal>", "java.time.LocalDate", "java.time.Instant", "java.util.UUID", "java.sql.Timestamp"} {
		if _, err := enc.ClientType(ok); err != nil {
			t.Errorf("ClientType(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"org.other.Thing", "java.util.List<org.other.Thing>", "[Lorg.other.Thing;", "java.util.Map<String,org.other.Thing>"} {
		if _, err := enc.ClientType(bad); err == nil {
			t.Errorf("ClientType(%q) accepted", bad)
		}
		if _, err := enc.Type(bad); err != nil {
			t.Errorf("Type(%q) (an operator's): %v", bad, err)
		}
	}
}

func TestTypeBounds(t *testing.T) {
	enc := mustEncoder(t, EncodeOptions{})
	for _, c := range []struct{ typ, want string }{
		{strings.Repeat("[", 256) + "I", "more than 255 array dimensions"},
		{"int" + strings.Repeat("[]", 256), "more than 255 array dimensions"},
		{strings.Repeat("java.util.List<", 33) + "int" + strings.Repeat(">", 33), "nested deeper than 32"},
		{"com.example." + strings.Repeat("a", MaxTypeLen), "longer than 4096 bytes"},
	} {
		if _, err := enc.Type(c.typ); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Type(%.40q...): %v, want %q", c.typ, err, c.want)
		}
	}
	for _, ok := range []string{strings.Repeat("[", 255) + "I", "int" + strings.Repeat("[]", 255), "java.lang.String[][]", "[[Ljava.lang.String;"} {
		typ, err := enc.Type(ok)
		if err != nil {
			t.Errorf("Type(%.40q...): %v", ok, err)
			continue
		}
		if ok == "[[Ljava.lang.String;" && (typ.elem.name != "java.lang.String[]" || typ.name != ok) {
			t.Errorf("[[Ljava.lang.String; levels named %q, %q", typ.name, typ.elem.name)
		}
	}
}

func TestMaxValues(t *testing.T) {
	enc := mustEncoder(t, EncodeOptions{MaxValues: 100})
	list, _ := enc.Type("int[]")
	body := "[" + strings.Repeat("1,", 200) + "1]"
	if err := enc.Encode(hessian.NewEncoder(nil), []byte(body), list); err == nil || !strings.Contains(err.Error(), "more than 100 JSON values") {
		t.Errorf("201 values with MaxValues 100: %v", err)
	}
	if err := enc.Encode(hessian.NewEncoder(nil), []byte("[1,2,3]"), list); err != nil {
		t.Error(err)
	}
}

func TestEncodeGivesUpAtTheDeadline(t *testing.T) {
	enc := mustEncoder(t, EncodeOptions{})
	list, _ := enc.Type("int[]")
	body := []byte("[" + strings.Repeat("1,", 3*checkEvery) + "1]")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := enc.EncodeContext(ctx, hessian.NewEncoder(nil), body, list)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	err = enc.EncodeArgsContext(ctx, hessian.NewEncoder(nil), []byte("[[1]]"), []*Type{list})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("EncodeArgs cancelled: %v", err)
	}
	if err := enc.EncodeContext(context.Background(), hessian.NewEncoder(nil), body, list); err != nil {
		t.Error(err)
	}
}
