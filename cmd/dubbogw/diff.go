package main

import (
	"fmt"
	"io"
	"strings"
)

// maxDiffEdits bounds the edit distance lineDiff searches for: Myers'
// algorithm takes O((N+M)·D) time and, keeping each step's furthest
// reaches, O(D²) memory. Two configurations further apart than that are
// shown as all of one removed and all of the other added.
const maxDiffEdits = 1000

type editKind byte

const (
	same editKind = ' '
	del  editKind = '-'
	add  editKind = '+'
)

type edit struct {
	kind editKind
	line string
}

// splitLines splits text into lines, without their "\n"; a last line
// without one is marked so.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if s, ok := strings.CutSuffix(l, "\n"); ok {
			lines[i] = s
		} else {
			lines[i] = l + "\n\\ No newline at end of file"
		}
	}
	return lines
}

// lineDiff is the shortest edit script from a to b (Myers, "An O(ND)
// Difference Algorithm and Its Variations", 1986), the common prefix and
// suffix taken off first.
func lineDiff(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for _, l := range a[:pre] {
		out = append(out, edit{same, l})
	}
	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, edit{same, l})
	}
	return out
}

func myers(a, b []string) []edit {
	if script, ok := myersBounded(a, b); ok {
		return script
	}
	out := make([]edit, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, edit{del, l})
	}
	for _, l := range b {
		out = append(out, edit{add, l})
	}
	return out
}

// myersBounded runs the greedy forward search, keeping for each step d
// the furthest x reached on diagonals -d..d, then walks the steps back.
// It gives up (false) past maxDiffEdits.
func myersBounded(a, b []string) ([]edit, bool) {
	n, m := len(a), len(b)
	var trace [][]int // trace[d][k+d]: furthest x on diagonal k after d edits
	prev := []int{0}  // d = -1 stand-in: v[1] = 0
	for d := 0; d <= min(n+m, maxDiffEdits); d++ {
		v := make([]int, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var x int
			switch {
			case d == 0:
				x = 0
			case k == -d || k != d && at(prev, d-1, k-1) < at(prev, d-1, k+1):
				x = at(prev, d-1, k+1) // down: an insertion
			default:
				x = at(prev, d-1, k-1) + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[k+d] = x
			if x >= n && y >= m {
				trace = append(trace, v)
				return backtrack(a, b, trace), true
			}
		}
		trace = append(trace, v)
		prev = v
	}
	return nil, false
}

// at reads v of step d at diagonal k (v covers -d..d).
func at(v []int, d, k int) int { return v[k+d] }

func backtrack(a, b []string, trace [][]int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		k := x - y
		prev := trace[d-1]
		var pk int
		if k == -d || k != d && at(prev, d-1, k-1) < at(prev, d-1, k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(prev, d-1, pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, edit{same, a[x]})
		}
		if x == px {
			y--
			rev = append(rev, edit{add, b[y]})
		} else {
			x--
			rev = append(rev, edit{del, a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{same, a[x]})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// writeUnified writes the script as a unified diff with 3 lines of
// context, and reports whether there was any change.
func writeUnified(w io.Writer, fromName, toName string, script []edit) bool {
	const context = 3
	changed := false
	for _, e := range script {
		if e.kind != same {
			changed = true
			break
		}
	}
	if !changed {
		return false
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", fromName, toName)
	// aLine, bLine: 1-based line numbers at each edit.
	aLine, bLine := make([]int, len(script)+1), make([]int, len(script)+1)
	aLine[0], bLine[0] = 1, 1
	for i, e := range script {
		aLine[i+1], bLine[i+1] = aLine[i], bLine[i]
		if e.kind != add {
			aLine[i+1]++
		}
		if e.kind != del {
			bLine[i+1]++
		}
	}
	for i := 0; i < len(script); {
		if script[i].kind == same {
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for end < len(script) {
			if script[end].kind != same {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run].kind == same {
				run++
			}
			if run == len(script) || run-end > 2*context {
				end = min(end+context, len(script))
				break
			}
			end = run
		}
		aCount, bCount := 0, 0
		for _, e := range script[start:end] {
			if e.kind != add {
				aCount++
			}
			if e.kind != del {
				bCount++
			}
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(aLine[start], aCount), hunkRange(bLine[start], bCount))
		for _, e := range script[start:end] {
			fmt.Fprintf(w, "%c%s\n", e.kind, e.line)
		}
		i = end
	}
	return true
}

// hunkRange is a unified diff's "start,count" (an empty range starts at
// the line before).
func hunkRange(start, count int) string {
	if count == 0 {
		start--
	}
	if count == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
