package registry

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/cluster"
)

func TestParseProviderURL(t *testing.T) {
	u, err := ParseProviderURL("dubbo://10.0.0.1:20880/com.example.UserService?version=1.0.0&group=g&weight=200&warmup=60000&timestamp=1700000000000&methods=getUser")
	if err != nil {
		t.Fatal(err)
	}
	if u.Addr != "10.0.0.1:20880" || u.Interface != "com.example.UserService" || u.Protocol != "dubbo" {
		t.Fatalf("parsed %+v", u)
	}
	p, err := u.Provider()
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "10.0.0.1:20880" || p.Weight != 200 || p.Warmup != time.Minute || !p.Timestamp.Equal(time.UnixMilli(1700000000000)) || p.Params.Get("methods") != "getUser" {
		t.Errorf("provider %+v", p)
	}
	plain, err := ParseProviderURL("127.0.0.1:20880")
	pp, _ := plain.Provider()
	if err != nil || pp.Weight != cluster.DefaultWeight || pp.Warmup != cluster.DefaultWarmup {
		t.Errorf("plain: %+v %v", plain, err)
	}
	for _, bad := range []string{"127.0.0.1", "dubbo://:20880", "dubbo://h:0", "dubbo://h:x", "%%"} {
		if _, err := ParseProviderURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMatches(t *testing.T) {
	u, _ := ParseProviderURL("dubbo://h:1/a.B?version=1.0&group=g1")
	cases := []struct {
		key  ServiceKey
		want bool
	}{
		{ServiceKey{"a.B", "g1", "1.0"}, true},
		{ServiceKey{"a.B", "", "1.0"}, false},
		{ServiceKey{"a.B", "g1", ""}, false},
		{ServiceKey{"a.B", "*", "*"}, true},
		{ServiceKey{"a.B", "g0,g1", "1.0"}, true},
		{ServiceKey{"a.C", "g1", "1.0"}, false},
	}
	for _, c := range cases {
		if got := u.Matches(c.key); got != c.want {
			t.Errorf("Matches(%v) = %v", c.key, got)
		}
	}
	disabled, _ := ParseProviderURL("dubbo://h:1/a.B?disabled=true")
	if disabled.Matches(ServiceKey{Interface: "a.B"}) {
		t.Error("disabled provider matched")
	}
}

func TestServiceKeyString(t *testing.T) {
	if s := (ServiceKey{"a.B", "g", "1.0"}).String(); s != "g/a.B:1.0" {
		t.Error(s)
	}
	if s := (ServiceKey{Interface: "a.B"}).String(); s != "a.B" {
		t.Error(s)
	}
}

// TestOneDirectoryPerKey is the seed-000 property: however many callers ask
// for a service, with or without providers, there is one directory, and it
// goes away when the last caller releases it.
func TestOneDirectoryPerKey(t *testing.T) {
	s, err := NewStatic(map[string][]string{
		"a.B": {"127.0.0.1:20880", "dubbo://127.0.0.1:20881?version=2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	key := ServiceKey{Interface: "a.B"}
	missing := ServiceKey{Interface: "no.Provider"}
	var wg sync.WaitGroup
	dirs := make(chan *Directory, 2000)
	for i := 0; i < 1000; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); dirs <- s.Subscribe(key) }()
		go func() { defer wg.Done(); dirs <- s.Subscribe(missing) }()
	}
	wg.Wait()
	close(dirs)
	seen := map[*Directory]bool{}
	var all []*Directory
	for d := range dirs {
		seen[d] = true
		all = append(all, d)
	}
	if len(seen) != 2 {
		t.Fatalf("%d directories for 2 keys", len(seen))
	}
	st := s.Directories()
	if len(st) != 2 || st[0].Refs != 1000 || st[1].Refs != 1000 {
		t.Fatalf("status %+v", st)
	}
	for _, d := range all {
		if d.Key() == key {
			if ps := d.Providers(); len(ps) != 1 || ps[0].Addr != "127.0.0.1:20880" {
				t.Fatalf("providers of %v: %+v (version 2 must not match an empty version)", key, ps)
			}
		} else if len(d.Providers()) != 0 {
			t.Fatalf("providers for a service with none: %v", d.Providers())
		}
		d.Release()
	}
	if st := s.Directories(); len(st) != 0 {
		t.Fatalf("directories left after release: %+v", st)
	}
}

// TestProviderCount: the count of providers follows every snapshot of the
// live directories, and stops counting a directory once dropped, however
// its last snapshots and its drop interleave.
func TestProviderCount(t *testing.T) {
	s, err := NewStatic(map[string][]string{
		"a.B": {"127.0.0.1:20880", "127.0.0.1:20881"},
		"c.D": {"127.0.0.1:20882", "127.0.0.1:20883", "127.0.0.1:20884"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ab := s.Subscribe(ServiceKey{Interface: "a.B"})
	if n := s.ProviderCount(); n != 2 {
		t.Errorf("one directory of 2 providers: %d", n)
	}
	cd := s.Subscribe(ServiceKey{Interface: "c.D"})
	none := s.Subscribe(ServiceKey{Interface: "no.Provider"})
	if n := s.ProviderCount(); n != 5 {
		t.Errorf("2 + 3 + 0 providers: %d", n)
	}
	cd.Set(cd.Providers()[:1])
	if n := s.ProviderCount(); n != 3 {
		t.Errorf("after c.D went down to 1 provider: %d", n)
	}
	ab.Release() // no grace: dropped at once
	if n := s.ProviderCount(); n != 1 {
		t.Errorf("after a.B was dropped: %d", n)
	}
	ab.Set(cd.Providers()) // a late update of a dropped directory
	if n := s.ProviderCount(); n != 1 {
		t.Errorf("a dropped directory's update counted: %d", n)
	}
	cd.Release()
	none.Release()
	if n := s.ProviderCount(); n != 0 {
		t.Errorf("no directory left: %d", n)
	}

	// Updates racing the drop.
	var set Directories
	ps := make([]*cluster.Provider, 10)
	for i := range 50 {
		d := set.Acquire(ServiceKey{Interface: "x.Y", Version: fmt.Sprint(i)})
		var wg sync.WaitGroup
		for j := range 4 {
			wg.Go(func() {
				for k := range 20 {
					d.Set(ps[:(j+k)%len(ps)])
				}
			})
		}
		wg.Go(d.Release)
		wg.Wait()
	}
	if n := set.ProviderCount(); n != 0 {
		t.Errorf("every directory dropped while being updated, %d providers still counted", n)
	}
}
