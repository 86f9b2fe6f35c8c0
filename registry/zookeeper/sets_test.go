package zookeeper

import "testing"

// TestSetShrinks: a set emptied after holding many members drops its map,
// so that ranging over it no longer costs the room it once needed; a
// small one keeps it.
func TestSetShrinks(t *testing.T) {
	var s set[int]
	for i := range 1000 {
		s.add(i)
	}
	if s.len() != 1000 || !s.has(999) || s.has(1000) {
		t.Fatalf("len %d", s.len())
	}
	n := 0
	for v := range s.all() {
		s.remove(v) // removing while ranging
		n++
	}
	if n != 1000 || s.len() != 0 || s.m != nil {
		t.Fatalf("ranged over %d; after removing all: len %d, map kept: %v", n, s.len(), s.m != nil)
	}
	s.add(1)
	s.add(2)
	s.remove(1)
	s.remove(2)
	if s.m == nil {
		t.Error("a small set dropped its map")
	}
	for i := range 100 {
		s.add(i)
	}
	s.clear()
	if s.len() != 0 || s.m != nil {
		t.Errorf("clear after 100 members: len %d, map kept: %v", s.len(), s.m != nil)
	}
}
