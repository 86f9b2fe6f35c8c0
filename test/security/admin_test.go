package security

// adminAttacks: see index_test.go.
var adminAttacks = []attack{}
