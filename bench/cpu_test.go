package bench_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc CPU times on every Linux build
// in use.
const clockTicks = 100

// cpuWatch measures, on Linux, the CPU the rest of the machine uses while a
// measurement runs: on a shared machine that is the noise in the figures.
type cpuWatch struct {
	machine, self uint64
	ok            bool
}

func startCPUWatch() cpuWatch {
	machine, self, ok := cpuTicks()
	return cpuWatch{machine: machine, self: self, ok: ok}
}

// othersCores returns the average number of cores busy outside this
// process since the watch started, or -1 when it cannot tell.
func (w cpuWatch) othersCores(elapsed time.Duration) float64 {
	machine, self, ok := cpuTicks()
	if !w.ok || !ok || elapsed <= 0 || machine < w.machine || self < w.self {
		return -1
	}
	others := float64(machine-w.machine) - float64(self-w.self)
	return max(others, 0) / clockTicks / elapsed.Seconds()
}

// cpuTicks returns the busy time of the whole machine (/proc/stat) and of
// this process (/proc/self/stat), in clock ticks.
func cpuTicks() (machine, self uint64, ok bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal ...
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseUint(fields[i], 10, 64)
		if err != nil {
			return 0, 0, false
		}
		machine += n
	}
	own, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...: utime and stime are the 14th and 15th
	// fields, the 12th and 13th after the command name.
	end := bytes.LastIndex(own, []byte(") ")) // the command name may hold ") "
	if end < 0 {
		return 0, 0, false
	}
	fields = strings.Fields(string(own[end+2:]))
	if len(fields) < 13 {
		return 0, 0, false
	}
	for _, i := range []int{11, 12} {
		n, err := strconv.ParseUint(fields[i], 10, 64)
		if err != nil {
			return 0, 0, false
		}
		self += n
	}
	return machine, self, true
}
