package registry

import (
	"fmt"
	"testing"
	"time"
)

func refKey(i int) RefKey {
	return RefKey{Service: ServiceKey{Interface: fmt.Sprintf("com.example.S%d", i)}, Timeout: time.Second}
}

// TestReferencesBounded: references made on demand for ever new services
// stay within the bound, and so do the registry's directories.
func TestReferencesBounded(t *testing.T) {
	reg, err := NewStatic(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewReferences(reg, 100, time.Hour)
	defer c.Close()
	pinned := c.Pin(refKey(-1))
	for i := range 10_000 {
		if r := c.Get(refKey(i)); r == nil || r.Key != refKey(i) {
			t.Fatalf("Get %d: %+v", i, r)
		}
	}
	if n := c.Len(); n != 101 {
		t.Errorf("%d references, want 100 cached + 1 pinned", n)
	}
	if n := len(reg.Directories()); n != 101 {
		t.Errorf("%d directories, want 101", n)
	}
	if c.Pin(refKey(-1)) != pinned {
		t.Error("a pinned reference was evicted")
	}
	c.Unpin(pinned)
	c.Unpin(pinned)
	// Unpinned, it is the most recent entry; 100 newer ones push it out.
	for i := 20_000; i < 20_100; i++ {
		c.Get(refKey(i))
	}
	if c.Len() != 100 {
		t.Errorf("%d references after unpinning, want 100", c.Len())
	}
	c.Close()
	if n := len(reg.Directories()); n != 0 {
		t.Errorf("%d directories after Close", n)
	}
	if c.Get(refKey(1)) != nil || c.Pin(refKey(1)) != nil {
		t.Error("a closed cache made a reference")
	}
}

// TestReferencesSameKeyOneDirectory: the same key, asked for many times,
// is one reference holding one directory reference.
func TestReferencesSameKeyOneDirectory(t *testing.T) {
	reg, _ := NewStatic(map[string][]string{"com.example.S1": {"127.0.0.1:20880"}})
	c := NewReferences(reg, 10, time.Hour)
	defer c.Close()
	first := c.Get(refKey(1))
	for range 1000 {
		if c.Get(refKey(1)) != first {
			t.Fatal("a second reference for the same key")
		}
	}
	ds := reg.Directories()
	if len(ds) != 1 || ds[0].Refs != 1 || len(ds[0].Providers) != 1 {
		t.Fatalf("directories %+v", ds)
	}
	other := c.Get(RefKey{Service: refKey(1).Service, Timeout: 2 * time.Second})
	if other == first || other.Dir != first.Dir {
		t.Error("another timeout must be another reference on the same directory")
	}
}

// TestReferencesIdle: an unused reference is evicted after the idle TTL; a
// pinned one is not.
func TestReferencesIdle(t *testing.T) {
	reg, _ := NewStatic(nil)
	c := NewReferences(reg, 10, 40*time.Millisecond)
	defer c.Close()
	c.Get(refKey(1))
	p := c.Pin(refKey(2))
	deadline := time.Now().Add(5 * time.Second)
	for c.Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d references after the idle TTL, want the pinned one", c.Len())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.Pin(refKey(2)) != p {
		t.Error("the pinned reference was evicted")
	}
	if n := len(reg.Directories()); n != 1 {
		t.Errorf("%d directories, want 1", n)
	}
}

// TestDirectoriesGrace: a released directory stays for the grace period
// and is taken back untouched when acquired again within it.
func TestDirectoriesGrace(t *testing.T) {
	var first, last int
	ds := &Directories{Grace: 50 * time.Millisecond,
		OnFirst: func(*Directory) { first++ },
		OnLast:  func(*Directory) { last++ }}
	defer ds.Close()
	k := ServiceKey{Interface: "a.B"}
	d := ds.Acquire(k)
	d.Release()
	d.Release() // a second release of the same reference is ignored
	if again := ds.Acquire(k); again != d {
		t.Fatal("re-acquired within the grace period: a new directory")
	}
	d.Release()
	deadline := time.Now().Add(5 * time.Second)
	for ds.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("not released after the grace period")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ds.mu.Lock()
	f, l := first, last
	ds.mu.Unlock()
	if f != 1 || l != 1 {
		t.Errorf("OnFirst %d times, OnLast %d times; want 1 and 1", f, l)
	}
}

func TestDirectoryState(t *testing.T) {
	d := newDirectory(ServiceKey{Interface: "a.B"}, func(*Directory, bool) {})
	if d.State() != DirPending {
		t.Fatal(d.State())
	}
	select {
	case <-d.Ready():
		t.Fatal("ready before any answer")
	default:
	}
	d.MarkStale()
	<-d.Ready()
	if d.State() != DirStale {
		t.Fatal(d.State())
	}
	d.Set(nil)
	if d.State() != DirOK || d.Updated().IsZero() {
		t.Fatal(d.State())
	}
	d.MarkStale()
	if d.State() != DirStale {
		t.Fatal(d.State())
	}
}

// TestUnpinReleasesRouteOnlyReference: a reference only routes pinned is
// released when the last route lets go (a reload removing the route
// releases its subscription); one the pass-through also used stays cached.
func TestUnpinReleasesRouteOnlyReference(t *testing.T) {
	reg, _ := NewStatic(nil)
	c := NewReferences(reg, 10, time.Hour)
	defer c.Close()
	routeOnly := c.Pin(refKey(1))
	again := c.Pin(refKey(1)) // a second route, or the next table's route during a reload
	shared := c.Pin(refKey(2))
	c.Get(refKey(2))
	c.Unpin(routeOnly)
	if c.Len() != 2 || len(reg.Directories()) != 2 {
		t.Fatalf("released while another route still pins it: %d references", c.Len())
	}
	c.Unpin(again)
	c.Unpin(shared)
	if c.Len() != 1 {
		t.Errorf("%d references; want only the pass-through's", c.Len())
	}
	ds := reg.Directories()
	if len(ds) != 1 || ds[0].Service != refKey(2).Service.String() {
		t.Errorf("directories %+v", ds)
	}
}
