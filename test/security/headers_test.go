package security

// headerAttacks: see index_test.go.
var headerAttacks = []attack{}
