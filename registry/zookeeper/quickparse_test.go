package zookeeper

import (
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/registry"
)

// preciseProviderNode is the precise path alone: what parseProviderNode
// makes of a decoded URL without quickProviderNode.
func preciseProviderNode(raw string) (*providerNode, string) {
	u, err := registry.ParseProviderURL(raw)
	if err != nil {
		return nil, err.Error()
	}
	return newProviderNode(u)
}

// checkQuick fails when quickProviderNode makes a node that differs from
// the precise path's, or none for a URL of the usual shape (usual).
func checkQuick(t *testing.T, raw string, usual bool) {
	t.Helper()
	quick := quickProviderNode(raw)
	precise, reason := preciseProviderNode(raw)
	switch {
	case quick == nil && usual:
		t.Errorf("%q: the quick path refused a URL of the usual shape (precise: %v %q)", raw, precise != nil, reason)
	case quick == nil:
	case precise == nil:
		t.Errorf("%q: the quick path made a node the precise path refuses (%s)", raw, reason)
	case quick.match != precise.match:
		t.Errorf("%q: match %+v, precise %+v", raw, quick.match.Value(), precise.match.Value())
	default:
		p, q := quick.provider, precise.provider
		if p.Addr != q.Addr || p.Weight != q.Weight || p.Warmup != q.Warmup || !p.Timestamp.Equal(q.Timestamp) || p.Params != q.Params {
			t.Errorf("%q:\n quick   %+v %v\n precise %+v %v", raw, p, p.Params.Map(), q, q.Params.Map())
		}
	}
}

