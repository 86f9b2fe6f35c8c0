package auth

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var testFields = fields{
	list: []field{
		{name: "userId", header: "X-User-Id", attachment: "userId"},
		{name: "tenant", header: "X-Tenant", attachment: "tenant"},
		{name: "level", header: "X-Level"},
		{name: "vip", attachment: "vip"},
	},
	userID: 0,
}

func TestParseIdentity(t *testing.T) {
	for _, c := range []struct {
		value       string
		user        string // "" = no identity
		headers     map[string]string
		attachments map[string]string
	}{
		{`{"userId":"u1"}`, "u1", map[string]string{"X-User-Id": "u1"}, map[string]string{"userId": "u1"}},
		{` { "userId" : "u1" , "tenant":"t\u00e9\"\\n", "level": -1.5e+3, "vip": false, "x": {"y":[1,2,{"z":"}"}]} } `, "u1",
			map[string]string{"X-User-Id": "u1", "X-Tenant": "té\"\\n", "X-Level": "-1.5e+3"},
			map[string]string{"userId": "u1", "tenant": "té\"\\n", "vip": "false"}},
		{`{"userId":"u1","tenant":{"nested":1},"level":null,"vip":[true]}`, "u1",
			map[string]string{"X-User-Id": "u1"}, map[string]string{"userId": "u1"}},
		{`{"userId":"first","userId":"last"}`, "last", map[string]string{"X-User-Id": "last"}, map[string]string{"userId": "last"}},
		{`{"userId":"\ud83d\ude00 \udc00"}`, "😀 \uFFFD", map[string]string{"X-User-Id": "😀 \uFFFD"}, map[string]string{"userId": "😀 \uFFFD"}},
		{`{"userId":"u1","tenant":"a\nb"}`, "u1", map[string]string{"X-User-Id": "u1"}, map[string]string{"userId": "u1", "tenant": "a\nb"}},
		{`{"userId":""}`, "", nil, nil},
		{`{"userId":7}`, "", nil, nil},
		{`{"userId":"a\rb"}`, "", nil, nil},
		{`{"name":"u1"}`, "", nil, nil},
		{`{"userId":"u1",}`, "", nil, nil},
		{`{"userId":"u1"`, "", nil, nil},
		{`{"userId":"u1"}{}`, "", nil, nil},
		{`{"userId":"u1","n":01}`, "", nil, nil},
		{`{"userId":"u1","n":tru}`, "", nil, nil},
		{`{"userId":"bad \x01"}`, "", nil, nil},
		{`{"userId":"u1","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "u1", map[string]string{"X-User-Id": "u1"}, map[string]string{"userId": "u1"}},
		{`["userId","u1"]`, "", nil, nil},
		{``, "", nil, nil},
	} {
		id := testFields.parse(c.value)
		if c.user == "" {
			if id != nil {
				t.Errorf("%q: identity %+v, want none", c.value, id)
			}
			continue
		}
		if id == nil {
			t.Errorf("%q: no identity", c.value)
			continue
		}
		headers := map[string]string{}
		for _, h := range id.headers {
			if len(h.values) != 1 || cap(h.values) != 1 {
				t.Errorf("%q: header %s values %q (cap %d)", c.value, h.name, h.values, cap(h.values))
			}
			headers[h.name] = h.values[0]
		}
		if id.userID != c.user || !reflect.DeepEqual(headers, c.headers) || !reflect.DeepEqual(id.attachments, c.attachments) {
			t.Errorf("%q: user %q headers %v attachments %v; want %q %v %v", c.value, id.userID, headers, id.attachments, c.user, c.headers, c.attachments)
		}
	}
}

func TestIdentityCacheBound(t *testing.T) {
	c := identityCache{limit: 3}
	parses := 0
	parse := func(v string) *identity { parses++; return testFields.parse(v) }
	for i := range 10 {
		v := `{"userId":"u` + strconv.Itoa(i%5) + `"}`
		if id := c.get(v, parse); id == nil || id.userID != "u"+strconv.Itoa(i%5) {
			t.Fatalf("get %s = %+v", v, id)
		}
	}
	if n := c.n.Load(); n > 3 {
		t.Errorf("%d entries, limit 3", n)
	}
	before := parses
	v := `{"userId":"u4"}`
	c.get(v, parse)
	c.get(v, parse)
	if parses-before > 1 {
		t.Errorf("a cached value parsed %d times", parses-before)
	}
	for range 2 { // parsed, then cached as no identity
		if c.get(`nope`, parse) != nil {
			t.Error("an invalid value gave an identity")
		}
	}
}

// TestIdentityCacheMetrics: the cache exports its size, and counts the
// times it was full and started over.
func TestIdentityCacheMetrics(t *testing.T) {
	m := newFilterMetrics(prometheus.NewRegistry(), "r")
	c := identityCache{limit: 3, entries: m.identities, resets: m.resets}
	parse := func(v string) *identity { return &identity{userID: v} }
	for _, v := range []string{"a", "b", "a", "c"} {
		if id := c.get(v, parse); id == nil || id.userID != v {
			t.Fatalf("get(%q) = %+v", v, id)
		}
	}
	if e, r := testutil.ToFloat64(m.identities), testutil.ToFloat64(m.resets); e != 3 || r != 0 {
		t.Fatalf("after 3 distinct values: entries %v, resets %v", e, r)
	}
	c.get("d", parse) // the fourth: the cache starts over with it
	if e, r := testutil.ToFloat64(m.identities), testutil.ToFloat64(m.resets); e != 1 || r != 1 {
		t.Fatalf("after a fourth value: entries %v, resets %v; want 1, 1", e, r)
	}
}
