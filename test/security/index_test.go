package security

import "testing"

// attack is one row of docs/SECURITY.md: what a hostile client sends and
// the test proving what the gateway does about it.
type attack struct {
	id   string // the row in docs/SECURITY.md, e.g. "1a"
	name string // what the client does, in a few words
	run  func(t *testing.T)
}

// TestAttacks runs every attack, one subtest each, one after the other:
// some measure how long a stalled client holds a slot, and must not share
// the machine with the others.
func TestAttacks(t *testing.T) {
	seen := map[string]bool{}
	for _, group := range [][]attack{slowClientAttacks, dubboAttacks, headerAttacks, adminAttacks} {
		for _, a := range group {
			if seen[a.id] {
				t.Fatalf("attack id %s listed twice", a.id)
			}
			seen[a.id] = true
			t.Run(a.id+"_"+a.name, a.run)
		}
	}
}
