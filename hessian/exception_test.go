package hessian

import (
	"bytes"
	"errors"
	"testing"
)

func TestAsExceptionFromJava(t *testing.T) {
	wire := hx(t, cauchoException)
	v := decodeOne(t, wire)
	x, ok := AsException(v)
	if !ok {
		t.Fatalf("AsException(%s) = false", show(v))
	}
	if got, want := x.Error(), "java.lang.RuntimeException: boom (caused by java.lang.IllegalStateException: inner)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	wantFrames := []StackFrame{{"com.example.Svc", "call", "Svc.java", 7}, {"com.example.Main", "main", "", -2}}
	if !equalFrames(x.StackTrace, wantFrames) {
		t.Fatalf("stack trace %v", x.StackTrace)
	}
	inner := x.Cause
	if inner == nil || inner.Class != "java.lang.IllegalStateException" || inner.Message != "inner" {
		t.Fatalf("cause %+v", inner)
	}
	// The inner exception's cause is itself, Java's marker for no cause.
	if inner.Cause != nil {
		t.Fatalf("inner cause %+v, want nil", inner.Cause)
	}
	if !equalFrames(inner.StackTrace, []StackFrame{{"com.example.Repo", "load", "Repo.java", 42}}) {
		t.Fatalf("inner stack trace %v", inner.StackTrace)
	}
	if len(x.Suppressed) != 0 {
		t.Fatalf("suppressed %v", x.Suppressed)
	}
	if !errors.Is(x, inner) {
		t.Fatal("errors.Is does not reach the cause through Unwrap")
	}

	// The decoded object graph re-encodes to exactly the bytes Java wrote:
	// same class definitions, type references and back-references.
	if got := encodeOne(t, v); !bytes.Equal(got, wire) {
		t.Fatalf("re-encoded\n% x\nwant\n% x", got, wire)
	}
}

func equalFrames(a, b []StackFrame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEncodeException(t *testing.T) {
	inner := &Exception{Class: "java.sql.SQLException", Message: "timeout"}
	x := &Exception{
		Class:      "com.example.BizException",
		Message:    "no stock",
		Cause:      inner,
		StackTrace: []StackFrame{{"com.example.Stock", "take", "Stock.java", 12}, {"com.example.Main", "main", "", 1}},
		Suppressed: []*Exception{{Class: "java.io.IOException", Message: "close"}},
	}
	wire := encodeOne(t, x)
	v := decodeOne(t, wire)
	o := v.(*Object)
	if o.Class != "com.example.BizException" || len(o.Fields) != 4 {
		t.Fatalf("decoded %s", show(v))
	}
	back, ok := AsException(v)
	if !ok {
		t.Fatal("not a Throwable")
	}
	if back.Error() != "com.example.BizException: no stock (caused by java.sql.SQLException: timeout)" {
		t.Fatalf("Error() = %q", back.Error())
	}
	if !equalFrames(back.StackTrace, x.StackTrace) || back.Cause.Cause != nil ||
		len(back.Suppressed) != 1 || back.Suppressed[0].Message != "close" {
		t.Fatalf("round trip %+v", back)
	}
	// No cause is written as a reference to the exception itself, an empty
	// message as null, as Java writes them.
	innerObj, _ := o.Get("cause")
	if c, _ := innerObj.(*Object).Get("cause"); c != innerObj {
		t.Fatal("a missing cause is not written as a self reference")
	}
	noMsg := decodeOne(t, encodeOne(t, &Exception{Class: "E"})).(*Object)
	if m, _ := noMsg.Get("detailMessage"); m != nil {
		t.Fatalf("empty message written as %v", m)
	}

	// The same exception twice is written once, then referred to.
	shared := &Exception{Class: "E"}
	l := decodeOne(t, encodeOne(t, []any{shared, shared})).(*List)
	if l.Items[0] != l.Items[1] {
		t.Fatal("shared exception written twice")
	}
	if got := decodeOne(t, encodeOne(t, &Exception{})).(*Object); got.Class != "java.lang.Exception" {
		t.Fatalf("class %q", got.Class)
	}
}

func TestExceptionCycles(t *testing.T) {
	// Objects whose causes loop A → B → A.
	a := &Object{Class: "A", Fields: []Field{{"detailMessage", "a"}, {"cause", nil}}}
	b := &Object{Class: "B", Fields: []Field{{"detailMessage", "b"}, {"cause", a}}}
	a.Fields[1].Value = b
	x, ok := AsException(a)
	if !ok {
		t.Fatal("not a Throwable")
	}
	if x.Cause == nil || x.Cause.Class != "B" || x.Cause.Cause != nil {
		t.Fatalf("loop not cut: %+v", x.Cause)
	}
	if got := x.Error(); got != "A: a (caused by B: b)" {
		t.Fatalf("Error() = %q", got)
	}

	// An Exception built with a loop still prints and encodes.
	p := &Exception{Class: "P", Message: "p"}
	q := &Exception{Class: "Q", Cause: p}
	p.Cause = q
	if got := p.Error(); got != "P: p (caused by Q)" {
		t.Fatalf("Error() = %q", got)
	}
	v := decodeOne(t, encodeOne(t, p)).(*Object)
	qo, _ := v.Get("cause")
	if back, _ := qo.(*Object).Get("cause"); back != v {
		t.Fatal("cause loop not encoded as a reference")
	}

	if _, ok := AsException(&Object{Class: "P", Fields: []Field{{"name", "x"}}}); ok {
		t.Fatal("an object without detailMessage is not a Throwable")
	}
	if _, ok := AsException("boom"); ok {
		t.Fatal("a string is not a Throwable")
	}
}
