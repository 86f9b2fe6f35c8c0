package interop

import (
	"fmt"
	"strings"
	"testing"

	dubbo "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/test/peers"
)

// The benchmarks put our codec and dubbo-go-hessian2 side by side, in one
// run, on the codec's four reference cases. Each library gets its own
// natural value and its reuse API (our Reset, dubbo-go-hessian2's
// ReuseBufferClean and Reset); both decoders read the same bytes.
//
//	go test -run '^$' -bench . -benchmem -count 5 .

type benchCase struct {
	name  string
	ours  any // a value of our model
	dubbo any // the same value as dubbo-go-hessian2 holds it
}

func benchCases() []benchCase {
	pojo := func(i int) (*hessian.Object, *Pojo) {
		p := &Pojo{ID: int64(1000 + i), Name: fmt.Sprintf("user-%d", i), Age: int32(20 + i%50), Active: i%2 == 0, Score: 60 + float64(i%400)/10}
		return &hessian.Object{Class: "interop.Pojo", Fields: []hessian.Field{
			{Name: "id", Value: p.ID}, {Name: "name", Value: p.Name}, {Name: "age", Value: p.Age},
			{Name: "active", Value: p.Active}, {Name: "score", Value: p.Score},
		}}, p
	}
	onePojo, oneDubbo := pojo(1)

	list := &hessian.List{Items: make([]any, 100)}
	dubboList := make([]any, 100)
	for i := range 100 {
		list.Items[i], dubboList[i] = pojo(i)
	}

	text := strings.Repeat(`{"id":12345,"name":"gateway","tags":["a","b"]}`, 64<<10/46+1)[:64<<10]

	m := &hessian.Map{Entries: make([]hessian.Entry, 1000)}
	dubboMap := make(map[any]any, 1000)
	for i := range 1000 {
		k := fmt.Sprintf("key-%04d", i)
		m.Entries[i] = hessian.Entry{Key: k, Value: int32(i)}
		dubboMap[k] = int32(i)
	}

	return []benchCase{
		{"pojo", onePojo, oneDubbo},
		{"list100pojo", list, dubboList},
		{"string64KiB", text, text},
		{"map1000", m, dubboMap},
	}
}

const (
	oursName  = "ours"
	dubboName = "dubbo-go-hessian2"
)

func oursEncode(b *testing.B, e *hessian.Encoder, buf []byte, v any) []byte {
	e.Reset(buf[:0])
	if err := e.Encode(v); err != nil {
		b.Fatal(err)
	}
	return e.Bytes()
}

func dubboEncodeBench(b *testing.B, e *dubbo.Encoder, v any) []byte {
	e.ReuseBufferClean()
	if err := e.Encode(v); err != nil {
		b.Fatal(err)
	}
	return e.Buffer()
}

// input is the bytes both decoders read: our encoding of the case.
func input(b *testing.B, c benchCase) []byte {
	e := hessian.NewEncoder(nil)
	if err := e.Encode(c.ours); err != nil {
		b.Fatal(err)
	}
	return e.Bytes()
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range benchCases() {
		size := len(input(b, c))
		b.Run(c.name+"/"+oursName, func(b *testing.B) {
			e, buf := hessian.NewEncoder(nil), make([]byte, 0, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				buf = oursEncode(b, e, buf, c.ours)
			}
		})
		b.Run(c.name+"/"+dubboName, func(b *testing.B) {
			e := dubbo.NewEncoder()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				dubboEncodeBench(b, e, c.dubbo)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range benchCases() {
		data := input(b, c)
		b.Run(c.name+"/"+oursName, func(b *testing.B) {
			d := hessian.NewDecoder(nil)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(data)
				if _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/"+dubboName, func(b *testing.B) {
			d := dubbo.NewDecoder(data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(data)
				if _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range benchCases() {
		size := len(input(b, c))
		b.Run(c.name+"/"+oursName, func(b *testing.B) {
			e, buf, d := hessian.NewEncoder(nil), make([]byte, 0, size), hessian.NewDecoder(nil)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				buf = oursEncode(b, e, buf, c.ours)
				d.Reset(buf)
				if _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/"+dubboName, func(b *testing.B) {
			e, d := dubbo.NewEncoder(), dubbo.NewDecoder(nil)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(dubboEncodeBench(b, e, c.dubbo))
				if _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBenchCasesAgree makes sure the benchmarks compare the same work: each
// case's two values decode, from each library's bytes, in the other library
// to the same thing.
func TestBenchCasesAgree(t *testing.T) {
	for _, c := range benchCases() {
		t.Run(c.name, func(t *testing.T) {
			oe := hessian.NewEncoder(nil)
			if err := oe.Encode(c.ours); err != nil {
				t.Fatal(err)
			}
			de := dubbo.NewEncoder()
			if err := de.Encode(c.dubbo); err != nil {
				t.Fatal(err)
			}
			theirRead, err := dubbo.NewDecoder(oe.Bytes()).Decode()
			if err != nil {
				t.Fatalf("dubbo-go-hessian2 reading our bytes: %v", err)
			}
			ourRead, err := hessian.NewDecoder(de.Buffer()).Decode()
			if err != nil {
				t.Fatalf("reading dubbo-go-hessian2's bytes: %v", err)
			}
			// Go maps have no order: compare entries sorted.
			same := func(what string, want, got *peers.Desc, err1, err2 error) {
				t.Helper()
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v %v", what, err1, err2)
				}
				w, g := peers.Canonical(peers.SortEntries(want, "")), peers.Canonical(peers.SortEntries(got, ""))
				if d := peers.Diff(w, g); d != "" {
					t.Errorf("%s: %s", what, d)
				}
			}
			w1, e1 := fromDubbo(c.dubbo)
			g1, e2 := fromDubbo(theirRead)
			same("dubbo-go-hessian2 reads our bytes as its own value", w1, g1, e1, e2)
			w2, e3 := peers.Describe(c.ours)
			g2, e4 := peers.Describe(ourRead)
			same("we read dubbo-go-hessian2's bytes as our own value", w2, g2, e3, e4)
		})
	}
}
