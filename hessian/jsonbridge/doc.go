// Package jsonbridge converts between the gateway's JSON and Dubbo's hessian
// arguments and results, on the request path: Encoder writes a JSON request
// body (or a query, path or header string) as hessian values of the declared
// Java parameter types, for typed or generic invocation; AppendJSON writes a
// decoded hessian result as a JSON response body.
//
// Both directions stream: JSON is read into a compact token tape and written
// straight to a hessian.Encoder, and results are appended to a byte slice,
// with no intermediate value tree, no reflection and no encoding/json.
// Every error is a *PathError naming the JSON path it concerns. README.md
// holds the table of Java types and the JSON each accepts.
package jsonbridge
