package security

// dubboAttacks: see index_test.go.
var dubboAttacks = []attack{}
