// Package configsource keeps dubbogw's configuration in ZooKeeper, so that
// a fleet of instances changes together: one node holds the whole YAML
// configuration (zookeeper://[user:password@]host:port[,host:port]/path).
//
// Source is the running gateway's side: it reads the node with a deadline
// and a size bound, watches it (re-reading on every session, so a change
// made while an instance was cut off is picked up), remembers what serves
// and what was refused, and keeps a local cache file of the last accepted
// configuration to start from while ZooKeeper is away. The gateway
// validates each change as it does a file reload and swaps it atomically.
//
// Store is `dubbogw config`'s side: get, push with a compare-and-set on
// the node's version, history kept as sequential child nodes written in
// the same transaction as the node, and rollback.
package configsource
