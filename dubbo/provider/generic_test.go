package provider

import (
	"reflect"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestGeneralize(t *testing.T) {
	when := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	status := &hessian.Object{Class: "com.example.Status", Fields: []hessian.Field{{Name: "name", Value: "ACTIVE"}}}
	exc := &hessian.Object{Class: "com.example.Oops", Fields: []hessian.Field{{Name: "detailMessage", Value: "x"}}}
	order := &hessian.Object{Class: "com.example.Order", Fields: []hessian.Field{
		{Name: "status", Value: status},
		{Name: "created", Value: when},
		{Name: "total", Value: hessian.BigDecimal{Value: "9.90"}},
		{Name: "tags", Value: &hessian.List{Type: "java.util.HashSet", Items: []any{"a"}}},
		{Name: "lines", Value: &hessian.List{Type: "[com.example.Line", Items: []any{&hessian.Object{Class: "com.example.Line", Fields: []hessian.Field{{Name: "qty", Value: int32(2)}}}}}},
		{Name: "ids", Value: &hessian.List{Type: "[int", Items: []any{int32(1)}}},
		{Name: "extra", Value: &hessian.Map{Type: "java.util.TreeMap", Entries: []hessian.Entry{{Key: "k", Value: status}}}},
		{Name: "error", Value: exc},
	}}
	got := generalize(order)
	want := &hessian.Map{Entries: []hessian.Entry{
		{Key: "class", Value: "com.example.Order"},
		{Key: "status", Value: "ACTIVE"},
		{Key: "created", Value: when},
		{Key: "total", Value: hessian.BigDecimal{Value: "9.90"}},
		{Key: "tags", Value: &hessian.List{Type: "java.util.HashSet", Items: []any{"a"}}},
		{Key: "lines", Value: &hessian.List{Type: "[object", Items: []any{&hessian.Map{Entries: []hessian.Entry{{Key: "class", Value: "com.example.Line"}, {Key: "qty", Value: int32(2)}}}}}},
		{Key: "ids", Value: &hessian.List{Type: "[int", Items: []any{int32(1)}}},
		{Key: "extra", Value: &hessian.Map{Type: "java.util.TreeMap", Entries: []hessian.Entry{{Key: "k", Value: "ACTIVE"}}}},
		{Key: "error", Value: exc},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("generalize:\n got %#v\nwant %#v", got, want)
	}
	if l, _ := generalize(&hessian.List{Type: "java.util.LinkedList", Items: []any{}}).(*hessian.List); l == nil || l.Type != "" {
		t.Errorf("a LinkedList generalizes to %#v, want an untyped list", l)
	}
}

func TestGeneralizeKeepsCyclesFinite(t *testing.T) {
	a := &hessian.Object{Class: "com.example.Node"}
	a.Fields = []hessian.Field{{Name: "next", Value: a}}
	m, ok := generalize(a).(*hessian.Map)
	if !ok {
		t.Fatalf("got %T", m)
	}
	if next, _ := m.Get("next"); next != m {
		t.Errorf("the cycle was not kept: next is %#v", next)
	}
}

func TestRealize(t *testing.T) {
	userMap := &hessian.Map{Entries: []hessian.Entry{{Key: "class", Value: "com.x.User"}, {Key: "id", Value: "1"},
		{Key: "address", Value: &hessian.Map{Entries: []hessian.Entry{{Key: "class", Value: "com.x.Address"}, {Key: "city", Value: "Oslo"}}}}}}
	got := realize(userMap, "java.lang.Object")
	want := &hessian.Object{Class: "com.x.User", Fields: []hessian.Field{{Name: "id", Value: "1"},
		{Name: "address", Value: &hessian.Object{Class: "com.x.Address", Fields: []hessian.Field{{Name: "city", Value: "Oslo"}}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("realize:\n got %#v\nwant %#v", got, want)
	}
	// Maps for a Map parameter stay maps; arrays of a class realize their items.
	plain := &hessian.Map{Entries: []hessian.Entry{{Key: "k", Value: "v"}}}
	if got := realize(plain, "java.util.Map"); !reflect.DeepEqual(got, plain) {
		t.Errorf("map parameter: %#v", got)
	}
	arr := realize(&hessian.List{Items: []any{&hessian.Map{Entries: []hessian.Entry{{Key: "id", Value: "2"}}}}}, "com.x.User[]").(*hessian.List)
	if o, ok := arr.Items[0].(*hessian.Object); !ok || o.Class != "com.x.User" {
		t.Errorf("array item realized as %#v", arr.Items[0])
	}
	for _, tc := range []struct {
		in   any
		typ  string
		want any
	}{
		{int64(5), "int", int32(5)},
		{float64(5), "java.lang.Integer", int32(5)},
		{float64(5.5), "int", float64(5.5)},
		{int64(1 << 40), "int", int64(1 << 40)},
		{int32(5), "long", int64(5)},
		{"12", "long", int64(12)},
		{int32(2), "double", float64(2)},
		{"2.5", "double", 2.5},
		{"true", "boolean", true},
		{int64(7), "java.lang.String", "7"},
		{"1.50", "java.math.BigDecimal", hessian.BigDecimal{Value: "1.50"}},
		{"x", "int", "x"},
	} {
		if got := realize(tc.in, tc.typ); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("realize(%#v, %s) = %#v, want %#v", tc.in, tc.typ, got, tc.want)
		}
	}
}
