package grpcwire

// codeNames are the names of gRPC's status codes, 0 to 16.
var codeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// CodeName is the name of gRPC status code c ("UNAVAILABLE"), false for
// a code gRPC does not define.
func CodeName(c int) (string, bool) {
	if c < 0 || c >= len(codeNames) {
		return "", false
	}
	return codeNames[c], true
}
