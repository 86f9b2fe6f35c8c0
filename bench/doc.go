// Package bench measures dubbogw end to end: throughput and latency of the
// Dubbo client alone and of HTTP→HTTP and HTTP→Dubbo routes through an
// in-process gateway, all on 127.0.0.1. The measurements are tests, run with
// DUBBOGW_BENCH=1 (see docs/BENCHMARKS.md); the load generator they use is
// bench/loadgen.
package bench
