// Package security holds the hostile-client tests of docs/SECURITY.md: each
// attack a client can send at the edge, sent for real at a gateway on a
// loopback listener (raw sockets where HTTP parsing matters, a recording
// TCP proxy in front of the demo Dubbo provider for what reaches Dubbo),
// and what must hold. index_test.go lists them; a new finding is one row.
package security
