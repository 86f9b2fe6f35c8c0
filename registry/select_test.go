package registry

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// selectOracle is Select written naively: every matching key sorted, then
// those after f.After, then the first f.Limit.
func selectOracle(keys []string, f DirectoryFilter) (page []string, matched int) {
	var sel []string
	for _, k := range keys {
		if f.Service != "" && k != f.Service || !strings.HasPrefix(k, f.Prefix) {
			continue
		}
		matched++
		if f.After == "" || k > f.After {
			sel = append(sel, k)
		}
	}
	slices.Sort(sel)
	if f.Limit > 0 && len(sel) > f.Limit {
		sel = sel[:f.Limit]
	}
	return sel, matched
}

func randomDirectories(rng *rand.Rand, n int) (*Directories, []string) {
	ds := &Directories{}
	var keys []string
	for range n {
		k := ServiceKey{Interface: fmt.Sprintf("com.example.S%d", rng.IntN(n*2))}
		switch rng.IntN(4) {
		case 0:
			k.Group = fmt.Sprintf("g%d", rng.IntN(3))
		case 1:
			k.Version = fmt.Sprintf("%d.0", rng.IntN(3))
		case 2:
			k.Group, k.Version = "g", "1.0"
		}
		if !slices.Contains(keys, k.String()) {
			keys = append(keys, k.String())
		}
		ds.Acquire(k)
	}
	return ds, keys
}

// TestSelectAgainstOracle pages through random registries with random
// filters and compares each page with the naive selection.
func TestSelectAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		ds, keys := randomDirectories(rng, 1+rng.IntN(300))
		f := DirectoryFilter{Limit: rng.IntN(40)}
		switch rng.IntN(4) {
		case 0:
			f.Prefix = "com.example.S1"
		case 1:
			f.Prefix = "g"
		case 2:
			f.Service = keys[rng.IntN(len(keys))]
		}
		if rng.IntN(3) == 0 {
			f.After = keys[rng.IntN(len(keys))]
		}
		got, matched := ds.Select(f)
		want, wantMatched := selectOracle(keys, f)
		gotKeys := make([]string, len(got))
		for i, st := range got {
			gotKeys[i] = st.Service
		}
		if matched != wantMatched || !slices.Equal(gotKeys, want) {
			t.Fatalf("round %d, filter %+v:\n got %d matched, %q\nwant %d matched, %q", round, f, matched, gotKeys, wantMatched, want)
		}
		// Walking every page with After lists each key once, in order.
		if f.Limit > 0 && f.Service == "" {
			f.After = ""
			var walked []string
			for {
				page, _ := ds.Select(f)
				for _, st := range page {
					walked = append(walked, st.Service)
				}
				if len(page) < f.Limit {
					break
				}
				f.After = page[len(page)-1].Service
			}
			all, _ := selectOracle(keys, DirectoryFilter{Prefix: f.Prefix})
			if !slices.Equal(walked, all) {
				t.Fatalf("round %d: walk %q\nwant %q", round, walked, all)
			}
		}
	}
}

// BenchmarkSelect is one page of 200 services out of 5,000 (the admin
// API's page), in the middle of a walk.
func BenchmarkSelect(b *testing.B) {
	ds := &Directories{}
	for i := range 5000 {
		ds.Acquire(ServiceKey{Interface: fmt.Sprintf("com.example.scale.Service%d", i)})
	}
	f := DirectoryFilter{Limit: 200, After: "com.example.scale.Service2500"}
	b.ReportAllocs()
	for b.Loop() {
		if page, _ := ds.Select(f); len(page) != 200 {
			b.Fatal(len(page))
		}
	}
}
