package zookeeper

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/registry"
)

// TestAppsMetadataCacheBound checks the cache rule without ZooKeeper:
// every entry a live instance uses is kept, and at most MetadataCache
// others, the least recently used going first.
func TestAppsMetadataCacheBound(t *testing.T) {
	ap := newApps(&Registry{opts: Options{MetadataCache: 2}}, nil, nil, nil, nil)
	key := func(i int) metaKey { return metaKey{app: "app", instance: "10.0.0.1:20880", revision: strconv.Itoa(i)} }
	base := time.Now()
	for i := range 6 {
		ap.metaEntry(key(i)).used = base.Add(time.Duration(i) * time.Second) // used in order
	}
	kept := func() []string {
		var revs []string
		for k := range ap.meta {
			revs = append(revs, k.revision)
		}
		slices.Sort(revs)
		return revs
	}
	a, b := &instanceState{}, &instanceState{}
	ap.useMeta(nil, a, ap.meta[key(0)])
	ap.useMeta(nil, b, ap.meta[key(1)])
	ap.evictMetadata()
	if got, want := kept(), []string{"0", "1", "4", "5"}; !slices.Equal(got, want) || ap.metaInUse != 2 {
		t.Fatalf("kept %v (%d in use), want %v: the 2 in use and the 2 used last", got, ap.metaInUse, want)
	}
	ap.useMeta(nil, a, nil) // revision 0 is no longer used: the oldest idle entry
	ap.evictMetadata()
	if got, want := kept(), []string{"1", "4", "5"}; !slices.Equal(got, want) || ap.metaInUse != 1 {
		t.Fatalf("kept %v (%d in use), want %v", got, ap.metaInUse, want)
	}
}

// TestMetadataSharesParams: the providers of a revision's instances share
// the parameters of each service (they are the same for all), and a
// service whose parameters differ keeps its own.
func TestMetadataSharesParams(t *testing.T) {
	e := &metaEntry{}
	url := func(addr, query string) *registry.ProviderURL {
		u, err := registry.ParseProviderURL("dubbo://" + addr + "/com.example.S?" + query)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	first := url("10.0.0.1:20880", "methods=a,b&release=3")
	p1, _ := first.Provider()
	kept := e.shareParams(first, p1.Params)
	second := url("10.0.0.2:20880", "methods=a,b&release=3")
	p2, _ := second.Provider()
	if got := e.shareParams(second, p2.Params); !got.Shares(kept) || got.Compare(p2.Params) != 0 {
		t.Error("the second instance's parameters are not the first's")
	}
	other := url("10.0.0.3:20880", "methods=a&release=3")
	p3, _ := other.Provider()
	if got := e.shareParams(other, p3.Params); got.Shares(kept) || got.Compare(p3.Params) != 0 {
		t.Error("different parameters were replaced by the kept ones")
	}
	versioned := url("10.0.0.4:20880", "methods=a,b&release=3&version=2")
	p4, _ := versioned.Provider()
	if got := e.shareParams(versioned, p4.Params); got.Shares(kept) || got.Get("version") != "2" {
		t.Error("another service key shares the first's parameters")
	}
}
