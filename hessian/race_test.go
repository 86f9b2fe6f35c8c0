//go:build race

package hessian

// raceEnabled: the race detector makes sync.Pool drop items, so allocation
// counts are not stable under it.
const raceEnabled = true
