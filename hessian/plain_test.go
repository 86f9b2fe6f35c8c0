package hessian

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPlain(t *testing.T) {
	color := &Object{Class: "example.Color", Fields: []Field{{"name", "RED"}}}
	user := &Object{Class: "example.User", Fields: []Field{
		{"id", int64(42)},
		{"name", "Ann"},
		{"tags", &List{Type: "java.util.ArrayList", Items: []any{"a", "b"}}},
		{"scores", &Map{Type: "java.util.HashMap", Entries: []Entry{{int32(1), 1.5}, {true, nil}, {color, "favourite"}}}},
		{"balance", BigDecimal{"12.30"}},
		{"born", LocalDate{1990, 1, 2}},
		{"seen", time.UnixMilli(0).UTC()},
		{"color", color},
		{"avatar", []byte{1, 2}},
	}}
	got, err := json.Marshal(Plain(user))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"avatar":"AQI=","balance":12.30,"born":"1990-01-02","color":{"name":"RED"},"id":42,"name":"Ann",` +
		`"scores":{"1":1.5,"RED":"favourite","true":null},"seen":"1970-01-01T00:00:00Z","tags":["a","b"]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}

	got, _ = json.Marshal(PlainOptions{KeepClass: true, EnumNames: true}.Plain(user))
	want = `{"avatar":"AQI=","balance":12.30,"born":"1990-01-02","class":"example.User","color":"RED","id":42,"name":"Ann",` +
		`"scores":{"1":1.5,"RED":"favourite","true":null},"seen":"1970-01-01T00:00:00Z","tags":["a","b"]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestPlainSharedAndCyclic(t *testing.T) {
	shared := &Object{Class: "S", Fields: []Field{{"v", int32(1)}}}
	node := &Object{Class: "N", Fields: []Field{{"a", shared}, {"b", shared}, {"self", nil}}}
	node.Fields[2].Value = node
	p := Plain(node).(map[string]any)
	a, b := p["a"].(map[string]any), p["b"].(map[string]any)
	a["mark"] = true
	if b["mark"] != true {
		t.Fatal("a shared object was converted twice")
	}
	if p["self"] != nil {
		t.Fatalf("cycle became %v, want nil", p["self"])
	}
	if _, err := json.Marshal(p); err != nil {
		t.Fatal(err)
	}

	l := &List{}
	l.Items = []any{l, "x"}
	if got := Plain(l).([]any); got[0] != nil || got[1] != "x" {
		t.Fatalf("got %v", got)
	}
}

func TestPlainValues(t *testing.T) {
	for _, c := range []struct {
		in   any
		want any
	}{
		{nil, nil},
		{int32(1), int32(1)},
		{BigInteger{"123456789012345678901"}, json.Number("123456789012345678901")},
		{Locale{"en_US"}, "en_US"},
		{Instant{0, 0}, "1970-01-01T00:00:00Z"},
		{Duration{90, 0}, "PT1M30S"},
		{Period{0, 1, 0}, "P1M"},
		{ZonedDateTime{LocalDateTime{LocalDate{2024, 1, 2}, LocalTime{3, 4, 5, 0}}, ZoneOffset{0}, "UTC"}, "2024-01-02T03:04:05Z[UTC]"},
		{(*List)(nil), nil},
		{(*Object)(nil), nil},
	} {
		if got := Plain(c.in); got != c.want {
			t.Errorf("Plain(%#v) = %#v, want %#v", c.in, got, c.want)
		}
	}
	exc := Plain(&Exception{Class: "E", Message: "m", StackTrace: []StackFrame{{"C", "f", "F.java", 3}}})
	got, _ := json.Marshal(exc)
	want := `{"cause":null,"class":"E","message":"m","stackTrace":[{"declaringClass":"C","fileName":"F.java","lineNumber":3,"methodName":"f"}],"suppressed":[]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	nested := Plain([]any{map[string]any{"d": BigDecimal{"1"}}}).([]any)
	if nested[0].(map[string]any)["d"] != json.Number("1") {
		t.Fatalf("nested plain Go values not converted: %v", nested)
	}
}