func TestQuickProviderNode(t *testing.T) {
	java := "dubbo://10.20.30.40:20880/com.example.UserService?anyhost=true&application=user-app&deprecated=false&dubbo=2.0.2" +
		"&dynamic=true&generic=false&interface=com.example.UserService&methods=get,list&pid=4242&release=3.2.10" +
		"&service-name-mapping=true&side=provider&timestamp=1700000000000"
	usual := []string{
		java,
		java + "&group=g&version=1.0.0&weight=50&warmup=60000",
		java + "&serialization=protobuf&prefer.serialization=fastjson2,hessian2",
		java + "&weight=-3&timestamp=0&warmup=-1",
		java + "&group=a&group=b&side=consumer", // the first of a key's values
		java + "&enabled=false",
		java + "&disabled=true&category=providers",
		java + "&flag&empty=&&trailing=",
		"dubbo://provider-1.svc.cluster.local:20880/com.example.A",
		"dubbo://10.0.0.1:20880/com.example.A?",
		"dubbo://10.0.0.1:65535/com.example.A?weight=99999999999",
		"dubbo://h_1:1/x?a=b?c=d",
		"dubbo://10.0.0.1:20880?interface=com.example.A",
		"tri://10.0.0.1:50051/com.example.A?serialization=hessian2&weight=5",
		"tri://10.0.0.1:50051/org.example.Greeter?serialization=protobuf", // an IDL service
		strings.Replace(java, "dubbo://", "tri://", 1),
	}
	for _, raw := range usual {
		checkQuick(t, raw, true)
	}
	unusual := []string{
		"rest://10.0.0.1:50051/com.example.A",
		"TRI://10.0.0.1:50051/com.example.A",
		"DUBBO://10.0.0.1:20880/com.example.A",
		"dubbo://[::1]:20880/com.example.A",
		"dubbo://u@10.0.0.1:20880/com.example.A",
		"dubbo://10.0.0.1/com.example.A",
		"dubbo://10.0.0.1:0/com.example.A",
		"dubbo://10.0.0.1:020880/com.example.A",
		"dubbo://10.0.0.1:65536/com.example.A",
		"dubbo://:20880/com.example.A",
		"dubbo://10.0.0.1:20880/a/b",
		"dubbo://10.0.0.1:20880/com.example.A?weight=heavy",
		"dubbo://10.0.0.1:20880/com.example.A?timestamp=",
		"dubbo://10.0.0.1:20880/com.example.A?category=consumers",
		"dubbo://10.0.0.1:20880/com.example.A?serialization=protobuf",
		"dubbo://10.0.0.1:20880/com.example.A?methods=a%2Cb",
		"dubbo://10.0.0.1:20880/com.example.A?name=a+b",
		"dubbo://10.0.0.1:20880/com.example.A?a=1;b=2",
		"dubbo://10.0.0.1:20880/com.example.A?=v",
		"dubbo://10.0.0.1:20880/com.example.A#frag",
		"dubbo://10.0.0.1:20880/com.example.A?x=a b",
		"dubbo://10.0.0.1:20880/com.example.A?x=\x01",
	}
	for _, raw := range unusual {
		checkQuick(t, raw, false)
	}
	// Random URLs from pieces, the tricky ones included.
	rng := rand.New(rand.NewPCG(3, 4))
	hosts := []string{"10.0.0.1", "h", "H.example", "a-b_c", "[::1]", "", "u@h", "h%41"}
	ports := []string{"20880", "1", "65535", "0", "08", "65536", "x", ""}
	paths := []string{"/com.example.A", "", "/", "/a/b", "/a%2Eb", "/a b"}
	keys := []string{"weight", "warmup", "timestamp", "pid", "group", "version", "category", "serialization",
		"prefer.serialization", "enabled", "disabled", "side", "methods", "", "a+b", "k%3D"}
	values := []string{"", "1", "-5", "x", "true", "false", "providers", "consumers", "hessian2", "protobuf",
		"fastjson2,hessian2", "a,b", "a=b", "a%2Cb", "a+b", "a;b", "1e3", "99999999999999999999"}
	for range 20000 {
		var b strings.Builder
		b.WriteString("dubbo://" + hosts[rng.IntN(len(hosts))])
		if rng.IntN(8) > 0 {
			b.WriteString(":" + ports[rng.IntN(len(ports))])
		}
		b.WriteString(paths[rng.IntN(len(paths))])
		if rng.IntN(6) > 0 {
			b.WriteString("?")
			for i := range rng.IntN(8) {
				if i > 0 {
					b.WriteString("&")
				}
				b.WriteString(keys[rng.IntN(len(keys))])
				if rng.IntN(6) > 0 {
					b.WriteString("=" + values[rng.IntN(len(values))])
				}
			}
		}
		checkQuick(t, b.String(), false)
	}
}

// FuzzQuickProviderNode: whatever the decoded URL, the quick path makes
// the precise path's node or none.
func FuzzQuickProviderNode(f *testing.F) {
	f.Add("dubbo://10.0.0.1:20880/com.example.A?group=g&version=1&weight=5&pid=1&timestamp=1700000000000")
	f.Add("dubbo://h:1/x?a&a=1&b=&&c=d?e")
	f.Add(url.QueryEscape("dubbo://10.0.0.1:20880/A?x=1"))
	f.Fuzz(func(t *testing.T, raw string) {
		checkQuick(t, raw, false)
	})
}

// BenchmarkParseProviderNode parses a Java provider's node name, as a
// registry does for each provider it lists.
func BenchmarkParseProviderNode(b *testing.B) {
	name := url.QueryEscape("dubbo://10.20.30.40:20880/com.example.UserService?anyhost=true&application=user-app&deprecated=false&dubbo=2.0.2" +
		"&dynamic=true&generic=false&interface=com.example.UserService&methods=get,list,create,update,delete&pid=4242&release=3.2.10" +
		"&service-name-mapping=true&side=provider&timestamp=1700000000000")
	raw, _ := url.QueryUnescape(name)
	b.Run("precise", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n, _ := preciseProviderNode(raw); n == nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("node name", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n, _ := parseProviderNode(name); n == nil {
				b.Fatal("refused")
			}
		}
	})
}
