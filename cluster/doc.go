// Package cluster chooses which Dubbo provider takes a call and what happens
// when the call fails: load-balancing policies compatible with Java Dubbo's
// (random, roundrobin, leastactive, consistenthash) plus power of two
// choices, failover and failfast invocation, and circuit breakers per
// provider address and per route.
//
// It knows nothing of the transport: it works on provider descriptions
// (*Provider, as a registry reports them) and an Invoker that runs one
// attempt against one provider.
package cluster
