// Package interop proves the gateway against Apache implementations nobody
// here wrote. It is its own module so that the gateway's module never
// carries their dependencies.
//
//   - The hessian codec against dubbo-go-hessian2 v1.12.5, value by value
//     (interop_test.go) and in benchmarks (bench_test.go).
//   - The Dubbo client (package dubbo) against a real Apache dubbo-go
//     v3.3.0 provider (dubbogoprovider, started as a process by the tests
//     and registered in the ZooKeeper of DUBBOGW_TEST_ZK_ADDR): typed and
//     generic calls, exceptions, deadlines, groups and versions,
//     attachments, multiplexing, the provider's heartbeats, its ZooKeeper
//     nodes (dubbogo_test.go); and against dubbo-go's own generic consumer
//     in benchmarks (dubbogo_bench_test.go).
//   - The gateway (package gateway) against the same provider, found
//     through its ZooKeeper registry: real HTTP requests to HTTP→Dubbo
//     routes, generic and typed (every parameter source, DTO, map, list,
//     long and null results), the generic pass-through and its allow list,
//     exceptions, timeouts, bad arguments, missing providers, and the
//     gateway's /admin/services and consumer nodes (gateway_test.go).
//
// dubbo-go facts the tests meet (and expect): it keys a service's
// methods by name only, so it cannot expose Java overloads; its generic
// results are maps whose keys are Go field names with the first letter
// lowered (ID → iD) and whose lists are untyped, and a time.Time result
// becomes an empty map; it answers a missing service, version, group or
// method with an exception (java.lang.Throwable), not an error status; it
// echoes the request's attachments in its response and appends a stray
// 'N' after every response body; it drops (and logs) a response over its
// getty max-msg-len, 100 KiB by default, so the consumer only meets its
// deadline; it registers application-level only unless told
// "registry-type: all".
package interop
