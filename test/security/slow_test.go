package security

// slowClientAttacks: see index_test.go.
var slowClientAttacks = []attack{}
