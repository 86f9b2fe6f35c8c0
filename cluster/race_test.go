//go:build race

package cluster

// raceEnabled is true under the race detector, which makes sync.Pool drop
// items on purpose: allocation counts mean nothing then.
const raceEnabled = true
