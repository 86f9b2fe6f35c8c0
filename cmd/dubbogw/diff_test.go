package main

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// lcsLen is the naive oracle: the longest common subsequence's length by
// dynamic programming. A shortest edit script keeps exactly that many lines.
func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// TestLineDiffAgainstOracle: on random inputs, the script turns a into b
// and keeps as many lines as the longest common subsequence has.
func TestLineDiffAgainstOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() []string {
		out := make([]string, r.IntN(12))
		for i := range out {
			out[i] = string(rune('a' + r.IntN(4)))
		}
		return out
	}
	for i := 0; i < 5000; i++ {
		a, b := gen(), gen()
		script := lineDiff(a, b)
		var gotA, gotB []string
		kept := 0
		for _, e := range script {
			if e.kind != add {
				gotA = append(gotA, e.line)
			}
			if e.kind != del {
				gotB = append(gotB, e.line)
			}
			if e.kind == same {
				kept++
			}
		}
		if strings.Join(gotA, ",") != strings.Join(a, ",") || strings.Join(gotB, ",") != strings.Join(b, ",") {
			t.Fatalf("%v → %v: script %v does not rebuild them", a, b, script)
		}
		if want := lcsLen(a, b); kept != want {
			t.Fatalf("%v → %v: kept %d lines, the LCS has %d", a, b, kept, want)
		}
	}
}

func TestWriteUnified(t *testing.T) {
	a := splitLines("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n")
	b := splitLines("a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl")
	var out bytes.Buffer
	if !writeUnified(&out, "live", "file", lineDiff(a, b)) {
		t.Fatal("no change found")
	}
	want := `--- live
+++ file
@@ -1,5 +1,5 @@
 a
-b
+B
 c
 d
 e
@@ -9,3 +9,4 @@
 i
 j
 k
+l
\ No newline at end of file
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if writeUnified(&out, "x", "y", lineDiff(a, a)) {
		t.Error("a change found between equal texts")
	}
	// Too far apart to search: all removed, all added, still correct.
	var big1, big2 []string
	for i := 0; i < 3*maxDiffEdits; i++ {
		big1 = append(big1, "x"+strings.Repeat("1", i%7))
		big2 = append(big2, "y"+strings.Repeat("2", i%5))
	}
	if s := lineDiff(big1, big2); len(s) != len(big1)+len(big2) {
		t.Errorf("fallback script: %d edits", len(s))
	}
}
