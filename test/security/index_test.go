package security

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

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

// TestEveryAttackIsDocumented: docs/SECURITY.md lists every attack by its
// id (the first column of its tables), and lists no id without a test.
func TestEveryAttackIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	inTable := false // in a table whose first column is "id"
	for line := range strings.SplitSeq(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[0]) != "" {
			inTable = false
			continue
		}
		first := strings.TrimSpace(cells[1])
		if first == "id" {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(first, "---") {
			continue
		}
		for id := range strings.SplitSeq(first, ",") {
			id = strings.TrimSpace(id)
			if from, to, ok := strings.Cut(id, "–"); ok { // "H1–H13"
				prefix := strings.TrimRight(from, "0123456789")
				lo, err1 := strconv.Atoi(strings.TrimPrefix(from, prefix))
				hi, err2 := strconv.Atoi(strings.TrimPrefix(to, prefix))
				if err1 != nil || err2 != nil {
					t.Fatalf("SECURITY.md: bad id range %q", id)
				}
				for i := lo; i <= hi; i++ {
					documented[prefix+strconv.Itoa(i)] = true
				}
				continue
			}
			documented[id] = true
		}
	}
	listed := map[string]bool{}
	for _, group := range [][]attack{slowClientAttacks, dubboAttacks, headerAttacks, adminAttacks} {
		for _, a := range group {
			listed[a.id] = true
			if !documented[a.id] {
				t.Errorf("attack %s (%s) is not in docs/SECURITY.md", a.id, a.name)
			}
		}
	}
	for id := range documented {
		if !listed[id] {
			t.Errorf("docs/SECURITY.md lists %q, which no test sends", id)
		}
	}
}
