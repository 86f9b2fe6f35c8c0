package zookeeper

import (
	"slices"
	"strconv"
	"testing"
	"time"
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
